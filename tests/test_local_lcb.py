"""Local calibration bias (eq. 7), its curves and bands, the plotting subsample."""

from __future__ import annotations

import numpy as np
import pytest

from calaudit.local import lcb, lcb_curves
from calaudit.local.kernel import product_gram
from calaudit.local.lcb_bandwidth import estimation_gram, kernel_sums
from calaudit.local.lcb_estimation import ratio
from calaudit.numerics.pairwise import kernel_matmul
from tests.reference_local import curve_weights, lcb_loops, product_kernel_matrix


def case(n=50, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    p = 1 / (1 + np.exp(-x[:, 0]))
    y = (rng.random(n) < p).astype(float)
    return x, p, y


#: The estimation kernel's bandwidths of ``exp(-20 |p - p'|^2 - 0.5 |x - x'|^2)``.
S_P, S_X = np.sqrt(0.5 / 20.0), np.ones(2)


def local_bias(p, x, r):
    """The stage's exact LCB (``(K r, K 1)`` and their ratio, eq. 7) with :data:`S_P` and
    :data:`S_X`."""
    weighted, mass = kernel_sums(p, S_P, x, S_X, r)
    return lcb.LocalBias(ratio(weighted, mass), mass)


def test_lcb_matches_equation_7_by_loops():
    x, p, y = case()
    bias = local_bias(p, x, y - p)
    assert np.allclose(bias.values, lcb_loops(p, y - p, x, 20.0, 0.5), rtol=1e-12)
    kernel = product_kernel_matrix(p, x, 20.0, 0.5)
    assert np.allclose(bias.weight_sums, kernel.sum(axis=0), rtol=1e-12)


def test_constant_residual_gives_constant_lcb():
    x, p, _ = case()
    bias = local_bias(p, x, np.full(50, 0.125))
    assert np.allclose(bias.values, 0.125, rtol=1e-13)


def test_top_label_view():
    proba = np.array([[0.1, 0.2, 0.7], [0.5, 0.3, 0.2], [0.6, 0.4, 0.0]])
    outcome, prediction = lcb.top_label_residual(np.array([2, 1, 0]), proba)
    assert np.array_equal(outcome, [1, 0, 1]) and np.allclose(prediction, [0.7, 0.5, 0.6])
    binary = np.column_stack([1 - np.array([0.2, 0.9]), [0.2, 0.9]])
    outcome, prediction = lcb.top_label_residual(np.array([1, 0]), binary)
    assert np.array_equal(outcome, [1, 0]) and np.allclose(prediction, [0.2, 0.9])


def test_curve_is_the_smoothed_lcb_and_its_band_the_linear_standard_error():
    x, p, y = case(60, 3)
    r = y - p
    gram = estimation_gram(p, S_P, x, S_X)
    bias = local_bias(p, x, r)
    rows = np.flatnonzero(x[:, 1] > -0.5)
    cov = x[rows, 0]
    req = lcb_curves.CurveRequest("x0", "g", "high", rows, cov)
    design = lcb_curves.curve_design([req], bias.weight_sums, 7)
    (curve,) = lcb_curves.curves_from_products(design, kernel_matmul(gram, design.columns),
                                               bias, r, 0.9)
    (group,) = curve["groups"]
    grid, w, h = curve_weights(cov, 7)
    assert np.allclose(group["x"], grid) and group["bandwidth"] == h
    assert np.allclose(group["lcb"], w @ bias.values[rows], rtol=1e-12)
    # explicit linear weights a_i(t) = sum_{j in g} w_j(t) K_ij / D_j
    kernel = product_kernel_matrix(p, x, 20.0, 0.5)
    d = kernel.sum(axis=0)
    a = kernel[:, rows] @ (w / d[rows]).T
    assert np.allclose(a.T @ r, group["lcb"], rtol=1e-10)
    se = np.sqrt((a ** 2).T @ r ** 2)
    assert np.allclose(group["se"], se, rtol=1e-10)
    z = 1.6448536269514722
    assert np.allclose(group["high"] - group["lcb"], z * se, rtol=1e-9)
    assert np.allclose(w.sum(axis=1), 1.0)


def test_silverman_bandwidth_and_points():
    x = np.random.default_rng(0).normal(size=1000)
    iqr = np.subtract(*np.percentile(x, [75, 25]))
    expected = 0.9 * min(x.std(ddof=1), iqr / 1.34) * 1000 ** -0.2
    assert lcb_curves.silverman_bandwidth(x) == pytest.approx(expected)
    assert lcb_curves.silverman_bandwidth(np.ones(5)) == 1.0
    assert np.array_equal(lcb.plot_points(10, 20, None), np.arange(10))
    a = lcb.plot_points(5000, 100, np.random.default_rng(1))
    assert a.size == 100 and np.all(np.diff(a) > 0)
    assert np.array_equal(a, lcb.plot_points(5000, 100, np.random.default_rng(1)))


def test_summary():
    values = np.array([-0.2, 0.0, 0.1, 0.3])
    s = lcb.summarize(values)
    assert s["mean"] == pytest.approx(0.05) and s["mean_abs"] == pytest.approx(0.15)
    assert s["min"] == -0.2 and s["max"] == 0.3 and set(s["quantiles"]) == {
        "0.05", "0.25", "0.5", "0.75", "0.95"}


def test_fused_engine_pass_equals_separate_forms_and_products():
    from calaudit.numerics.pairwise import (
        kernel_forms_and_matmul,
        kernel_matmul,
        kernel_quadratic_forms,
    )

    x, p, _ = case(83, 8)
    gram = product_gram(p, 10.0, x, 0.5)
    rng = np.random.default_rng(2)
    z, w = rng.normal(size=(83, 2, 5)), rng.normal(size=(83, 3))
    forms, products = kernel_forms_and_matmul(gram, z, w, tile_rows=20)
    assert np.allclose(forms, kernel_quadratic_forms(gram, z), rtol=1e-12)
    assert np.allclose(products, kernel_matmul(gram, w), rtol=1e-12)
    kernel = product_kernel_matrix(p, x, 10.0, 0.5)
    assert np.allclose(products, kernel @ w, rtol=1e-12)
    forms2, _ = kernel_forms_and_matmul(gram, z[:, 0, :], w, exclude_diagonal=False)
    assert np.allclose(forms2, np.einsum("ib,ij,jb->b", z[:, 0], kernel, z[:, 0]), rtol=1e-12)
