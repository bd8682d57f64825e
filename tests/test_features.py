"""Random Fourier features: the feature kernel, its U-statistic and the resampled nulls
against dense references built by explicit loops; the Poisson-binomial cell draws; the
chunked bootstrap counts; the exact/features choice and its JSON record."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calaudit import scale
from calaudit.audit.config import AuditConfig
from calaudit.audit.runner import run_audit
from calaudit.data.dataset import CalibrationData
from calaudit.inference.feature_passes import psi_exponent
from calaudit.inference.feature_tests import (
    feature_consistency_test,
    feature_skce_pass,
    feature_statistic,
)
from calaudit.inference.method import choose_method
from calaudit.local.features import feature_local_pass
from calaudit.local.poisson_binomial import poisson_binomial_pmf
from calaudit.numerics import poisson_binomial as pb
from calaudit.numerics.block_draws import (
    LABEL_ROWS,
    binary_labels_into,
    block_counts,
    block_totals,
    label_indicators,
    label_thresholds,
)
from calaudit.numerics.features import (
    FourierFeatures,
    default_n_features,
    exact_parts,
    exact_products,
    to_grid,
)
from calaudit.numerics.kernels import StationaryKernel
from calaudit.scale import (
    ROW_BLOCK,
    SerialExecutor,
    ThreadExecutor,
    block_rng,
    blocks,
    fold,
    n_blocks,
    stream_seed,
)


def phi_loops(features: FourierFeatures, x):
    """The feature map by loops: sqrt(2/D) [cos(w_j . x), sin(w_j . x)]."""
    w = features.frequencies
    half = w.shape[1]
    out = []
    for row in np.atleast_2d(x):
        angles = [sum(row[d] * w[d, j] for d in range(w.shape[0])) for j in range(half)]
        out.append([math.cos(a) / math.sqrt(half) for a in angles]
                   + [math.sin(a) / math.sqrt(half) for a in angles])
    return np.array(out)


def u_statistic_loops(kernel, r):
    """(n (n - 1))^-1 sum_{i != j} K_ij <r_i, r_j> by a double loop."""
    n = len(r)
    total = 0.0
    for i in range(n):
        for j in range(n):
            if i != j:
                total += kernel[i, j] * float(np.dot(np.atleast_1d(r[i]), np.atleast_1d(r[j])))
    return total / (n * (n - 1))


@pytest.mark.parametrize("distance", ["sqeuclidean", "l1", "tv"])
def test_feature_kernel_converges_to_the_exact_kernel(distance):
    rng = np.random.default_rng(1)
    x = rng.dirichlet(np.ones(3), 25)
    target = StationaryKernel(1.3, distance).evaluate(x, x)
    errors = []
    for d in (64, 1024, 16384):
        features = FourierFeatures.draw(distance, 1.3, 3, d, 7, dtype=np.float64)
        errors.append(np.sqrt(np.mean((features.kernel_matrix(x, x) - target) ** 2)))
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.02  # about 1 / sqrt(D) per pair


def test_feature_map_matches_loops_and_has_unit_norm():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(6, 2))
    features = FourierFeatures.draw("sqeuclidean", 0.7, 2, 10, 3, dtype=np.float64)
    np.testing.assert_allclose(features.transform(x), phi_loops(features, x), atol=1e-13)
    np.testing.assert_allclose(np.sum(features.transform(x) ** 2, axis=1), 1.0, atol=1e-13)
    again = FourierFeatures.draw("sqeuclidean", 0.7, 2, 10, 3, dtype=np.float64)
    np.testing.assert_array_equal(again.frequencies, features.frequencies)


@pytest.mark.parametrize("classes", [1, 3])
def test_feature_statistic_matches_dense_loops(classes):
    rng = np.random.default_rng(4)
    n = 40
    x = rng.normal(size=(n, 2))
    r = rng.normal(size=n) if classes == 1 else rng.normal(size=(n, classes))
    features = FourierFeatures.draw("sqeuclidean", 0.5, 2, 16, 9, dtype=np.float64)
    phi = phi_loops(features, x)
    expected = u_statistic_loops(phi @ phi.T, r)
    assert feature_statistic(features, x, r, entries=200) == pytest.approx(expected,
                                                                            rel=1e-11)


def test_single_precision_map_is_the_rounded_double_map_and_statistics_use_its_norms():
    rng = np.random.default_rng(11)
    x = rng.normal(size=(60, 2))
    r = rng.normal(size=(60, 3))
    double = FourierFeatures.draw("sqeuclidean", 0.5, 2, 64, 5, dtype=np.float64)
    single = FourierFeatures.draw("sqeuclidean", 0.5, 2, 64, 5)
    phi = single.transform(x)
    assert phi.dtype == np.float32
    np.testing.assert_allclose(phi, double.transform(x), atol=1e-6)
    kernel = phi.astype(np.float64) @ phi.astype(np.float64).T
    assert feature_statistic(single, x, r) == pytest.approx(u_statistic_loops(kernel, r),
                                                            rel=1e-11)
    assert feature_statistic(single, x, r) == pytest.approx(
        feature_statistic(double, x, r), rel=1e-5)


def block_labels(seed, stream, proba, b):
    """The label redraws of every row, block by block from the row-block streams (the
    reference regenerates them independently of the pass)."""
    thresholds = label_thresholds(proba)
    classes = 1 if proba.ndim == 1 else proba.shape[1]
    out = []
    for block, lo, hi in blocks(0, proba.shape[0]):
        out.append(labels_of(label_indicators(block_rng(seed, stream, block),
                                              thresholds[lo:hi], b, classes)))
    return np.vstack(out)


def labels_of(indicators):
    """Class labels from :func:`label_indicators`."""
    if len(indicators) == 1:
        return indicators[0].astype(np.intp)
    labels = np.zeros(indicators[0].shape, dtype=np.intp)
    for k, ind in enumerate(indicators):
        labels[ind] = k
    return labels


def redrawn_residuals(labels, proba):
    if proba.ndim == 1:
        return labels - proba
    out = -proba.copy()
    out[np.arange(proba.shape[0]), labels] += 1.0
    return out


def label_case(rng, n, classes):
    if classes == 1:
        proba = rng.uniform(0.1, 0.9, n)
        return proba, (rng.random(n) < proba).astype(float) - proba
    proba = rng.dirichlet(np.ones(classes), n)
    r = -proba.copy()
    r[np.arange(n), rng.integers(0, classes, n)] += 1.0
    return proba, r


@pytest.mark.parametrize("classes", [1, 3])
def test_consistency_null_matches_dense_loops_with_the_same_block_draws(classes):
    rng = np.random.default_rng(5)
    n, b = 30, 12
    x = rng.normal(size=(n, 2))
    proba, r = label_case(rng, n, classes)
    features = FourierFeatures.draw("sqeuclidean", 0.5, 2, 8, 1, dtype=np.float64)
    result = feature_consistency_test(features, x, r, proba, np.random.default_rng(8), b)
    phi = features.quantised(x).astype(np.float64)
    step = 2.0 ** -features.grid
    assert np.max(np.abs(phi - phi_loops(features, x))) <= step / 2 + 1e-12
    kernel = phi @ phi.T
    labels = block_labels(stream_seed(np.random.default_rng(8)), "consistency", proba, b)
    null = [u_statistic_loops(kernel, redrawn_residuals(labels[:, j], proba))
            for j in range(b)]
    np.testing.assert_allclose(result.null_distribution, null, rtol=1e-9, atol=1e-15)
    assert result.statistic == pytest.approx(u_statistic_loops(kernel, r), rel=1e-9)
    expected_p = (1 + np.sum(np.array(null) >= result.statistic - 1e-15)) / (1 + b)
    assert result.p_value == pytest.approx(expected_p)


def dense_u(kernel, r):
    """``sum_{i != j} k_ij <r_i, r_j>`` over the whole kernel matrix (the quadratic forms
    ``r_c' K r_c``: no second n x n matrix)."""
    rr = r.reshape(r.shape[0], -1)
    return (np.sum(rr * (kernel @ rr)) - np.sum(np.diag(kernel) * np.sum(rr * rr, axis=1)))


@pytest.mark.parametrize("classes", [1, 3])
def test_consistency_pass_over_several_blocks_matches_dense_reference(classes):
    rng = np.random.default_rng(15)
    n, b = 2 * ROW_BLOCK + 300, 5
    x = rng.normal(size=(n, 2))
    proba, r = label_case(rng, n, classes)
    features = FourierFeatures.draw("sqeuclidean", 0.5, 2, 16, 3)
    result = feature_consistency_test(features, x, r, proba, np.random.default_rng(2), b,
                                      task_rows=ROW_BLOCK)
    phi = features.quantised(x).astype(np.float64)
    kernel = phi @ phi.T
    labels = block_labels(stream_seed(np.random.default_rng(2)), "consistency", proba, b)
    null = [dense_u(kernel, redrawn_residuals(labels[:, j], proba)) / (n * (n - 1))
            for j in range(b)]
    np.testing.assert_allclose(result.null_distribution, null, rtol=1e-8)
    assert result.statistic == pytest.approx(dense_u(kernel, r) / (n * (n - 1)), rel=1e-8)


class ReversedExecutor:
    """Computes the partials last range first (as a distributed executor might), then
    folds them in range order."""

    def map_sum(self, partial, ranges, shared):
        parts = [partial(a, b, **shared) for a, b in reversed(ranges)][::-1]
        return fold(parts)


@pytest.mark.parametrize("classes", [1, 3])
def test_feature_passes_do_not_depend_on_task_grouping(classes):
    """The SKCE pass (terms, consistency null, bootstrap forms) and the local pass are
    byte-identical for tasks of 1, 2 or 16 blocks and whoever computes the partials."""
    rng = np.random.default_rng(21)
    n, b = 3 * ROW_BLOCK + 57, 6
    x = rng.normal(size=(n, 2))
    proba, r = label_case(rng, n, classes)
    features = FourierFeatures.draw("tv", 2.0, 2, 32, 4)
    runs = []
    serial = SerialExecutor()
    for rows, executor in ((ROW_BLOCK, serial), (2 * ROW_BLOCK, serial), (16 * ROW_BLOCK, serial),
                           (ROW_BLOCK, ReversedExecutor()), (ROW_BLOCK, ThreadExecutor(2)),
                           (2 * ROW_BLOCK, ThreadExecutor(3))):
        with scale.using(executor):
            out = feature_skce_pass(features, x, r, proba, np.random.default_rng(1), b,
                                    np.random.default_rng(2), b, task_rows=rows)
        runs.append((out.terms.total, out.terms.diagonal[0],
                     out.consistency.null_distribution.tobytes(),
                     *(getattr(out.forms, f).tobytes()
                       for f in ("quadratic", "diagonal", "linear", "squared", "ties"))))
    assert all(run == runs[0] for run in runs[1:])
    if classes == 1:
        z = rng.normal(size=(n, 2))
        local = []
        for rows, executor in ((ROW_BLOCK, serial), (16 * ROW_BLOCK, serial),
                               (ROW_BLOCK, ThreadExecutor(2))):
            with scale.using(executor):
                local.append(feature_local_pass(features, z, r, proba, "klce_consistency",
                                                np.random.default_rng(3), b, task_rows=rows))
        for other in local[1:]:
            assert local[0].statistic == other.statistic
            assert np.array_equal(local[0].test.null_distribution,
                                  other.test.null_distribution)


def test_skce_pass_forms_match_dense_count_forms():
    rng = np.random.default_rng(6)
    n, b, m = ROW_BLOCK + 25, 9, 3
    x = rng.dirichlet(np.ones(m), n)
    r = -x.copy()
    r[np.arange(n), rng.integers(0, m, n)] += 1.0
    features = FourierFeatures.draw("tv", 2.0, m, 12, 4)
    out = feature_skce_pass(features, x, r, x, np.random.default_rng(1), b,
                            np.random.default_rng(2), b)
    phi = features.quantised(x).astype(np.float64)
    h = (phi @ phi.T) * (r @ r.T)
    assert out.terms.biased == pytest.approx(h.sum() / n ** 2, rel=1e-9)
    assert out.terms.unbiased == pytest.approx(dense_u(phi @ phi.T, r) / (n * (n - 1)),
                                               rel=1e-9)
    # the bootstrap's kernel: psi_ik = phi_i r_ik rounded to its grid
    seed = stream_seed(np.random.default_rng(2))
    grid = psi_exponent(features, r)
    psi = np.stack([to_grid(phi * r[:, k:k + 1], grid).astype(np.float64)
                    for k in range(m)])
    hb = np.einsum("kid,kjd->ij", psi, psi)
    assert out.boot_terms.total == pytest.approx(hb.sum(), rel=1e-12)
    assert np.max(np.abs(hb - h)) < 1e-3
    totals = block_totals(seed, "skce_bootstrap", n, b)
    counts = np.vstack([block_counts(block_rng(seed, "skce_bootstrap", k), hi - lo,
                                     totals[k]).T for k, lo, hi in blocks(0, n)])
    assert np.all(counts.sum(axis=0) == n)
    forms = out.forms
    for j in range(b):
        c = counts[:, j]
        assert forms.quadratic[j] == pytest.approx(c @ hb @ c, rel=1e-10)
        assert forms.linear[j] == pytest.approx(c @ hb.sum(axis=1), rel=1e-10)
        assert forms.diagonal[j] == pytest.approx(c @ np.diag(hb), rel=1e-10)
        assert forms.squared[j] == pytest.approx((c * c) @ np.diag(hb), rel=1e-10)
        assert forms.ties[j] == pytest.approx(c @ c)
    alone = feature_consistency_test(features, x, r, x, np.random.default_rng(1), b,
                                     stream="skce_consistency")
    np.testing.assert_array_equal(out.consistency.null_distribution, alone.null_distribution)


def test_block_counts_are_multinomial():
    n, b = 3 * ROW_BLOCK + 50, 3000
    totals = block_totals(7, "boot", n, b)
    assert totals.shape == (n_blocks(n), b) and np.all(totals.sum(axis=0) == n)
    counts = np.vstack([block_counts(block_rng(7, "boot", k), hi - lo, totals[k]).T
                        for k, lo, hi in blocks(0, n)])
    assert counts.shape == (n, b) and np.all(counts.sum(axis=0) == n)
    # multinomial(n, 1/n): mean 1, variance 1 - 1/n, covariance -1/n (across blocks too)
    assert abs(counts.mean() - 1.0) < 1e-12
    assert counts.var(axis=1).mean() == pytest.approx(1 - 1 / n, abs=0.01)
    pairs = np.cov(counts[::97])
    off = pairs[~np.eye(pairs.shape[0], dtype=bool)]
    assert off.mean() == pytest.approx(-1 / n, abs=2e-3)
    first, rest = counts[:ROW_BLOCK].sum(axis=0), counts[ROW_BLOCK:].sum(axis=0)
    assert np.all(first + rest == n)
    assert first.var() == pytest.approx(n * (ROW_BLOCK / n) * (1 - ROW_BLOCK / n), rel=0.1)


@pytest.mark.parametrize("rows,columns", [(ROW_BLOCK, 7), (2 * LABEL_ROWS + 3, 5),
                                          (LABEL_ROWS - 1, 4), (1, 1)])
def test_binary_labels_into_are_the_indicators_of_the_same_stream(rows, columns):
    """The row-chunked draws written into a float32 (strided) view are the labels of one
    ``label_indicators`` call (odd and even word counts)."""
    rng = np.random.default_rng(5)
    thresholds = label_thresholds(rng.random(rows))
    expected = label_indicators(block_rng(3, "x", 2), thresholds, columns, 1)[0]
    out = np.full((rows, columns + 1), 7.0, dtype=np.float32)
    binary_labels_into(block_rng(3, "x", 2), thresholds, out[:, 1:])
    assert np.array_equal(out[:, 1:], expected.astype(np.float32))
    assert np.all(out[:, 0] == 7.0)


def test_label_thresholds_give_the_class_probabilities():
    p = np.array([[0.2, 0.5, 0.3], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    ind = label_indicators(np.random.default_rng(0), label_thresholds(p), 200_000, 3)
    labels = labels_of(ind)
    freq = [(labels[0] == k).mean() for k in range(3)]
    assert freq == pytest.approx([0.2, 0.5, 0.3], abs=0.005)
    assert np.all(labels[1] == 2) and np.all(labels[2] == 0)
    assert sum(i.astype(int) for i in ind).max() == 1  # one class per draw
    binary = labels_of(label_indicators(np.random.default_rng(1),
                                        label_thresholds(np.array([0.3, 0.0])), 100_000, 1))
    assert binary[0].mean() == pytest.approx(0.3, abs=0.005) and binary[1].max() == 0


def test_exact_products_do_not_round():
    rng = np.random.default_rng(4)
    features = FourierFeatures.draw("sqeuclidean", 3.0, 2, 256, 1)
    phi = features.quantised(rng.normal(size=(ROW_BLOCK, 2)))
    y = (rng.random((ROW_BLOCK, 7)) < 0.5).astype(np.float32)
    exact = phi.astype(np.float64).T @ y.astype(np.float64)
    assert np.array_equal(exact_products(phi, y, ROW_BLOCK), exact)
    values = rng.uniform(-1, 1, ROW_BLOCK)
    parts = exact_parts(values, 1.0)
    assert np.max(np.abs(parts.astype(np.float64).sum(axis=0) - values)) <= 2.0 ** -48
    assert np.array_equal(exact_products(parts.T, y, ROW_BLOCK),
                          parts.astype(np.float64) @ y.astype(np.float64))


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 200, 1500])
def test_poisson_binomial_pmf_matches_the_recursion(n):
    p = np.random.default_rng(n).random(n)
    np.testing.assert_allclose(pb.pmf(p), poisson_binomial_pmf(p), rtol=0, atol=1e-14)


def test_poisson_binomial_pmf_of_equal_probabilities_is_binomial():
    from scipy import stats

    np.testing.assert_allclose(pb.pmf(np.full(3000, 0.3)),
                               stats.binom.pmf(np.arange(3001), 3000, 0.3), atol=1e-14)


def test_cell_counts_follow_each_cells_law():
    rng = np.random.default_rng(12)
    p = rng.uniform(0.05, 0.6, 60)
    cells = np.repeat([0, 2], 30)  # cell 1 is empty
    counts = pb.cell_counts(p, cells, 3, 20000, np.random.default_rng(0))
    assert np.all(counts[1] == 0)
    for c in (0, 2):
        law = poisson_binomial_pmf(p[cells == c])
        freq = np.bincount(counts[c], minlength=law.size) / counts.shape[1]
        assert np.abs(freq - law).max() < 0.015
    u = np.random.default_rng(0).random((3, 20000))
    first = pb.sample(pb.pmf(p[:30]), u[0])
    np.testing.assert_array_equal(first, counts[0])


def test_default_n_features_rule():
    assert default_n_features(1000, 500) == 2048
    assert default_n_features(10_000, 10_000) == 448
    assert default_n_features(10**7, 1000) == 256
    assert default_n_features(100_000, 1000) % 64 == 0


class _Config:
    def __init__(self, method, budget=10.0, n_features=None):
        self.method, self.exact_budget_seconds, self.n_features = method, budget, n_features


def test_method_rule():
    rng = np.random.default_rng(0)
    assert choose_method(_Config("exact"), 10**6, 500, rng).method == "exact"
    assert choose_method(_Config("auto"), 5000, 500, rng).method == "exact"
    big = choose_method(_Config("auto"), 100_000, 500, rng)
    assert big.method == "features" and "exact_budget_seconds" in big.reason
    assert big.n_features == default_n_features(100_000, 500)
    limit = choose_method(_Config("auto"), 3000, 500, rng, exact_possible=False,
                          limit_note="n > limit")
    assert limit.method == "features" and limit.reason == "n > limit"
    given = choose_method(_Config("features", n_features=101), 100, 10, rng)
    assert given.n_features == 102 and given.to_params()["n_features_rule"] == "given"
    # a kernel on many input columns (one per category) costs more per entry: features
    assert choose_method(_Config("auto"), 10_000, 500, rng, dims=16).method == "exact"
    wide = choose_method(_Config("auto"), 10_000, 500, rng, dims=512)
    assert wide.method == "features"
    assert wide.extra["estimated_exact_seconds"] > 10 * choose_method(
        _Config("auto"), 10_000, 500, rng).extra["estimated_exact_seconds"]


def _data(n=400, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    if classes == 2:
        p = rng.uniform(0.05, 0.95, n)
        y = (rng.random(n) < p).astype(int)
    else:
        p = rng.dirichlet(np.ones(classes), n)
        y = np.array([rng.choice(classes, p=row) for row in p])
    return CalibrationData.from_arrays(y, p, covariates={"age": rng.uniform(20, 80, n),
                                                         "g": rng.integers(0, 3, n)},
                                       categorical=["g"])


@pytest.mark.parametrize("classes", [2, 3])
def test_features_run_records_the_computation(classes):
    result = run_audit(_data(classes=classes), AuditConfig(method="features", n_resamples=50,
                                                           n_features=64)).to_dict()
    assert result["config"]["method"] == "features"
    kernel_tests = [t for t in result["tests"]
                    if t["id"].startswith(("skce_b", "skce_uq", "skce_consistency", "local"))]
    assert {t["id"] for t in kernel_tests} >= {"skce_consistency", "local_consistency",
                                              "skce_uq_asymptotic"}
    for t in kernel_tests:
        comp = t["params"]["computation"]
        assert comp["method"] == "features" and comp["n_features"] == 64
        assert isinstance(comp["frequency_seed"], int)
        approx = comp["approximation"]
        assert approx["subsample_rows"] == 400
        assert approx["difference"] == pytest.approx(approx["features"] - approx["exact"])
        # with 50 resamples a primary cannot reach its Holm level: INCONCLUSIVE (the gate)
        assert t["status"] in ("PASS", "FAIL", "INCONCLUSIVE") and t["p_value"] is not None
    again = run_audit(_data(classes=classes), AuditConfig(method="features", n_resamples=50,
                                                          n_features=64)).to_dict()
    assert [t["p_value"] for t in again["tests"]] == [t["p_value"] for t in result["tests"]]


def test_default_run_stays_exact_and_says_why():
    result = run_audit(_data(), AuditConfig(n_resamples=50)).to_dict()
    comps = [t["params"]["computation"] for t in result["tests"]
             if "computation" in t.get("params", {})]
    assert comps and all(c["method"] == "exact" and c["requested"] == "auto" for c in comps)
    exact = run_audit(_data(), AuditConfig(n_resamples=50, method="exact")).to_dict()
    assert [t["p_value"] for t in exact["tests"]] == [t["p_value"] for t in result["tests"]]


def test_cli_method_flag_reaches_the_json(tmp_path):
    from typer.testing import CliRunner

    from calaudit.cli.app import app

    rng = np.random.default_rng(1)
    n = 300
    p = rng.uniform(0.1, 0.9, n)
    rows = ["label,prob"] + [f"{int(rng.random() < q)},{q:.6f}" for q in p]
    path = tmp_path / "d.csv"
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "r.json"
    res = CliRunner().invoke(app, ["test", str(path), "--method", "features", "--n-features",
                                   "32", "--n-resamples", "20", "--json", str(out), "-q",
                                   "--exit-zero"])
    assert res.exit_code == 0, res.output
    import json

    payload = json.loads(out.read_text())
    assert payload["config"]["method"] == "features"
    consistency = next(t for t in payload["tests"] if t["id"] == "skce_consistency")
    assert consistency["params"]["computation"]["n_features"] == 32
    bad = CliRunner().invoke(app, ["test", str(path), "--method", "fast"])
    assert bad.exit_code == 2


def test_public_test_functions_take_the_computation():
    from calaudit.stats.global_tests import skce_test
    from calaudit.stats.local import klce_test

    data = _data(n=300)
    p = data.y_proba[:, 1]
    covs = {"age": np.asarray(data.covariates[0].values)}
    for fn, args in ((skce_test, (data.y_true, p)), (klce_test, (data.y_true, p, covs))):
        exact = fn(*args, n_resamples=30, computation="exact")
        feats = fn(*args, n_resamples=30, computation="features", n_features=64)
        assert exact.pvalue > 0 and feats.pvalue > 0
        assert feats.statistic != exact.statistic


def test_feature_tests_keep_exact_skce_estimates_within_max_quadratic_n():
    """With the resampling tests on random features, skce_b / skce_uq (and the closed-form
    bounds on them) are still the exact estimates when n <= skce.max_quadratic_n."""
    import calaudit
    from calaudit.audit.config import AuditConfig, GlobalTestsConfig

    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.full(3, 0.8), 400)
    labels = np.array([rng.choice(3, p=q) for q in probs])
    data = calaudit.CalibrationData.from_arrays(labels, probs)
    tests = ("skce_consistency", "skce_uq_bound")
    runs = {method: calaudit.run_audit(data, AuditConfig(
        seed=2, method=method, n_resamples=50, global_tests=GlobalTestsConfig(tests=tests)))
        for method in ("exact", "features")}
    for metric_id in ("skce_b", "skce_uq"):
        exact, featured = (runs[m].metric(metric_id) for m in ("exact", "features"))
        assert featured.value == pytest.approx(exact.value, rel=1e-12, abs=1e-15)
        assert featured.params["computation"]["method"] == "exact"
    bound = {m: runs[m].test("skce_uq_bound") for m in runs}
    assert bound["features"].p_value == pytest.approx(bound["exact"].p_value, rel=1e-12)
    consistency = runs["features"].test("skce_consistency")
    assert consistency.params["computation"]["method"] == "features"


def test_n_features_has_the_documented_range():
    from calaudit.limits import COUNTS

    assert COUNTS["n_features"] == (2, 16_384)
    AuditConfig(n_features=16_384)
    for bad in (1, 16_385, True, 2.5):
        with pytest.raises(Exception, match=r"n_features must be an integer in \[2, 16384\]"):
            AuditConfig(n_features=bad)
