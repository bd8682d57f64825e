"""LCB estimation: LOO Nadaraya-Watson fits, CV selection, pointwise standard errors, and
recovery of group biases on the issue's opposite-bias case (small n)."""

from __future__ import annotations

import numpy as np
import pytest

from calaudit.local.encoding import encode_covariates
from calaudit.local.lcb import row_products
from calaudit.local.lcb_bandwidth import (
    estimation_gram,
    kernel_sums,
    loo_fit,
    select_bandwidths,
)
from validation.diagnosis_cases import opposite_groups


def _slow_kernel(p, x, sp, sx):
    n = p.shape[0]
    k = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            d = np.sum((p[i] - p[j]) ** 2) / (2 * sp ** 2)
            d += np.sum((x[i] - x[j]) ** 2 / (2 * sx ** 2))
            k[i, j] = np.exp(-d)
    return k


def _case(n=40, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.1, 0.9, (n, 1))
    x = np.column_stack([rng.normal(size=n), (rng.random(n) < 0.5) / np.sqrt(2)])
    r = (rng.random(n) < p[:, 0]).astype(float) - p[:, 0]
    return p, x, r


def test_loo_fit_matches_double_loop():
    p, x, r = _case()
    sx = np.array([0.7, 0.3])
    weighted, mass = kernel_sums(p, 0.2, x, sx, r)
    k = _slow_kernel(p, x, 0.2, sx)
    assert np.allclose(weighted, k @ r) and np.allclose(mass, k.sum(axis=1))
    slow = np.array([sum(k[j, i] * r[i] for i in range(len(r)) if i != j)
                     / sum(k[j, i] for i in range(len(r)) if i != j) for j in range(len(r))])
    assert np.allclose(loo_fit(weighted, mass, r), slow, rtol=1e-10, atol=1e-12)


def test_isolated_rows_get_the_mean_of_the_others():
    r = np.array([1.0, -1.0, 0.5])
    fit = loo_fit(r.copy(), np.ones(3), r)  # every row alone: K = I
    assert np.allclose(fit, [(-1 + 0.5) / 2, (1 + 0.5) / 2, 0.0])


def test_selection_minimises_the_cv_score_over_its_path():
    p, x, r = _case(n=120, seed=3)
    blocks, names = (slice(0, 1), slice(1, 2)), ("age", "race")
    sel = select_bandwidths(p, x, r, np.random.default_rng(0), blocks, names,
                            ["numeric", "categorical"])
    chosen = [e for e in sel.path if e["prob_bandwidth"] == sel.prob_bandwidth
              and e["cov_bandwidths"] == sel.cov_bandwidths]
    assert chosen and chosen[0]["score"] <= min(e["score"] for e in sel.path) * (1 + 1e-12)
    # every score on the path is the LOO criterion of its bandwidths
    e = sel.path[5]
    cols = np.array([e["cov_bandwidths"]["age"], e["cov_bandwidths"]["race"]])
    w, m = kernel_sums(p, e["prob_bandwidth"], x, cols, r)
    assert np.isclose(e["score"], np.mean((r - loo_fit(w, m, r)) ** 2))
    assert sel.to_dict()["cv_curve"][0]["stage"] == 1


def test_pointwise_se_and_curve_weights_match_double_loop():
    p, x, r = _case(n=30, seed=5)
    sx = np.array([0.5, 0.4])
    gram = estimation_gram(p, 0.3, x, sx)
    k = _slow_kernel(p, x, 0.3, sx)
    rows = np.array([0, 7, 29])
    v = np.random.default_rng(1).random((30, 4))
    out = row_products(gram.features, rows, r, k.sum(axis=1), v, chunk=8)
    slow = [np.sqrt(sum(k[j, i] ** 2 * r[i] ** 2 for i in range(30))) / k[j].sum()
            for j in rows]
    assert np.allclose(out.se, slow)
    assert np.allclose(out.curve_weights, k[rows] @ v)


class _Cov:
    def __init__(self, name, kind, values, categories=()):
        self.name, self.kind, self.values, self.categories = name, kind, values, categories


def test_opposite_groups_mean_lcb_recovers_the_bias():
    y, p, covs, bias = opposite_groups(1500, seed=2)
    codes = (covs["group"] == "B").astype(int)
    enc = encode_covariates([_Cov("group", "categorical", codes, ("A", "B"))])
    r = y - p
    sel = select_bandwidths(p[:, None], enc.features, r, np.random.default_rng(0),
                            enc.blocks, ("group",), ["categorical"])
    w, m = kernel_sums(p[:, None], sel.prob_bandwidth, enc.features,
                       sel.column_bandwidths(enc.blocks, ("group",)), r)
    lcb = w / m
    for code, truth in ((0, 0.12), (1, -0.12)):
        assert abs(lcb[codes == code].mean() - truth) <= 0.3 * abs(truth)


def test_cell_matmul_matches_dense_product_kernel():
    """Categorical factor exact per cell, continuous factor by features: with many features
    ``K W`` (and the squared kernel) agree with the dense kernel to the features' error."""
    from calaudit.local.lcb_cells import cell_kernel
    from calaudit.local.lcb_features import _features, cell_matmul

    rng = np.random.default_rng(4)
    n = 300
    z = np.column_stack([rng.uniform(0, 2, n), rng.normal(size=n),
                         2.0 * (rng.random(n) < 0.3), 2.0 * (rng.random(n) < 0.6)])
    dense = np.exp(-((z[:, None, :] - z[None, :, :]) ** 2).sum(axis=2))
    kernel = cell_kernel(z, [2, 3])
    assert kernel.n_cells == 4 and kernel.z.shape[1] == 2
    w = rng.normal(size=(n, 2))
    feats = _features(kernel, 16384, 3)
    rows = np.arange(0, n, 7)
    got = cell_matmul(kernel, feats, w, rows)
    assert np.abs(got - (dense @ w)[rows]).max() < 0.05 * np.abs(dense @ w).max()
    sq = cell_matmul(kernel.squared(), feats, w[:, :1], rows)[:, 0]
    ref = (dense ** 2 @ w[:, :1])[rows, 0]
    assert np.abs(sq - ref).max() < 0.05 * np.abs(ref).max()
    # only categorical columns: exact (the continuous factor is 1)
    only = cell_kernel(z[:, 2:], [0, 1])
    dense_cat = np.exp(-((z[:, None, 2:] - z[None, :, 2:]) ** 2).sum(axis=2))
    assert np.allclose(cell_matmul(only, _features(only, 64, 0), w), dense_cat @ w)


def _region_run(method):
    from calaudit.audit.config import AuditConfig, LocalConfig
    from calaudit.audit.local_calibration import LocalCalibrationStage
    from calaudit.data.dataset import CalibrationData
    from validation.diagnosis_cases import one_region

    y, p, covs, _ = one_region(3000, 5)
    data = CalibrationData.from_arrays(y, p, covariates={k: covs[k] for k in ("age", "region")},
                                       categorical=["region"])
    config = AuditConfig(seed=2, n_resamples=20, method=method,
                         local=LocalConfig(tests=("none",), group_ci_resamples=20))
    out = LocalCalibrationStage().run(data, config, np.random.default_rng(1))
    return out.local, [g if isinstance(g, dict) else g.to_dict() for g in out.groups]


@pytest.mark.slow
def test_features_lcb_group_means_agree_with_exact():
    """Forced ``method="features"`` at small n: the group table's mean LCB within 0.01 of
    the exact path (measured 2e-4 at 20,000 rows, docs/scale.md), and the JSON says how."""
    (exact, exact_groups), (feats, feat_groups) = _region_run("exact"), _region_run("features")
    assert exact["lcb"]["computation"]["method"] == "exact"
    comp = feats["lcb"]["computation"]
    assert comp["method"] == "features" and comp["categorical_cells"] == 5
    assert comp["n_features"] >= 256
    by_id = {g["group"]: g["mean_lcb"] for g in exact_groups}
    assert len(feat_groups) == len(by_id) > 5
    for g in feat_groups:
        assert abs(g["mean_lcb"] - by_id[g["group"]]) < 0.01, g["group"]
    pts_e, pts_f = exact["lcb"]["points"], feats["lcb"]["points"]
    assert np.allclose(pts_f["lcb_se"], pts_e["lcb_se"], rtol=0.15)


def test_default_lcb_stays_exact_at_small_n():
    """``auto`` at 3,000 rows: the exact kernel sums, the same LCB as ``method="exact"``."""
    (auto, auto_groups), (exact, exact_groups) = _region_run("auto"), _region_run("exact")
    assert auto["lcb"]["computation"]["method"] == "exact"
    assert "n_features" not in auto["lcb"]["computation"]
    assert auto["lcb"]["summary"] == exact["lcb"]["summary"]
    assert np.array_equal(auto["lcb"]["points"]["lcb_se"], exact["lcb"]["points"]["lcb_se"])
    assert [g["mean_lcb"] for g in auto_groups] == [g["mean_lcb"] for g in exact_groups]


def test_cell_matmul_many_columns_matches_the_same_features_densely():
    """The per-cell GEMMs (many columns) and the placed-columns GEMM (few) give the
    feature kernel's product: ``C[a_i, a_j] phi_i . phi_j`` times ``W``."""
    from calaudit.local.lcb_cells import cell_kernel
    from calaudit.local.lcb_features import DENSE_OUTPUT, _features, cell_matmul

    rng = np.random.default_rng(5)
    n = 500
    z = np.column_stack([rng.uniform(0, 2, n), 2.0 * rng.integers(0, 3, n)])
    kernel = cell_kernel(z, [1])
    feats = _features(kernel, 64, 1)
    phi = feats.transform(kernel.z).astype(np.float64)
    approx = kernel.cell_matrix[kernel.cells][:, kernel.cells] * (phi @ phi.T)
    for q in (2, DENSE_OUTPUT // kernel.n_cells + 1):
        w = rng.normal(size=(n, q))
        got = cell_matmul(kernel, feats, w)
        assert np.allclose(got, approx @ w, rtol=1e-4, atol=1e-4 * np.abs(approx @ w).max())


def test_cell_matmul_float32_columns_give_the_same_bytes():
    """The stage keeps the large-n curve columns in float32 (half the memory): the block
    products are single precision anyway, so the result is bit-identical to float64
    columns, in both the placed-columns and the per-cell GEMM branches."""
    from calaudit.local.lcb_cells import cell_kernel
    from calaudit.local.lcb_curves import CurveRequest, curve_design
    from calaudit.local.lcb_features import DENSE_OUTPUT, _features, cell_matmul

    rng = np.random.default_rng(6)
    n = 700
    z = np.column_stack([rng.uniform(0, 2, n), 2.0 * rng.integers(0, 3, n)])
    kernel = cell_kernel(z, [1])
    feats = _features(kernel, 64, 2)
    for q in (2, DENSE_OUTPUT // kernel.n_cells + 1):
        w = rng.normal(size=(n, q))
        assert np.array_equal(cell_matmul(kernel, feats, w),
                              cell_matmul(kernel, feats, w.astype(np.float32)))
    rows = np.flatnonzero(z[:, 1] == 0)
    request = CurveRequest("x", None, "all", rows, z[rows, 0])
    sums = rng.uniform(0.5, 2.0, n)
    wide = curve_design([request], sums, 12)
    narrow = curve_design([request], sums, 12, dtype=np.float32)
    assert narrow.columns.dtype == np.float32
    assert np.array_equal(narrow.columns, wide.columns.astype(np.float32))
    assert np.array_equal(cell_matmul(kernel, feats, narrow.columns),
                          cell_matmul(kernel, feats, wide.columns))


class _ArrayLike:
    """A column that is not an ndarray (a dataset's gathered column): read by np.asarray."""

    def __init__(self, values):
        self.values = values

    def __array__(self, dtype=None, copy=None):
        return self.values


def test_pointwise_se_takes_a_residual_column_that_is_not_an_array():
    p, x, r = _case(n=30, seed=5)
    gram = estimation_gram(p, 0.3, x, np.array([0.5, 0.4]))
    rows, v, sums = np.array([0, 7, 29]), np.ones((30, 1)), np.full(30, 2.0)
    plain = row_products(gram.features, rows, r, sums, v, chunk=8)
    wrapped = row_products(gram.features, rows, _ArrayLike(r), sums, v, chunk=8)
    assert plain.se.tobytes() == wrapped.se.tobytes()
