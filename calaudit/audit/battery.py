"""The battery: the stages an audit runs, in report order. Each global stage maps its
configuration section to the parameters of a statistics core function and returns its
results; a new family of checks is a core function and a stage here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from calaudit.audit.config import AuditConfig, SquaredConfig
from calaudit.audit.diagrams import DiagramsStage
from calaudit.audit.local_calibration import LocalCalibrationStage
from calaudit.audit.stages import Stage, StageOutput, ci_level, enabled_tests
from calaudit.audit.weighting import debiased_defined, information_scale
from calaudit.data.dataset import CalibrationData
from calaudit.inference.calibration_errors import (
    calibration_errors_of_rows,
    ece_variants_of_rows,
    smooth_ece_metric_of_rows,
)
from calaudit.inference.classical import (
    clinical_metrics,
    clinical_metrics_of_rows,
    hosmer_lemeshow,
    hosmer_lemeshow_of_rows,
    spiegelhalter,
    spiegelhalter_of_rows,
    spiegelhalter_result,
)
from calaudit.inference.consistency import ece_consistency_of_rows
from calaudit.inference.kuiper import kuiper_test_of_rows
from calaudit.inference.method import Computation
from calaudit.inference.skce_battery import SKCE_TESTS, skce_battery, skce_battery_of_rows
from calaudit.inference.weighted_skce_features import weighted_skce
from calaudit.metrics.row_summary import row_source


def stages() -> tuple[Stage, ...]:
    """Stages in report order."""
    return (CalibrationErrorStage(), EceFamilyStage(), SmoothEceStage(), ClinicalStage(),
            SkceStage(), SquaredErrorStage(), LocalCalibrationStage(), DiagramsStage())


class CalibrationErrorStage:
    """``ece``, ``mce``, ``brier`` and ``brier_binary`` (section ``binning``)."""

    name = "calibration_errors"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        options = dict(n_bins=config.binning.n_bins, strategy=config.binning.strategy,
                       ci_level=ci_level(config), n_resamples=config.n_resamples, rng=rng)
        return StageOutput(metrics=calibration_errors_of_rows(_rows(data, config), **options))


def _rows(data: CalibrationData, config: AuditConfig) -> Any:
    """The row source of ``data`` (:func:`calaudit.metrics.row_summary.row_source`: a
    dataset's tasks read their own rows; weighted rows carry the column ``w``)."""
    return row_source(data, config.binning.strategy)


class EceFamilyStage:
    """ECE variants, Brier decomposition, log loss; the ``ece_consistency`` and ``kuiper`` tests."""

    name = "ece_family"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        ci_rng, test_rng, kuiper_rng = rng.spawn(3)
        bins = {"n_bins": config.binning.n_bins, "strategy": config.binning.strategy}
        options = dict(**bins, canonical_distance=config.ece.canonical_distance,
                       classes=data.classes, ci_level=ci_level(config),
                       n_resamples=config.n_resamples, rng=ci_rng)
        tested = enabled_tests(config, ("ece_consistency",))
        metrics, tests = ece_variants_of_rows(_rows(data, config), **options,
                                       debiased=debiased_defined(data)), ()
        if tested:
            tests = (ece_consistency_of_rows(
                row_source(data, config.binning.strategy), weights=data.weights, **bins,
                n_resamples=config.n_resamples, alpha=config.alpha, rng=test_rng),)
        if enabled_tests(config, ("kuiper",)):
            tests += (kuiper_test_of_rows(row_source(data), len(data.classes),
                                          n_resamples=config.n_resamples, rng=kuiper_rng),)
        return StageOutput(metrics=metrics, tests=tests)


class SmoothEceStage:
    """``smece`` and the smoothed reliability diagram."""

    name = "smooth_ece"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        options = dict(ci_level=ci_level(config), n_resamples=config.n_resamples, rng=rng)
        metric, diagram = smooth_ece_metric_of_rows(_rows(data, config), len(data.classes),
                                                    **options)
        # weighted rows: the diagrams stage draws the weighted curve
        return StageOutput(metrics=(metric,), diagrams={} if data.sample_weight is not None
                           else {"smooth_reliability": diagram})


class ClinicalStage:
    """Calibration-in-the-large and slope, Spiegelhalter, Hosmer-Lemeshow (binary only)."""

    name = "clinical"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        if not data.is_binary:
            return StageOutput()
        if getattr(data, "rows", None) is not None:
            return self.of_rows(data, config, rng)
        y, p, weights = data.y_true, data.positive_proba, data.weights
        metrics = clinical_metrics(
            y, p, ci_level=config.ci_level, rng=rng,
            ci_resamples=config.n_resamples if ci_level(config) is not None else None,
            sample_weight=data.sample_weight, information_scale=information_scale(data))
        tests = {"spiegelhalter": lambda: spiegelhalter(y, p, weights),
                 "hosmer_lemeshow": lambda: hosmer_lemeshow(
                     y, p, config.global_tests.hosmer_lemeshow_groups, weights,
                     config.n_resamples, rng, config.alpha)}
        return StageOutput(metrics=metrics, tests=tuple(
            tests[t]() for t in enabled_tests(config, tuple(tests))))


    @staticmethod
    def of_rows(data: Any, config: AuditConfig, rng: np.random.Generator) -> StageOutput:
        """The stage on a dataset whose tasks read their own rows
        (:class:`calaudit.data.planned.RowsData`): the same reductions over the source
        (Hosmer-Lemeshow's breaks too: exact order statistics; the bootstrap's counts
        drawn by the tasks)."""
        rows, n = data.rows, data.n
        metrics = clinical_metrics_of_rows(
            rows, n, int(data.counts[1]), data.clipped, ci_level=config.ci_level, rng=rng,
            ci_resamples=config.n_resamples if ci_level(config) is not None else None)
        tests = {"spiegelhalter": lambda: spiegelhalter_result(
                     spiegelhalter_of_rows(rows, n), n, data.expected),
                 "hosmer_lemeshow": lambda: hosmer_lemeshow_of_rows(
                     rows, n, config.global_tests.hosmer_lemeshow_groups)}
        return StageOutput(metrics=metrics, tests=tuple(
            tests[t]() for t in enabled_tests(config, tuple(tests))))


class SkceStage:
    """SKCE estimates and tests (section ``skce``)."""

    name = "skce"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        skce = config.skce
        if data.weights is not None:
            metrics, tests = weighted_skce(
                data.y_true, data.y_proba, data.weights, data.sample_weight,
                kernel=skce.kernel, bandwidth=skce.bandwidth,
                max_quadratic_n=skce.max_quadratic_n, n_features=config.n_features,
                tests=enabled_tests(config, SKCE_TESTS), n_resamples=config.n_resamples,
                alpha=config.alpha, rng=rng)
            return StageOutput(metrics=metrics, tests=tests)
        options = dict(kernel=skce.kernel, bandwidth=skce.bandwidth,
                       blocksize=skce.blocksize, max_quadratic_n=skce.max_quadratic_n,
                       tests=enabled_tests(config, SKCE_TESTS),
                       n_resamples=config.n_resamples, alpha=config.alpha,
                       ci_level=ci_level(config),
                       computation=Computation(config.method, config.n_features,
                                               config.exact_budget_seconds), rng=rng)
        if getattr(data, "rows", None) is not None:
            battery = skce_battery_of_rows(data.rows, classes=len(data.classes), **options)
        else:
            battery = skce_battery(data.y_proba, data.residuals, **options)
        return StageOutput(metrics=battery.metrics, tests=battery.tests)


def squared_settings(config: SquaredConfig):
    """The estimator settings of :mod:`calaudit.squared` for this configuration."""
    from calaudit.squared.fitting import Settings

    return Settings(kernel_gamma=config.kernel_gamma,
                    kkr_lambda_exponent=config.kkr_lambda_exponent,
                    ukkr_lambda_exponent=config.ukkr_lambda_exponent,
                    spectrum=config.spectrum, rank_tolerance=config.rank_tolerance,
                    max_rank=config.max_rank)


class SquaredErrorStage:
    """``tce2``, ``cwce2``, ``cce2`` by cross-validated estimator selection (off by default)."""

    name = "squared_errors"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        squared = config.squared
        if not squared.enabled or not squared.targets:
            return StageOutput()
        from calaudit.squared.api import squared_metrics

        return StageOutput(metrics=tuple(squared_metrics(
            data.y_true, data.y_proba, targets=squared.targets, estimators=squared.estimators,
            n_folds=squared.n_folds, test_fraction=squared.test_fraction,
            grid_sizes=squared.grid_sizes(), settings=squared_settings(squared),
            max_rows=squared.max_rows, seed=config.seed, rng=rng, weights=data.weights,
            sample_weight=data.sample_weight)))
