"""Calibration estimation functions, the risk and the targets of Gruber & Bach against
the slow references of ``tests/reference_squared.py``."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from calaudit.metrics.reliability import reliability_bins
from calaudit.numerics.kernels import gaussian
from calaudit.numerics.spectral import kernel_spectrum, pivoted_cholesky
from calaudit.squared.binning import BinningPath, bin_features
from calaudit.squared.fitting import EvalSet, Settings
from calaudit.squared.kde import KdePath, on_simplex
from calaudit.squared.kkr import GaussianBlock, KernelFold, KkrPath
from calaudit.squared.risk import RiskTerms, mean_diagonal, pairwise_risk
from calaudit.squared.targets import Problem, problems_for
from calaudit.squared.ukkr import UkkrPath
from tests import reference_squared as ref


def dirichlet_data(n, m, seed, concentration=1.0, temperature=0.6):
    """Miscalibrated predictions: labels from ``P``, predictions ``softmax(t log P)``."""
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet(np.full(m, concentration), n)
    y = np.array([rng.choice(m, p=row) for row in truth])
    logits = temperature * np.log(np.maximum(truth, 1e-300))
    pred = np.exp(logits - logits.max(axis=1, keepdims=True))
    return y, pred / pred.sum(axis=1, keepdims=True)


# --- the risk (eq. 20) --------------------------------------------------------------

@pytest.mark.parametrize("q,width", [(1, 1), (3, 3), (4, 7)])
def test_factorised_risk_matches_double_loop(q, width):
    rng = np.random.default_rng(q)
    r = rng.normal(size=(23, q))
    phi = rng.normal(size=(23, width))
    s = rng.normal(size=(width, width))
    s = s + s.T
    for metric in (None, s):
        h = phi @ (np.eye(width) if metric is None else metric) @ phi.T
        assert pairwise_risk(r, phi, metric) == pytest.approx(ref.risk_loops(r, h), rel=1e-12)
        assert mean_diagonal(phi, metric) == pytest.approx(np.mean(np.diag(h)), rel=1e-12)


def test_risk_terms_reused_for_several_metrics():
    rng = np.random.default_rng(5)
    r, phi = rng.normal(size=(15, 2)), rng.normal(size=(15, 4))
    terms = RiskTerms(r, phi)
    for scale in (0.5, 2.0):
        metric = scale * np.eye(4)
        assert terms.risk(metric) == pytest.approx(ref.risk_loops(r, phi @ metric @ phi.T))


def test_risk_of_the_true_function_is_smallest_in_expectation():
    # h* = <E[r|x], E[r|x']> has a smaller risk than 0 and than 2 h* on a large sample
    rng = np.random.default_rng(0)
    x = rng.uniform(0.3, 1.0, 4000)
    truth = x ** 2  # P(correct | x): miscalibrated
    outcome = (rng.uniform(size=x.size) < truth).astype(float)
    r = (outcome - x)[:, None]
    phi = (truth - x)[:, None]
    best = pairwise_risk(r, phi)
    assert best < pairwise_risk(r, 0 * phi) and best < pairwise_risk(r, 2 * phi)


# --- targets ------------------------------------------------------------------------

def test_targets_match_loops():
    y, p = dirichlet_data(40, 4, seed=1)
    p[0] = [0.4, 0.4, 0.1, 0.1]  # a tie goes to the first class
    (top,) = problems_for("tce2", y, p)
    scores, outcomes = ref.top_label_loops(y, p)
    np.testing.assert_allclose(top.points[:, 0], scores)
    np.testing.assert_allclose(top.residuals[:, 0], np.array(outcomes) - scores)
    classwise = problems_for("cwce2", y, p)
    assert len(classwise) == 4
    for k, problem in enumerate(classwise):
        np.testing.assert_allclose(problem.residuals[:, 0], (y == k) - p[:, k])
    (canonical,) = problems_for("cce2", y, p)
    np.testing.assert_allclose(canonical.residuals, np.eye(4)[y] - p)
    np.testing.assert_allclose(canonical.outcomes, np.eye(4)[y], atol=1e-15)
    with pytest.raises(ValueError, match="unknown target"):
        problems_for("ece", y, p)


# --- binning (eq. 23-24) ------------------------------------------------------------

@pytest.mark.parametrize("n_bins", [1, 3, 7, 15])
def test_bin_features_match_loops(n_bins):
    y, p = dirichlet_data(60, 3, seed=2)
    for target, canonical in (("tce2", False), ("cce2", True)):
        (problem,) = problems_for(target, y, p)
        train, test = problem.take(np.arange(40)), problem.take(np.arange(40, 60))
        test_points = np.vstack([test.points, [[1.0, 0.0, 0.0][: test.points.shape[1]]]])
        expected = ref.bin_phi_loops(train.points.tolist(), train.residuals.tolist(),
                                     test_points.tolist(), n_bins, canonical)
        np.testing.assert_allclose(bin_features(train, test_points, n_bins), expected,
                                   rtol=1e-12, atol=1e-15)


def test_bin_estimate_on_fitting_set_is_squared_binned_error():
    # eq. 24: mean_i h_bin(x_i, x_i) on the fitting set = sum_b n_b / n (acc_b - conf_b)^2
    y, p = dirichlet_data(500, 5, seed=3)
    (problem,) = problems_for("tce2", y, p)
    path = BinningPath(problem, (15.0,))
    estimate = path.estimate(EvalSet("self", problem), 0)
    bins = reliability_bins(problem.points[:, 0], problem.outcomes[:, 0], n_bins=15,
                            strategy="uniform")
    assert estimate == pytest.approx(np.dot(bins.count, bins.gap ** 2) / bins.count.sum(),
                                     rel=1e-12)


# --- Dirichlet kernel density (eq. 25) -----------------------------------------------

def test_dirichlet_log_density_formula_matches_scipy():
    z, alpha = np.array([0.2, 0.5, 0.3]), np.array([1.5, 4.0, 1.0])
    assert ref.dirichlet_logpdf(z, alpha) == pytest.approx(stats.dirichlet.logpdf(z, alpha))
    assert ref.dirichlet_logpdf([0.3, 0.7], [2.0, 5.0]) == pytest.approx(
        stats.beta.logpdf(0.3, 2.0, 5.0))


@pytest.mark.parametrize("bandwidth", [1e-5, 1e-3, 0.05, 0.6])
def test_kde_features_match_loops(bandwidth):
    y, p = dirichlet_data(50, 3, seed=4, concentration=2.0)
    for target in ("tce2", "cce2"):
        (problem,) = problems_for(target, y, p)
        train, test = problem.take(np.arange(35)), problem.take(np.arange(35, 50))
        path = KdePath(train, (bandwidth,))
        expected = ref.kde_phi_loops(
            on_simplex(train.points, problem.simplex).tolist(), train.outcomes.tolist(),
            on_simplex(test.points, problem.simplex).tolist(), test.points.tolist(), bandwidth)
        np.testing.assert_allclose(path.features(test.points, [0])[0], expected,
                                   rtol=1e-9, atol=1e-12)


def test_kde_handles_zero_probabilities_without_nan():
    p = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]] * 5)
    y = np.tile([0, 1, 1, 2], 5)
    (problem,) = problems_for("cce2", y, p)
    path = KdePath(problem.take(np.arange(12)), (1e-5, 0.1))
    for phi in path.features(p[12:], [0, 1]):
        assert np.all(np.isfinite(phi))
    # a point with an exact zero coordinate gives no weight to training points that are
    # positive there: [1, 0, 0] sees only itself-like rows with label 0
    np.testing.assert_allclose(path.features(p[:1], [0])[0], [[0.0, 0.0, 0.0]], atol=1e-12)


# --- kernel ridge regression (eq. 28-32) ---------------------------------------------

def small_problem(target, n=14, seed=6):
    y, p = dirichlet_data(n, 3, seed=seed, concentration=2.0)
    (problem,) = problems_for(target, y, p)
    return problem.take(np.arange(8)), problem.take(np.arange(8, n))


@pytest.mark.parametrize("spectrum", ["exact", "low_rank"])
@pytest.mark.parametrize("target", ["tce2", "cce2"])
def test_kkr_matches_kronecker_reference(spectrum, target):
    train, test = small_problem(target)
    gamma = 0.5
    settings = Settings(kernel_gamma=gamma, spectrum=spectrum, rank_tolerance=1e-15)
    fold = KernelFold(train, settings)
    scales = (1e-1, 1e-3, 1e-5)
    path = KkrPath(fold, scales, settings)
    evalset = EvalSet("test", test)
    risks = path.risks(evalset)
    for index, ridge in enumerate(path.ridges):
        h = ref.kkr_kronecker(train.points.tolist(), train.residuals.tolist(),
                              test.points.tolist(), gamma, ridge)
        np.testing.assert_allclose(h, ref.kkr_eigen(train.points.tolist(),
                                                    train.residuals.tolist(),
                                                    test.points.tolist(), gamma, ridge),
                                   rtol=1e-6, atol=1e-12)
        assert risks[index] == pytest.approx(ref.risk_loops(test.residuals, h), rel=1e-7)
        assert path.estimate(evalset, index) == pytest.approx(np.mean(np.diag(h)),
                                                              rel=1e-6, abs=1e-14)


@pytest.mark.parametrize("spectrum", ["exact", "low_rank"])
@pytest.mark.parametrize("target", ["tce2", "cce2"])
def test_ukkr_matches_direct_inverse(spectrum, target):
    train, test = small_problem(target, seed=7)
    settings = Settings(spectrum=spectrum, rank_tolerance=1e-15)
    path = UkkrPath(KernelFold(train, settings), (1e-1, 1e-2, 1e-4), settings)
    evalset = EvalSet("test", test)
    risks = path.risks(evalset)
    for index, ridge in enumerate(path.ridges):
        h = ref.ukkr_direct(train.points.tolist(), train.residuals.tolist(),
                            test.points.tolist(), 0.5, ridge)
        assert risks[index] == pytest.approx(ref.risk_loops(test.residuals, h), rel=1e-8)
        assert path.estimate(evalset, index) == pytest.approx(np.mean(np.diag(h)), rel=1e-8)


def test_ridge_constants_follow_the_documented_scaling():
    train, _ = small_problem("cce2")
    settings = Settings()
    fold = KernelFold(train, settings)
    n = train.n
    assert KkrPath(fold, (1e-3,), settings).ridges[0] == pytest.approx(1e-3 * n ** 1.5)
    assert UkkrPath(fold, (1e-3,), settings).ridges[0] == pytest.approx(1e-3 * n ** 0.75)


def test_low_rank_agrees_with_exact_spectrum_on_moderate_n():
    y, p = dirichlet_data(700, 4, seed=8)
    (problem,) = problems_for("cce2", y, p)
    train, test = problem.take(np.arange(500)), EvalSet("test", problem.take(np.arange(500, 700)))
    scales = (1e2, 1e-1, 1e-3, 1e-5)
    results = {}
    for spectrum in ("exact", "low_rank"):
        settings = Settings(spectrum=spectrum)
        fold = KernelFold(train, settings)
        kkr, ukkr = KkrPath(fold, scales, settings), UkkrPath(fold, scales, settings)
        results[spectrum] = (kkr.risks(test), ukkr.risks(test),
                             [kkr.estimate(test, i) for i in range(4)],
                             [ukkr.estimate(test, i) for i in range(4)])
    for exact, low in zip(results["exact"], results["low_rank"], strict=True):
        np.testing.assert_allclose(low, exact, rtol=1e-6, atol=1e-12)


def test_pivoted_cholesky_and_spectrum():
    rng = np.random.default_rng(9)
    x = rng.dirichlet(np.ones(3), 300)
    kernel = GaussianBlock(0.5)
    dense = gaussian(0.5).evaluate(x, x)
    np.testing.assert_allclose(kernel(x, x), dense, rtol=1e-13)
    rows, residual_trace = pivoted_cholesky(kernel, x, tolerance=1e-10, max_rank=300)
    difference = dense - rows.T @ rows
    assert np.diag(difference).max() <= 1e-10 and residual_trace == pytest.approx(
        np.trace(difference), abs=1e-12)
    assert np.linalg.eigvalsh(difference).min() > -1e-12  # the residual is PSD
    spectrum = kernel_spectrum(kernel, x, tolerance=1e-10)
    np.testing.assert_allclose(spectrum.vectors.T @ spectrum.vectors,
                               np.eye(spectrum.rank), atol=1e-8)
    exact = np.sort(np.linalg.eigvalsh(dense))[::-1][:20]
    np.testing.assert_allclose(spectrum.values[:20], exact, rtol=1e-8, atol=1e-9)
    capped = kernel_spectrum(kernel, x, tolerance=0.0, max_rank=5)
    assert capped.rank == 5 and capped.residual_trace > 0
    with pytest.raises(ValueError, match="unknown spectrum"):
        kernel_spectrum(kernel, x, method="svd")


def test_kernel_fold_keeps_only_the_retained_set():
    train, test = small_problem("cce2")
    fold = KernelFold(train, Settings())
    evalset, other = EvalSet("test", test), EvalSet("other", test)
    a, w = fold.projections(evalset)
    fold.retain(evalset)
    assert fold.vectors is None and fold.projections(evalset)[0] is a
    with pytest.raises(RuntimeError, match="released"):
        fold.projections(other)


def test_problem_take_and_outcomes():
    problem = Problem("x", np.array([[0.2], [0.9]]), np.array([[0.8], [-0.9]]), False)
    np.testing.assert_allclose(problem.outcomes, [[1.0], [0.0]])
    assert problem.take(np.array([1])).n == 1
