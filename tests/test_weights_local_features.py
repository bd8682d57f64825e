"""The weighted local tests on random features: KLCE^2_w against a double loop over rows
of the same quantised weighted map (observed and redrawn), the score members' level sums
from the same redraws, frequency weights against the repeated rows, the same bytes on
any executor, and the path in a whole audit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import calaudit
from calaudit import CalibrationData
from calaudit.audit.sections.local import LocalConfig
from calaudit.data.weights import SampleWeights
from calaudit.inference.weighted_skce_features import (
    STREAM,
    exponent_groups,
    group_exponents,
    row_terms,
    weighted_map,
)
from calaudit.local.features import product_features
from calaudit.local.weighted_features import block_counts, klce_values, level_sums
from calaudit.local.weighted_klce import VectorUnits, WeightedUnits, klce2_value
from calaudit.scale import ThreadExecutor, block_rng, using


def case(kind: str, n: int = 40, m: int = 2, seed: int = 3):
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.ones(m) * 2, n)
    y = np.array([rng.choice(m, p=row) for row in proba], dtype=np.int64)
    z = np.column_stack([proba[:, 1] * 2.0, rng.normal(size=n), rng.integers(0, 3, n)])
    if kind == "design":
        weights = SampleWeights(rng.uniform(0.2, 3.0, n), "design")
    elif kind == "frequency":
        weights = SampleWeights(rng.integers(0, 4, n).astype(float), "frequency")
    elif kind == "sampled_frequency":
        weights = SampleWeights(1.0 + rng.poisson(1.0, n), "frequency",
                                negative_rate=np.full(n, 0.1))
    else:
        weights = SampleWeights(np.ones(n), "design", negative_rate=rng.uniform(0.1, 1, n))
    return y, proba, z, weights


def feature_kernel_map(features, z, proba, weights):
    """``phi~_i = Psi_i / alpha_i`` from its definition (``alpha_i phi_i`` on the grid
    ``2^(e_i - s)`` of its exponent group)."""
    alpha = row_terms(proba, weights)[0]
    safe = np.where(alpha > 0, alpha, 1.0)
    e = group_exponents(safe, int(exponent_groups(alpha)[0]))
    psi = weighted_map(features, z, safe, e).astype(np.float64)
    return psi * np.ldexp(1.0, e - features.grid)[:, None] / safe[:, None]


def loop_klce(phi, counts, proba, weights):
    """KLCE^2_w of unit counts (n, m) by the exact path's formula with the feature kernel
    ``k_ij = phi~_i . phi~_j``: the forms ``sum_{i != j} k_ij R_i R_j`` by a double loop."""
    n, m = proba.shape
    k = np.array([[float(phi[i] @ phi[j]) for j in range(n)] for i in range(n)])
    if m == 2:
        units, events = WeightedUnits.of(weights, proba[:, 1]), counts[:, 1:2]
    else:
        units, events = VectorUnits.of(weights, proba), counts[:, :, None]
    r = units.residuals(events)
    forms = sum(k[i, j] * float(np.sum(r[i] * r[j])) for i in range(n) for j in range(n)
                if i != j)
    return float(klce2_value(np.array([forms]), units.sums(events, r, np.diag(k)))[0])


def drawn_counts(y, proba, weights, seed, q):
    """(1 + q, n, m) unit counts of the observed labels and the redraws, back in row order,
    from :func:`block_counts` (one block)."""
    alpha, law, units, _ = row_terms(proba, weights)
    rows, residual, factor = block_counts(y, proba, weights, int(exponent_groups(alpha)[0]),
                                          block_rng(seed, STREAM, 0), q)
    out = np.zeros((1 + q, y.size, proba.shape[1]))
    counts = residual / factor[:, None, None] + (units[rows, None] * law[rows])[:, :, None]
    out[:, rows] = np.rint(counts).transpose(2, 0, 1)
    return out


@pytest.mark.parametrize("kind, m", [("design", 2), ("frequency", 2), ("negative_rate", 2),
                                     ("sampled_frequency", 2), ("frequency", 3)])
def test_the_feature_klce_is_the_double_loop_of_the_weighted_map(kind, m) -> None:
    """Observed and redrawn columns: the exact path's KLCE^2_w with the feature kernel,
    the redrawn counts being those :func:`block_counts` draws again for the score
    members."""
    y, proba, z, weights = case(kind, m=m)
    features = product_features(z, 64, 5)
    values = klce_values(features, z, y, proba, weights, seed=7, n_resamples=3)
    phi = feature_kernel_map(features, z, proba, weights)
    counts = drawn_counts(y, proba, weights, 7, 3)
    t = weights.unit_split()[0]
    assert np.array_equal(counts[0][np.arange(y.size), y], t)
    for b in range(4):
        assert np.allclose(counts[b].sum(axis=1), t)
        want = loop_klce(phi, counts[b], proba, weights)
        assert abs(values[b] / want - 1) < 1e-9, (b, values[b], want)
    assert np.ptp(values[1:]) > 0


@pytest.mark.parametrize("kind, m", [("sampled_frequency", 2), ("design", 3)])
def test_the_level_sums_are_the_weighted_residual_sums_of_the_same_draws(kind, m) -> None:
    y, proba, z, weights = case(kind, n=60, m=m)
    codes = np.column_stack([np.arange(60) % 3, 3 + np.arange(60) % 2]).astype(np.int32)
    top = np.argmax(proba, axis=1) if m > 2 else None
    found = level_sums(y, proba, weights, codes, 5, 11, 4, top)
    counts = drawn_counts(y, proba, weights, 11, 4)
    alpha, law, units, _ = row_terms(proba, weights)
    for b in range(5):
        r = alpha[:, None] * (counts[b] - units[:, None] * law)
        for level in range(5):
            at = (codes == level).any(axis=1)
            want = r[at, 1].sum() if m == 2 else r[at].sum(axis=0)
            assert np.allclose(found["sums"][level, ..., b], want, rtol=1e-12, atol=1e-9)
            if top is not None:
                assert np.isclose(found["top"][level, b], r[at, top[at]].sum())


def test_frequency_weights_are_the_repeated_rows_klce() -> None:
    y, proba, z, weights = case("frequency")
    rows = np.repeat(np.arange(y.size), weights.design.astype(np.int64))
    features = product_features(z, 128, 9)
    ones = SampleWeights(np.ones(rows.size), "frequency")
    assert np.allclose(klce_values(features, z, y, proba, weights),
                       klce_values(features, z[rows], y[rows], proba[rows], ones),
                       rtol=1e-12, atol=0)


def _pass_bytes(executor=None) -> bytes:
    """KLCE^2_w and the level sums of 70,000 rows (two tasks, several blocks)."""
    rng = np.random.default_rng(5)
    n = 70_000
    p = rng.uniform(0.02, 0.98, n)
    proba = np.column_stack([1 - p, p])
    y = (rng.random(n) < p).astype(np.int64)
    z = np.column_stack([p, rng.normal(size=n)])
    weights = SampleWeights(1.0 + rng.poisson(1.0, n), "frequency",
                            negative_rate=np.full(n, 0.1))
    codes = np.column_stack([rng.integers(0, 4, n)]).astype(np.int32)
    features = product_features(z, 32, 3)

    def run() -> bytes:
        values = klce_values(features, z, y, proba, weights, 8, 5)
        return values.tobytes() + level_sums(y, proba, weights, codes, 4, 8, 5)["sums"].tobytes()

    if executor is None:
        return run()
    with using(executor):
        return run()


@pytest.fixture(scope="module")
def serial_bytes() -> bytes:
    return _pass_bytes()


@pytest.mark.parametrize("threads", [2, 3])
def test_the_weighted_local_pass_gives_the_same_bytes_on_any_threads(serial_bytes, threads):
    assert _pass_bytes(ThreadExecutor(threads)) == serial_bytes


def test_the_weighted_local_pass_on_dask_gives_the_serial_bytes(one_worker, serial_bytes):
    from calaudit.scale import DaskExecutor

    assert _pass_bytes(DaskExecutor(one_worker)) == serial_bytes


def test_auto_sends_a_weighted_audit_over_budget_to_the_features() -> None:
    rng = np.random.default_rng(2)
    n = 1500
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.random(n) < p).astype(np.int64)
    frame = pd.DataFrame({"age": rng.normal(50, 10, n), "race": rng.choice(list("abcd"), n)})
    data = CalibrationData.from_arrays(y, p, sample_weight=1 + rng.poisson(1.0, n),
                                       covariates=frame)
    config = calaudit.AuditConfig(n_resamples=19, exact_budget_seconds=0.01, n_features=128,
                                  local=LocalConfig(n_resamples=49, diagnostics=False))
    result = calaudit.run_audit(data, config).to_dict()
    tests = {t["id"]: t for t in result["tests"]}
    local = tests["local_consistency"]
    computation = local["params"]["computation"]
    assert computation["method"] == "features" and computation["n_features"] == 128
    assert "exact_budget_seconds" in computation["reason"]
    approximation = computation["approximation"]
    assert approximation["subsample_rows"] == 1500
    assert abs(approximation["difference"]) < 0.5 * abs(approximation["exact"]) + 1e-4
    assert local["status"] in ("PASS", "FAIL") and 0 < local["p_value"] <= 1
    assert local["params"]["klce2"] == result["local"]["klce"]["statistic"]


def test_the_weighted_feature_lcb_sums_are_the_repeated_rows_sums() -> None:
    """Frequency weights: ``(K (w r), K w)`` on the features is the repeated rows'
    ``(K r, K 1)`` with the same features and cells (float32 GEMMs: to 1e-5)."""
    from calaudit.local.lcb_cells import CellKernel
    from calaudit.local.lcb_features import feature_kernel_sums, feature_row_products

    rng = np.random.default_rng(4)
    n = 300
    z, cells = rng.normal(size=(n, 2)), rng.integers(0, 3, n).astype(np.int16)
    matrix = np.where(np.eye(3) > 0, 1.0, 0.2)
    r, w = rng.normal(size=n), rng.integers(0, 4, n).astype(float)
    rows = np.repeat(np.arange(n), w.astype(np.int64))
    weighted, mass = feature_kernel_sums(CellKernel(z, cells, matrix), r, 256, 3, w)
    plain, ones = feature_kernel_sums(CellKernel(z[rows], cells[rows], matrix), r[rows], 256, 3)
    first = np.searchsorted(rows, np.arange(n))[w > 0]
    assert np.allclose(weighted[w > 0], plain[first], rtol=0, atol=1e-4 * np.abs(plain).max())
    kept = ones[first] > 1.0  # above the floors (a tenth of the mean row weight)
    assert np.allclose(mass[w > 0][kept], ones[first][kept], rtol=1e-5, atol=1e-4)
    at = np.flatnonzero(w > 0)[:20]
    se = feature_row_products(CellKernel(z, cells, matrix), at, r, mass, np.zeros((n, 0)),
                              256, 3, meat=w).se
    want = feature_row_products(CellKernel(z[rows], cells[rows], matrix), first[:20],
                                r[rows], ones, np.zeros((rows.size, 0)), 256, 3).se
    assert np.allclose(se, want, rtol=1e-4)


def test_a_weighted_multiclass_audit_on_features_tests_every_class() -> None:
    rng = np.random.default_rng(6)
    n = 600
    proba = rng.dirichlet(np.ones(3) * 2, n)
    y = np.array([rng.choice(3, p=row) for row in proba], dtype=np.int64)
    data = CalibrationData.from_arrays(y, proba, sample_weight=rng.integers(1, 4, n),
                                       covariates={"age": rng.normal(50, 10, n)})
    config = calaudit.AuditConfig(n_resamples=19, method="features", n_features=64,
                                  local=LocalConfig(n_resamples=19, diagnostics=False))
    result = calaudit.run_audit(data, config).to_dict()
    local = {t["id"]: t for t in result["tests"]}["local_consistency"]
    assert local["params"]["computation"]["method"] == "features"
    views = result["local"]["klce"]["per_class"]
    assert len(views) == 3 and all(0 < v["p_value"] <= 1 for v in views)
