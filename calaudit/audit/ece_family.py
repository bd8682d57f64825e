"""Stage: ECE variants, Brier decomposition, log loss and the ECE consistency test.

Metrics ``ece_l2``, ``ece_classwise``, ``ece_canonical``, ``ece_debiased``,
``brier_reliability`` / ``brier_resolution`` / ``brier_uncertainty`` and ``log_loss``
(:mod:`calaudit.metrics.ece_variants`, :mod:`calaudit.metrics.brier_decomposition`,
:mod:`calaudit.metrics.log_loss`); test ``ece_consistency`` on the default ``ece``
(binary or top-label, configured bins; :mod:`calaudit.inference.consistency`). With
``--ci`` every metric gets a percentile bootstrap interval, all from the same resamples.
"""

from __future__ import annotations

import math

import numpy as np

from calaudit.audit.config import AuditConfig
from calaudit.audit.stages import StageOutput
from calaudit.data.dataset import CalibrationData
from calaudit.inference import applicability as rules
from calaudit.inference.bootstrap_ci import bootstrap_replicates, intervals
from calaudit.inference.consistency import ece_consistency_test
from calaudit.metrics.binned import debiased_squared_from_sums, ece_from_sums
from calaudit.metrics.brier_decomposition import decompose_binned, sum_decompositions
from calaudit.metrics.ece import default_notion
from calaudit.metrics.ece_variants import (
    CanonicalBins,
    classwise_from_outcomes,
    classwise_outcomes,
    notion_outcomes,
)
from calaudit.metrics.log_loss import EPS, clipped_rows, log_loss
from calaudit.results import MetricResult, Status, TestResult

TITLES = {
    "ece_l2": "l2 calibration error ({notion})",
    "ece_classwise": "Class-wise ECE (one-vs-rest, averaged)",
    "ece_canonical": "Canonical ECE (per-dimension grid)",
    "ece_debiased": "Debiased l2 calibration error ({notion})",
    "brier_reliability": "Brier reliability (calibration term)",
    "brier_resolution": "Brier resolution",
    "brier_uncertainty": "Brier uncertainty",
    "log_loss": "Log loss",
}


class EceFamilyStage:
    """ECE variants, Brier decomposition, log loss; ECE consistency test."""

    name = "ece_family"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        ci_rng, test_rng = rng.spawn(2)
        binning = config.binning
        notion = default_notion(data.n_classes)
        bins = {"n_bins": binning.n_bins, "binning": binning.strategy}
        scalar = notion_outcomes(data.y_true, data.y_proba, n_bins=binning.n_bins,
                                 strategy=binning.strategy)
        # the per-class bins and the canonical grid are freed before the test runs
        metrics = self._metrics(data, config, scalar, notion, ci_rng)
        tests = ()
        if config.run_tests and config.global_tests.enabled("ece_consistency"):
            tests = (ece_test(scalar, notion, config, test_rng, bins),)
        return StageOutput(metrics=metrics, tests=tests)

    @staticmethod
    def _metrics(data: CalibrationData, config: AuditConfig, scalar, notion: str,
                 ci_rng: np.random.Generator) -> tuple[MetricResult, ...]:
        """Every metric (and its interval with ``--ci``)."""
        binning = config.binning
        y, probs = data.y_true, data.y_proba
        if data.is_binary:
            # class 1 one-vs-rest is the binary notion's bins and outcomes: shared, not
            # built twice (the same arrays, so the same bytes)
            per_class = (*classwise_outcomes(y, probs[:, :1], n_bins=binning.n_bins,
                                             strategy=binning.strategy), scalar)
        else:
            per_class = classwise_outcomes(y, probs, n_bins=binning.n_bins,
                                           strategy=binning.strategy)
        canonical = CanonicalBins.build(y, probs, binning.n_bins)
        decomposed = per_class[1:] if data.is_binary else per_class
        distance = config.ece.canonical_distance

        def statistics(weights):
            sums = scalar.sums(weights)
            parts = sum_decompositions([decompose_binned(b, weights) for b in decomposed])
            return {
                "ece_l2": ece_from_sums(sums, "l2"),
                "ece_classwise": classwise_from_outcomes(per_class, "l1", weights),
                "ece_canonical": canonical.ece(distance, weights),
                "ece_debiased": np.sqrt(np.maximum(debiased_squared_from_sums(sums), 0.0)),
                "brier_reliability": parts.reliability,
                "brier_resolution": parts.resolution,
                "brier_uncertainty": parts.uncertainty,
                "log_loss": log_loss(y, probs, weights=weights),
            }

        values = {k: float(v) for k, v in statistics(None).items()}
        parts = sum_decompositions([decompose_binned(b) for b in decomposed])
        per_class_ece = [float(ece_from_sums(b.sums())) for b in per_class]
        bins = {"n_bins": binning.n_bins, "binning": binning.strategy}
        params = {
            "ece_l2": {**bins, "notion": notion, "distance": "L2"},
            "ece_classwise": {**bins, "notion": "class-wise", "distance": "L1",
                              "per_class": dict(zip(data.classes, per_class_ece, strict=True))},
            "ece_canonical": {"n_bins_per_class": binning.n_bins, "binning": "uniform grid",
                              "distance": distance.upper(),
                              "cells_used": canonical.cells.n_cells,
                              "bin_rule": "ceil(n_bins * p), p = 0 in the first bin"},
            "ece_debiased": {**bins, "notion": notion,
                             "squared": float(debiased_squared_from_sums(scalar.sums()))},
            "log_loss": {"eps": EPS, "clipped_rows": clipped_rows(y, probs)},
        }
        decomposition = {**bins, "decomposes": "brier_binary" if data.is_binary else "brier",
                         "within_bin_variance": parts.within_variance,
                         "within_bin_covariance": parts.within_covariance}
        for key in ("brier_reliability", "brier_resolution", "brier_uncertainty"):
            params[key] = decomposition
        cis: dict = {}
        if config.ci and config.run_tests:
            cis = intervals(bootstrap_replicates(statistics, data.n, ci_rng, config.n_resamples),
                            config.ci_level)
        return tuple(
            MetricResult(key, values[key], with_ci_params(params[key], config, key in cis),
                         ci=cis.get(key), title=TITLES[key].format(notion=notion))
            for key in values)


def with_ci_params(params: dict, config: AuditConfig, has_ci: bool) -> dict:
    """Record how an interval was made."""
    if not has_ci:
        return params
    return {**params, "ci_method": "percentile bootstrap", "ci_level": config.ci_level,
            "ci_resamples": config.n_resamples}


def ece_test(scalar, notion: str, config: AuditConfig, rng: np.random.Generator,
             bins: dict) -> TestResult:
    """Consistency resampling test of the default ``ece``."""
    test_id, n = "ece_consistency", scalar.scores.size
    method = "consistency resampling: outcomes redrawn from the predictions"
    title = f"ECE consistency resampling test ({notion})"
    observed = float(ece_from_sums(scalar.sums()))
    params = {**bins, "notion": notion, "distance": "L1"}
    reason = rules.too_few_rows(n) or rules.resampling_cannot_reject(config.n_resamples,
                                                                     config.alpha)
    if reason:
        return TestResult(test_id, math.nan, observed, math.nan, method, params=params,
                          status=Status.INCONCLUSIVE, message=reason, title=title)
    result = ece_consistency_test(scalar, scalar.scores, observed, rng, config.n_resamples)
    return TestResult(test_id, observed, observed, result.p_value, method,
                      n_resamples=config.n_resamples, params=params,
                      null_distribution=result.null_distribution, title=title)
