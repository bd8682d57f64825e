"""The weighted SKCE on random features: against a double loop over rows with the
feature kernel, frequency weights against the repeated rows, convergence to the exact
weighted statistic, and the path in a whole audit."""

from __future__ import annotations

import numpy as np
import pytest

import calaudit
from calaudit import CalibrationData
from calaudit.data.weights import SampleWeights
from calaudit.inference.weighted_skce_features import (
    STREAM,
    exponent_groups,
    feature_map,
    feature_values,
    group_exponents,
    row_terms,
    weighted_map,
)
from calaudit.inference.weighted_skce_test import null_law, weighted_skce_values
from calaudit.metrics.skce import KernelChoice
from calaudit.numerics.block_draws import binomial_counts_into, categorical_counts
from calaudit.scale import block_rng

CHOICE = KernelChoice("exponential", 0.3, "option")


def case(kind: str, n: int = 50, m: int = 2, seed: int = 3):
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.ones(m), n)
    y = np.array([rng.choice(m, p=row) for row in proba], dtype=np.int64)
    if kind == "design":
        weights = SampleWeights(rng.uniform(0.2, 3.0, n), "design")
    elif kind == "wide_design":  # weights over 40 binary orders of magnitude
        weights = SampleWeights(2.0 ** rng.uniform(-40, 0, n), "design")
    elif kind == "frequency":
        weights = SampleWeights(rng.integers(0, 4, n).astype(float), "frequency")
    elif kind == "large_frequency":  # rows of more units than a float32 GEMM or count holds
        weights = SampleWeights(np.r_[3e7, 9000.0, rng.integers(1, 4, n - 2)], "frequency")
    elif kind == "sampled_frequency":
        weights = SampleWeights(rng.integers(1, 4, n).astype(float), "frequency",
                                negative_rate=np.full(n, 0.25))
    else:
        weights = SampleWeights(np.ones(n), "design", negative_rate=rng.uniform(0.1, 1, n))
    return y, proba, weights


def unit_weight(weights, m):
    """(units t, unit weights w (n, m)) written out: a row of t units of weight w_y each
    (frequency: t = d, else one unit of weight d; negatives weigh 1 / r more)."""
    n = weights.design.size
    frequency = weights.kind == "frequency"
    t = weights.design if frequency else np.ones(n)
    w = np.repeat((np.ones(n) if frequency else weights.design)[:, None], m, axis=1)
    if weights.negative_rate is not None:
        w[:, 0] /= weights.negative_rate
    return t, w


def reference_map(features, x, proba, weights):
    """``phi~_i = Psi_i / alpha_i`` of the weighted map, from its definition: ``alpha_i
    phi_i`` on the grid ``2^(e_i - s)`` of its exponent group."""
    alpha = row_terms(proba, weights)[0]
    safe = np.where(alpha > 0, alpha, 1.0)
    e = group_exponents(safe, int(exponent_groups(alpha)[0]))
    grid = np.ldexp(1.0, e - features.grid)
    phi = features.quantised(x).astype(np.float64)
    psi = np.rint((phi * 2.0 ** features.grid).astype(np.float32)
                  * (safe / 2.0 ** e).astype(np.float32)[:, None])
    assert np.array_equal(psi, weighted_map(features, x, safe, e))
    return psi * grid[:, None] / safe[:, None]


def loop_reference(phi, counts, proba, w):
    """SKCE_b and SKCE_uq by a double loop over rows with k_ij = phi_i . phi_j for unit
    counts ``counts`` (n, m): row i holds counts[i, k] units of label k, each weighing
    w[i, k]."""
    n, m = proba.shape
    r = [sum(counts[i, k] * w[i, k] * (np.eye(m)[k] - proba[i]) for k in range(m))
         for i in range(n)]
    total = float(np.sum(counts * w))
    squares = float(np.sum(counts * w * w))
    full = own = 0.0
    for i in range(n):
        for k in range(m):
            gap = np.eye(m)[k] - proba[i]
            own += counts[i, k] * w[i, k] ** 2 * float(phi[i] @ phi[i]) * float(gap @ gap)
        for j in range(n):
            full += float(phi[i] @ phi[j]) * float(r[i] @ r[j])
    return full / total ** 2, (full - own) / (total ** 2 - squares)


def observed(y, t, m):
    counts = np.zeros((y.size, m))
    counts[np.arange(y.size), y] = t
    return counts


@pytest.mark.parametrize("kind, m", [("design", 2), ("frequency", 2), ("negative_rate", 2),
                                     ("sampled_frequency", 2), ("wide_design", 2),
                                     ("design", 3), ("frequency", 4)])
def test_the_feature_statistic_is_the_double_loop_of_the_feature_kernel(kind, m) -> None:
    y, proba, weights = case(kind, m=m)
    features, x = feature_map(CHOICE, proba, 64, 5)
    biased, unbiased = feature_values(features, x, y, proba, weights)
    t, w = unit_weight(weights, m)
    want = loop_reference(reference_map(features, x, proba, weights), observed(y, t, m),
                          proba, w)
    assert abs(biased[0] / want[0] - 1) < 1e-9 and abs(unbiased[0] / want[1] - 1) < 1e-9
    assert abs(unbiased[0]) > 1e-6 * abs(biased[0])


def redrawn(y, proba, weights, seed, q):
    """The counts the test draws (one block: its rows of positive weight sorted by
    exponent group and units), back in row order: (q, n, m)."""
    alpha, law, units, _ = row_terms(proba, weights)
    kept = np.flatnonzero(alpha > 0)
    e = group_exponents(alpha[kept], int(exponent_groups(alpha)[0]))
    rows = kept[np.lexsort((units[kept], e))]
    rng, t = block_rng(seed, STREAM, 0), units[rows].astype(np.int64)
    m = proba.shape[1]
    out = np.zeros((q, y.size, m))
    if m == 2:
        drawn = np.empty((rows.size, q))
        binomial_counts_into(rng, t, null_law(weights, proba)[rows, 1], drawn)
        out[:, rows, 1] = drawn.T
        out[:, rows, 0] = t - drawn.T
    else:
        for k, counts in enumerate(categorical_counts(rng, t, law[rows], q)):
            out[:, rows, k] = np.asarray(counts, dtype=np.float64).T
    return out


@pytest.mark.parametrize("kind, m", [("sampled_frequency", 2), ("negative_rate", 2),
                                     ("large_frequency", 2), ("frequency", 3)])
def test_every_redrawn_column_is_the_double_loop_of_its_counts(kind, m) -> None:
    """The redraws go through the same sums as the observed labels (the slopes of U, A
    and S2 included), and their counts follow the null law."""
    y, proba, weights = case(kind, n=30, m=m)
    features, x = feature_map(CHOICE, proba, 32, 2)
    biased, unbiased = feature_values(features, x, y, proba, weights, seed=7, n_resamples=4)
    phi, (t, w) = reference_map(features, x, proba, weights), unit_weight(weights, m)
    for b, counts in enumerate(redrawn(y, proba, weights, 7, 4)):
        assert np.allclose(counts.sum(axis=1), t)
        want = loop_reference(phi, counts, proba, w)
        assert abs(biased[b + 1] / want[0] - 1) < 1e-9, (b, biased[b + 1], want)
        assert abs(unbiased[b + 1] / want[1] - 1) < 1e-9, (b, unbiased[b + 1], want)
    assert np.ptp(unbiased[1:]) > 0


def test_frequency_weights_are_the_repeated_rows_statistic() -> None:
    """Whole units of weight 1 keep the quantised map as it is: the statistic equals the
    repeated rows' with the same features."""
    y, proba, weights = case("frequency", n=40)
    rows = np.repeat(np.arange(y.size), weights.design.astype(np.int64))
    features, x = feature_map(CHOICE, proba, 128, 9)
    ones = SampleWeights(np.ones(rows.size), "frequency")
    assert np.allclose(feature_values(features, x, y, proba, weights),
                       feature_values(features, x[rows], y[rows], proba[rows], ones),
                       rtol=1e-12, atol=0)


@pytest.mark.parametrize("scale", [2.0 ** 300, 2.0 ** -300])
def test_design_weights_of_any_scale_give_the_same_statistics(scale) -> None:
    """Weights whose squares leave float32's range are scaled by a power of two first
    (``SampleWeights.in_grid_range``): the statistics and every redrawn column equal those
    of the same weights near 1, and no value is lost to overflow."""
    y, proba, weights = case("design", n=60, m=3)
    features, x = feature_map(CHOICE, proba, 64, 5)
    huge = SampleWeights(weights.design * scale, "design")
    with np.errstate(all="raise"):
        found = feature_values(features, x, y, proba, huge, seed=2, n_resamples=5)
    expected = feature_values(features, x, y, proba, weights, seed=2, n_resamples=5)
    for mine, theirs in zip(found, expected, strict=True):
        assert np.all(np.isfinite(mine))
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=0)


def test_the_feature_statistic_approaches_the_exact_weighted_one() -> None:
    y, proba, weights = case("design", n=300, seed=8)
    exact = weighted_skce_values(CHOICE.kernel.on(proba), y, proba, weights)
    errors = []
    for d in (64, 1024, 16384):
        values = [feature_values(*feature_map(CHOICE, proba, d, seed), y, proba, weights)
                  for seed in range(3)]
        errors.append(np.mean([abs(v[1][0] - exact[1]) for v in values]))
    assert errors[2] < errors[1] < errors[0], errors
    assert errors[2] < 0.1 * abs(exact[1]), (errors, exact)


def test_a_weighted_audit_above_the_exact_rows_runs_the_feature_path() -> None:
    from calaudit.audit.sections.global_tests import SkceConfig
    from calaudit.metrics.skce import MAX_MEDIAN_ROWS

    rng = np.random.default_rng(13)
    n = MAX_MEDIAN_ROWS + 10
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.random(n) < p).astype(np.int64)
    data = CalibrationData.from_arrays(y, p, sample_weight=rng.integers(1, 3, n))
    config = calaudit.AuditConfig(n_resamples=49, n_features=128,
                                  skce=SkceConfig(bandwidth=None))
    result = calaudit.run_audit(data, config).to_dict()
    metrics = {m["id"]: m for m in result["metrics"]}
    tests = {t["id"]: t for t in result["tests"]}
    params = metrics["skce_uq"]["params"]
    assert params["computation"]["method"] == "features"
    assert params["bandwidth_source"].endswith("_subsample")
    assert tests["skce_consistency"]["status"] in ("PASS", "FAIL")
    assert tests["skce_consistency"]["statistic"] == metrics["skce_uq"]["value"]
    assert tests["skce_uq_asymptotic"]["status"] == "SKIPPED"
    assert {item["id"] for item in result["data"]["weights"]["not_weighted"]} == {
        "skce_ul, skce_block"}
    assert params["computation"]["n_features"] == 128


def test_the_sums_are_the_same_bytes_on_every_executor_and_task_layout(one_worker,
                                                                        monkeypatch) -> None:
    """Exact sums per exponent group: serial, threads, Dask and a different grouping of
    the blocks into tasks give the same bytes (weights over 40 orders of magnitude,
    negatives kept at 0.3; frequency weights with blocks of more units than one float32
    GEMM takes)."""
    from calaudit import scale
    from calaudit.inference import weighted_skce_features as module

    rng = np.random.default_rng(21)
    n = scale.TASK_ROWS + 2 * scale.ROW_BLOCK + 700
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.random(n) < p).astype(np.int64)
    proba = np.column_stack([1 - p, p])
    cases = [SampleWeights(2.0 ** rng.uniform(-40, 0, n), "design",
                           negative_rate=np.full(n, 0.3)),
             SampleWeights(1.0 + rng.poisson(1.5, n), "frequency")]
    features, x = feature_map(CHOICE, proba, 32, 4)

    def run(executor):
        with scale.using(executor):
            return [np.stack(feature_values(features, x, y, proba, w, seed=3, n_resamples=5)
                             ).tobytes() for w in cases]

    serial = run(scale.SerialExecutor())
    assert run(scale.ThreadExecutor(2)) == serial
    assert run(scale.DaskExecutor(one_worker)) == serial
    monkeypatch.setattr(module, "task_ranges",
                        lambda size: scale.task_ranges(size, 3 * scale.ROW_BLOCK))
    assert run(scale.SerialExecutor()) == serial


def test_the_count_draws_follow_their_laws() -> None:
    """Binomial counts by thresholds (and numpy's above THRESHOLD_UNITS units): means
    and variances within 5 standard errors; one unit per row gives the unweighted path's
    label draws; multinomial counts sum to the units and have the right means."""
    from calaudit.numerics.block_draws import (
        THRESHOLD_UNITS,
        binary_labels_into,
        label_thresholds,
    )

    t = np.array([0, 1, 1, 2, 3, 3, 7, THRESHOLD_UNITS + 5])
    q = np.array([0.5, 0.3, 1.0, 0.02, 0.5, 0.9, 0.4, 0.25])
    draws = 40_000
    out = np.empty((t.size, draws), dtype=np.float32)
    binomial_counts_into(np.random.default_rng(1), t, q, out)
    mean, var = t * q, t * q * (1 - q)
    assert np.all(np.abs(out.mean(axis=1) - mean) <= 5 * np.sqrt(var / draws) + 1e-9)
    fourth = var * (1 + (3 * t - 6) * q * (1 - q))  # central fourth moment
    se = np.sqrt(np.maximum(fourth - var ** 2, 0) / draws)
    assert np.all(np.abs(out.var(axis=1) - var) <= 5 * se + 1e-3)
    ones, labels = np.ones(300, dtype=np.int64), np.empty((300, 9), dtype=np.float32)
    p, counts = np.random.default_rng(2).random(300), labels.copy()
    binomial_counts_into(np.random.default_rng(3), ones, p, counts)
    binary_labels_into(np.random.default_rng(3), label_thresholds(p), labels)
    assert np.array_equal(counts, labels)
    law = np.array([[0.2, 0.5, 0.3], [0.0, 0.0, 1.0], [0.6, 0.4, 0.0]])
    units = np.array([4, 2, 9])
    drawn = [np.asarray(c, dtype=np.float64)
             for c in categorical_counts(np.random.default_rng(4), units, law, draws)]
    assert np.array_equal(sum(drawn), np.repeat(units[:, None], draws, axis=1))
    means = np.stack([c.mean(axis=1) for c in drawn], axis=1)
    assert np.all(np.abs(means - units[:, None] * law)
                  <= 5 * np.sqrt(units[:, None] * law * (1 - law) / draws) + 1e-9)
