"""LCB estimation: LOO Nadaraya-Watson fits, CV selection, pointwise standard errors, and
recovery of group biases on the issue's opposite-bias case (small n)."""

from __future__ import annotations

import numpy as np

from calaudit.local.encoding import encode_covariates
from calaudit.local.lcb import row_products
from calaudit.local.lcb_bandwidth import (
    estimation_gram,
    kernel_sums,
    loo_fit,
    select_bandwidths,
)
from tests.diagnosis_cases import opposite_groups


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
