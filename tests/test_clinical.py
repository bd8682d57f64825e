"""Logistic recalibration, Spiegelhalter and Hosmer-Lemeshow against loop references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special, stats

from calaudit.inference.classical import hosmer_lemeshow_test, spiegelhalter_test
from calaudit.metrics.clinical import logistic_recalibration, recalibration_replicates
from calaudit.numerics.resampling import bootstrap_counts
from tests import reference_global as ref


def binary(n=300, seed=0, shift=0.3, scale=0.7):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 3, size=n)
    true = special.expit(shift + scale * special.logit(p))
    return (rng.random(n) < true).astype(int), p


def test_recalibration_matches_newton_loops_and_scipy():
    y, p = binary()
    fit = logistic_recalibration(y, p)
    logit = special.logit(p).tolist()
    (citl,), cov = ref.logistic_newton([[1.0] * y.size], logit, y.tolist())
    assert fit.citl == pytest.approx(citl, rel=1e-9)
    assert fit.citl_se == pytest.approx(math.sqrt(cov[0, 0]), rel=1e-9)
    (a, b), cov2 = ref.logistic_newton([[1.0] * y.size, logit], [0.0] * y.size, y.tolist())
    assert fit.slope == pytest.approx(b, rel=1e-9)
    assert fit.slope_intercept == pytest.approx(a, rel=1e-9, abs=1e-12)
    assert fit.slope_se == pytest.approx(math.sqrt(cov2[1, 1]), rel=1e-9)

    def nll(beta):
        eta = beta[0] + beta[1] * np.array(logit)
        return -np.sum(y * eta - np.logaddexp(0, eta))

    best = optimize.minimize(nll, [0.0, 1.0], method="BFGS", options={"gtol": 1e-10})
    assert fit.slope == pytest.approx(best.x[1], rel=1e-5)
    interval = fit.interval("slope", 0.95)
    z = stats.norm.ppf(0.975)
    assert interval == pytest.approx((b - z * math.sqrt(cov2[1, 1]), b + z * math.sqrt(cov2[1, 1])))


def test_perfectly_calibrated_probabilities_give_ideal_values_on_average():
    y, p = binary(n=20000, seed=1, shift=0.0, scale=1.0)
    fit = logistic_recalibration(y, p)
    assert abs(fit.citl) < 3 * fit.citl_se
    assert abs(fit.slope - 1) < 3 * fit.slope_se


def test_replicates_equal_fits_on_resampled_rows():
    y, p = binary(n=120, seed=2)
    counts = bootstrap_counts(np.random.default_rng(0), 120, 3)
    citl, slope = recalibration_replicates(y.astype(float), p, counts)
    for b in range(3):
        rows = np.repeat(np.arange(120), counts[:, b].astype(int))
        fit = logistic_recalibration(y[rows], p[rows])
        assert citl[b] == pytest.approx(fit.citl, rel=1e-8, abs=1e-10)
        assert slope[b] == pytest.approx(fit.slope, rel=1e-8)


def test_separation_gives_nan_not_a_number_that_looks_fine():
    p = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    y = np.array([0, 0, 0, 1, 1, 1])
    fit = logistic_recalibration(y, p)
    assert math.isnan(fit.slope)
    assert fit.interval("slope", 0.95) is None


def test_spiegelhalter_matches_loops():
    y, p = binary(n=200, seed=3)
    z = ref.spiegelhalter_loops(y.tolist(), p.tolist())
    result = spiegelhalter_test(y, p)
    assert result.z == pytest.approx(z, rel=1e-12)
    assert result.p_value == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-12)
    assert math.isnan(spiegelhalter_test(np.array([0, 1]), np.array([0.5, 0.5])).z)


@pytest.mark.parametrize("groups", [5, 10])
def test_hosmer_lemeshow_matches_loops(groups):
    y, p = binary(n=500, seed=4)
    chisq, df = ref.hosmer_lemeshow_loops(y.tolist(), p.tolist(), groups)
    result = hosmer_lemeshow_test(y, p, groups)
    assert result.statistic == pytest.approx(chisq, rel=1e-12)
    assert result.df == df == groups - 2
    assert result.p_value == pytest.approx(stats.chi2.sf(chisq, df), rel=1e-12)


def test_hosmer_lemeshow_realised_groups_with_ties():
    p = np.repeat([0.1, 0.2, 0.3, 0.6], 50)
    y = (np.random.default_rng(0).random(200) < p).astype(int)
    chisq, df = ref.hosmer_lemeshow_loops(y.tolist(), p.tolist(), 10)
    result = hosmer_lemeshow_test(y, p, 10)
    assert result.df == df
    assert result.statistic == pytest.approx(chisq, rel=1e-12)


def test_classical_tests_inconclusive_rules():
    from calaudit.inference.classical import hosmer_lemeshow, spiegelhalter
    from calaudit.results import Status

    rng = np.random.default_rng(0)
    rare = rng.random(300) * 0.02          # about 3 expected events
    y = (rng.random(300) < rare).astype(int)
    assert spiegelhalter(y, rare).status == Status.INCONCLUSIVE
    assert hosmer_lemeshow(y, rare, 10).status == Status.INCONCLUSIVE
    p = rng.random(2000)
    y = (rng.random(2000) < p).astype(int)
    assert spiegelhalter(y, p).status is None       # pending: graded by the gate
    assert hosmer_lemeshow(y, p, 10).status is None


def test_the_logit_clip_is_in_the_metrics_params_and_decides_extreme_rows():
    """calibration_in_the_large and calibration_slope state the clip applied before the
    logit (1e-12) and how many rows it moved; predictions of exactly 0 and 1 are kept and
    clipped, so the slope is the fit on clipped logits (a 1e-7 clip gives another)."""
    from calaudit.inference.classical import clinical_metrics
    from calaudit.metrics.clinical import CLIP

    rng = np.random.default_rng(5)
    p = np.concatenate([rng.uniform(0.05, 0.95, 400), np.zeros(20), np.ones(20),
                        np.full(20, 1e-14)])
    y = (rng.random(p.size) < np.clip(p, 0.02, 0.98)).astype(int)
    metrics = {m.id: m for m in clinical_metrics(y, p)}
    for metric_id in ("calibration_in_the_large", "calibration_slope"):
        params = metrics[metric_id].params
        assert params["logit_clip"] == CLIP == 1e-12
        assert params["clipped_rows"] == 60
    clipped = special.logit(np.clip(p, 1e-12, 1 - 1e-12))
    loose = special.logit(np.clip(p, 1e-7, 1 - 1e-7))
    fit = logistic_recalibration(y, p)
    assert metrics["calibration_slope"].value == pytest.approx(fit.slope, rel=1e-12)
    assert fit.slope == pytest.approx(_logistic_slope(y, clipped), rel=1e-6)
    assert abs(_logistic_slope(y, loose) - fit.slope) > 1e-3  # the convention matters


def _logistic_slope(y: np.ndarray, x: np.ndarray) -> float:
    """Slope of a logistic regression of ``y`` on ``x`` with intercept (scipy optimiser)."""
    def loss(beta):
        eta = beta[0] + beta[1] * x
        return float(np.sum(np.logaddexp(0.0, eta) - y * eta))

    return float(optimize.minimize(loss, np.array([0.0, 1.0]), method="BFGS",
                                   options={"gtol": 1e-10}).x[1])
