"""Stage: clinical calibration measures and classical tests (binary data only).

Metrics ``calibration_in_the_large`` and ``calibration_slope`` (logistic recalibration,
Wald intervals; with ``--ci`` percentile bootstrap intervals instead, the Wald interval
kept in ``params.wald_ci``); tests ``spiegelhalter`` (two-sided) and, when enabled,
``hosmer_lemeshow`` (:mod:`calaudit.metrics.clinical`, :mod:`calaudit.inference.classical`).
Multi-class data produce nothing here.
"""

from __future__ import annotations

import math

import numpy as np

from calaudit.audit.config import AuditConfig
from calaudit.audit.stages import StageOutput
from calaudit.data.dataset import CalibrationData
from calaudit.inference import applicability as rules
from calaudit.inference.bootstrap_ci import bootstrap_replicates, intervals
from calaudit.inference.classical import hosmer_lemeshow_test, spiegelhalter_test
from calaudit.metrics.clinical import CLIP as LOGIT_CLIP
from calaudit.metrics.clinical import logistic_recalibration, recalibration_replicates
from calaudit.numerics.row_blocks import executor_of
from calaudit.results import MetricResult, Status, TestResult


class ClinicalStage:
    """Calibration-in-the-large, calibration slope, Spiegelhalter, Hosmer-Lemeshow."""

    name = "clinical"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        if not data.is_binary:
            return StageOutput()
        y, p = data.y_true, data.positive_proba
        metrics = self._metrics(y, p, config, rng)
        tests: list[TestResult] = []
        if config.run_tests and config.global_tests.enabled("spiegelhalter"):
            tests.append(spiegelhalter(y, p, executor_of(config)))
        if config.run_tests and config.global_tests.enabled("hosmer_lemeshow"):
            tests.append(hosmer_lemeshow(y, p, config.global_tests.hosmer_lemeshow_groups,
                                         executor_of(config)))
        return StageOutput(metrics=metrics, tests=tuple(tests))

    @staticmethod
    def _metrics(y, p, config: AuditConfig, rng: np.random.Generator
                 ) -> tuple[MetricResult, ...]:
        both_classes = 0 < int(y.sum()) < y.size
        # the fits' row sums are reductions over fixed ranges on the run's executor (no
        # BLAS in their partials, so the same bytes in this process and on Dask workers)
        executor = executor_of(config)
        fit = logistic_recalibration(y, p, executor) if both_classes else None
        level = config.ci_level
        boot = {}
        if fit is not None and config.ci and config.run_tests:
            def statistics(weights):
                citl, slope = recalibration_replicates(y.astype(np.float64), p, weights,
                                                       executor)
                return {"citl": citl, "slope": slope}
            boot = intervals(bootstrap_replicates(statistics, y.size, rng, config.n_resamples,
                                                  max_entries=4_000_000), level)
        out = []
        for metric_id, key, title in (
            ("calibration_in_the_large", "citl", "Calibration-in-the-large (logistic intercept)"),
            ("calibration_slope", "slope", "Calibration slope (logistic recalibration)"),
        ):
            if fit is None:
                out.append(MetricResult(metric_id, math.nan,
                                        {"note": "needs both outcome classes"}, title=title))
                continue
            value = fit.citl if key == "citl" else fit.slope
            se = fit.citl_se if key == "citl" else fit.slope_se
            wald = fit.interval(key, level)
            params = {"se": se, "ci_level": level, "logit_clip": LOGIT_CLIP,
                      "clipped_rows": fit.clipped,
                      "model": ("logit P(y=1) = a + logit(p)" if key == "citl"
                                else "logit P(y=1) = a + b logit(p)")}
            if key == "slope":
                params["intercept"] = fit.slope_intercept
            if boot:
                params.update(ci_method="percentile bootstrap", wald_ci=wald,
                              ci_resamples=config.n_resamples)
                ci = boot.get(key)
            else:
                params["ci_method"] = "wald"
                ci = wald
            out.append(MetricResult(metric_id, value, params, ci=ci, title=title))
        return tuple(out)


def spiegelhalter(y, p, executor=None) -> TestResult:
    """Spiegelhalter's z test, INCONCLUSIVE under the rules of ``applicability``; its sums
    a reduction run by ``executor``."""
    method, title = "Spiegelhalter z, two-sided normal", "Spiegelhalter's z test"
    result = spiegelhalter_test(y, p, executor)
    # (1 - p).sum() without the n-row difference: numpy's own pairwise additions
    reason = rules.too_few_rows(y.size) or rules.too_few_expected(
        float(p.sum()), float(np.add.reduce(1 - p)))
    if reason is None and not math.isfinite(result.z):
        reason = "zero variance: every prediction is 0, 1/2 or 1"
    params = {"variance": result.variance}
    if reason:
        return TestResult("spiegelhalter", result.z, result.z, math.nan, method, params=params,
                          status=Status.INCONCLUSIVE, message=reason, title=title)
    return TestResult("spiegelhalter", result.z, result.z, result.p_value, method,
                      params=params, title=title)


def hosmer_lemeshow(y, p, groups: int, executor=None) -> TestResult:
    """Hosmer-Lemeshow test with the validity rules of ``applicability``; its breaks and
    group sums are reductions run by ``executor``."""
    method = f"Hosmer-Lemeshow chi-square, {groups} quantile groups, df = G - 2"
    title = "Hosmer-Lemeshow test"
    result = hosmer_lemeshow_test(y, p, groups, executor)
    expected = result.expected
    params = {"groups_requested": groups, "groups": int(expected.shape[0]), "df": result.df,
              "caveat": "depends on the grouping; low power; see documentation"}
    reason = rules.too_few_rows(y.size)
    if reason is None and result.df < 1:
        reason = f"only {expected.shape[0]} distinct groups: df = G - 2 < 1"
    if reason is None and (expected.min() < 1 or np.mean(expected < 5) > 0.2):
        reason = ("expected counts too small for the chi-square approximation "
                  f"(min {expected.min():.3g}, {np.mean(expected < 5):.0%} of cells below 5)")
    if reason:
        return TestResult("hosmer_lemeshow", result.statistic, result.statistic, math.nan,
                          method, params=params, status=Status.INCONCLUSIVE, message=reason,
                          title=title)
    return TestResult("hosmer_lemeshow", result.statistic, result.statistic, result.p_value,
                      method, params=params, title=title)
