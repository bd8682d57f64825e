"""Smooth ECE: against relplot (the authors' package), against the paper's integral, and
in the audit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import trapezoid

import calaudit
from calaudit.metrics.ece import scores_and_outcomes
from calaudit.metrics.smooth_ece import (
    SEARCH_STEPS,
    fixed_point_sigma,
    smooth_ece,
    smooth_ece_at,
    smooth_ece_replicates,
    smooth_ece_scores,
    smooth_reliability,
)


def dataset(seed: int, n: int, rounded: bool = False):
    rng = np.random.default_rng(seed)
    f = rng.beta(rng.uniform(0.3, 3), rng.uniform(0.3, 3), n)
    if rounded:
        f = np.round(f, 2)
    f[:2] = [0.0, 1.0]
    y = (rng.uniform(size=n) < np.clip(f + rng.uniform(-0.3, 0.3), 0, 1)).astype(float)
    return f, y


CASES = [(0, 50, False), (1, 400, True), (2, 2000, False), (3, 5000, True), (4, 30, False),
         (5, 1000, False)]


@pytest.mark.parametrize(("seed", "n", "rounded"), CASES)
def test_equals_relplot(seed, n, rounded):
    relplot = pytest.importorskip("relplot")
    f, y = dataset(seed, n, rounded)
    assert smooth_ece_scores(f, y) == pytest.approx(relplot.smECE(f, y), abs=1e-6)
    value, sigma = relplot.smECE(f, y, return_width=True)
    assert fixed_point_sigma(f, y) == sigma
    for s in (0.004, 0.05, 0.3, 1.0):
        assert smooth_ece_at(f, y, s) == pytest.approx(relplot.smECE_sigma(f, y, s), abs=1e-6)


def test_top_label_equals_relplot_on_confidences():
    relplot = pytest.importorskip("relplot")
    rng = np.random.default_rng(6)
    p = rng.dirichlet(np.ones(4) * 0.7, 800)
    y = np.array([rng.choice(4, p=row) for row in p])
    f, correct = relplot.multiclass_logits_to_confidences(p, y, probs=True)
    assert smooth_ece(y, p) == pytest.approx(relplot.smECE(f, correct), abs=1e-6)


def reflected_gaussian(t: float, f: float, sigma: float) -> float:
    """K(t, f): Gaussian at f plus its mirror images about 0 and 1."""
    total = 0.0
    for centre in (f, -f, 2.0 - f):
        total += math.exp(-(t - centre) ** 2 / (2 * sigma ** 2)) / (math.sqrt(2 * math.pi)
                                                                   * sigma)
    return total


def smece_by_integral(f, y, sigma, points=2001):
    """Paper eq. 4 by double loop: int |sum_i r_i K(t, f_i)| dt / int sum_i K(t, f_i) dt,
    trapezoid rule on a fine grid."""
    t = np.linspace(0, 1, points)
    residual = np.zeros(points)
    density = np.zeros(points)
    for j, tj in enumerate(t):
        for fi, yi in zip(f, y):
            k = reflected_gaussian(tj, fi, sigma)
            residual[j] += (fi - yi) * k
            density[j] += k
    return trapezoid(np.abs(residual), t) / trapezoid(density, t)


@pytest.mark.parametrize("sigma", [0.08, 0.2])
def test_discretisation_approximates_the_paper_integral(sigma):
    f, y = dataset(7, 120)
    exact = smece_by_integral(f, y, sigma)
    assert smooth_ece_at(f, y, sigma) == pytest.approx(exact, rel=0.02)


def test_fixed_point_and_limits():
    f, y = dataset(8, 3000)
    sigma = fixed_point_sigma(f, y)
    width = 2.0 ** -SEARCH_STEPS
    assert sigma >= smooth_ece_at(f, y, sigma)  # upper end of the bracket
    assert sigma - width < smooth_ece_at(f, y, sigma - width) or sigma - width < 1e-3
    rng = np.random.default_rng(9)
    p = rng.uniform(size=20000)
    calibrated = (rng.uniform(size=p.size) < p).astype(float)
    assert smooth_ece_scores(p, calibrated) < 0.02
    assert smooth_ece_scores(p, 1.0 - calibrated) > 0.3
    assert smooth_ece_scores(np.full(10, 0.5), np.ones(10)) == pytest.approx(0.5, abs=0.01)


def test_weighted_replicates_equal_repeated_rows():
    f, y = dataset(10, 300)
    rng = np.random.default_rng(11)
    counts = rng.multinomial(300, np.ones(300) / 300, size=12).T.astype(float)
    replicates = smooth_ece_replicates(f, y, counts)
    for b in range(counts.shape[1]):
        rows = np.repeat(np.arange(300), counts[:, b].astype(int))
        assert replicates[b] == pytest.approx(smooth_ece_scores(f[rows], y[rows]), abs=1e-12)


def test_smoothed_curve_is_the_regression_of_the_outcome():
    f, y = dataset(12, 4000)
    curve = smooth_reliability(f, y)
    assert curve.smece == pytest.approx(smooth_ece_scores(f, y))
    assert trapezoid(curve.density, curve.t) == pytest.approx(1.0, abs=0.01)
    dense = curve.density > 0.5
    assert np.all((curve.mu[dense] > -0.05) & (curve.mu[dense] < 1.05))


def test_weighted_curve_equals_the_repeated_rows():
    f, y = dataset(14, 300)
    w = np.random.default_rng(15).integers(0, 4, 300).astype(float)
    rows = np.repeat(np.arange(300), w.astype(int))
    weighted, repeated = smooth_reliability(f, y, w), smooth_reliability(f[rows], y[rows])
    assert weighted.sigma == repeated.sigma
    assert weighted.smece == pytest.approx(repeated.smece, rel=1e-12)
    np.testing.assert_array_equal(weighted.t, repeated.t)
    np.testing.assert_allclose(weighted.mu, repeated.mu, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(weighted.density, repeated.density, rtol=1e-11, atol=1e-12)
    assert weighted.smece == pytest.approx(smooth_ece_replicates(f, y, w[:, None])[0],
                                           rel=1e-12)


def test_weighted_curve_is_the_weighted_kernel_regression():
    """mu(t) = t - sum_i w_i (f_i - y_i) K(t, f_i) / sum_i w_i K(t, f_i) by a double loop
    at the curve's bandwidth, where the scores are dense (the grid's discretisation)."""
    f, y = dataset(16, 150)
    w = np.random.default_rng(17).uniform(0.1, 5.0, 150)
    curve = smooth_reliability(f, y, w)
    unweighted = smooth_reliability(f, y)
    dense = np.flatnonzero(curve.density > 0.5)[::10]
    for j in dense:
        t = curve.t[j]
        kernel = [wi * reflected_gaussian(t, fi, curve.sigma) for fi, wi in zip(f, w)]
        residual = sum(k * (fi - yi) for k, fi, yi in zip(kernel, f, y))
        assert curve.mu[j] == pytest.approx(t - residual / sum(kernel), abs=5e-3)
    assert np.max(np.abs(curve.mu[dense] - unweighted.mu[dense])) > 0.01


def test_in_the_audit_with_interval_and_diagram():
    rng = np.random.default_rng(13)
    p = rng.uniform(0.05, 0.95, 500)
    y = (rng.uniform(size=500) < p ** 1.5).astype(int)
    data = calaudit.CalibrationData.from_arrays(y, p)
    result = calaudit.run_audit(data, calaudit.AuditConfig(ci=True, n_resamples=100))
    metric = result.metric("smece")
    assert metric.value == pytest.approx(calaudit.smooth_ece(y, p))
    assert metric.params["sigma"] == fixed_point_sigma(*scores_and_outcomes(
        data.y_true, data.y_proba, "binary"))
    low, high = metric.ci
    assert low < metric.value < high
    diagram = result.diagrams["smooth_reliability"]
    assert diagram["smece"] == metric.value and len(diagram["t"]) == len(diagram["mu"])
    from calaudit import registry

    assert registry.metric("smece").direction.better == "lower"
