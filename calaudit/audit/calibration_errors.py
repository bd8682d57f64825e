"""Stage: binned calibration errors and the Brier score (the first battery).

Metrics ``ece`` and ``mce`` (binary notion for two classes, top-label otherwise; 15
equal-width bins by default), ``brier`` (summed over classes) and, for binary data,
``brier_binary`` (scikit-learn's convention). The same bins, drawn in the reports, are
recorded by the diagrams stage (:mod:`calaudit.audit.diagrams`). With ``--ci`` every
metric gets a percentile bootstrap interval (bins fixed at the full-data bins; see
:mod:`calaudit.inference.bootstrap_ci`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from calaudit.audit.config import AuditConfig
from calaudit.audit.stages import StageOutput
from calaudit.data.dataset import CalibrationData
from calaudit.inference.bootstrap_ci import bootstrap_replicates, intervals
from calaudit.metrics.binned import BinnedOutcomes, ece_from_sums, mce_from_sums
from calaudit.metrics.brier import brier_score, brier_score_binary
from calaudit.metrics.ece import default_notion, notion_outcomes
from calaudit.results import MetricResult


class CalibrationErrorStage:
    """ECE, MCE and Brier score."""

    name = "calibration_errors"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        notion = default_notion(data.n_classes)
        binning = config.binning
        # the Brier scores first: their (n, m) residual copy is freed before the bins
        brier = brier_score(data.y_true, data.y_proba)
        binary = brier_score_binary(data.y_true, data.y_proba) if data.is_binary else None
        binned = notion_outcomes(data.y_true, data.y_proba, n_bins=binning.n_bins,
                                 strategy=binning.strategy, notion=notion)
        sums = binned.sums()
        params = {"notion": notion, "n_bins": binning.n_bins, "binning": binning.strategy,
                  "distance": "L1", "bins_used": int((sums.count > 0).sum())}
        metrics = [
            MetricResult("ece", float(ece_from_sums(sums)), params,
                         title=f"Expected calibration error ({notion})"),
            MetricResult("mce", float(mce_from_sums(sums)), params,
                         title=f"Maximum calibration error ({notion})"),
            MetricResult("brier", brier,
                         {"definition": "mean squared error of the probability vector"},
                         title="Brier score (summed over classes)"),
        ]
        if data.is_binary:
            metrics.append(MetricResult(
                "brier_binary", binary,
                {"definition": "mean (p - y)^2 of the positive class (scikit-learn)"},
                title="Brier score (binary, scikit-learn convention)"))
        if config.ci and config.run_tests:
            metrics = with_intervals(metrics, data, binned, config, rng)
        return StageOutput(metrics=tuple(metrics))


def with_intervals(metrics: list[MetricResult], data: CalibrationData,
                   scalar: BinnedOutcomes, config: AuditConfig,
                   rng: np.random.Generator) -> list[MetricResult]:
    """The same metrics with percentile bootstrap intervals (one set of resamples; the
    bins of ``scalar`` stay fixed at the full-data bins)."""
    squared = ((data.residuals ** 2).sum(axis=1))
    binary = (data.y_proba[:, 1] - (data.y_true == 1)) ** 2 if data.is_binary else None

    def statistics(weights):
        sums = scalar.sums(weights)
        total = weights.sum(axis=0)
        out = {"ece": ece_from_sums(sums), "mce": mce_from_sums(sums),
               "brier": squared @ weights / total}
        if binary is not None:
            out["brier_binary"] = binary @ weights / total
        return out

    cis = intervals(bootstrap_replicates(statistics, data.n, rng, config.n_resamples),
                    config.ci_level)
    extra = {"ci_method": "percentile bootstrap", "ci_level": config.ci_level,
             "ci_resamples": config.n_resamples}
    return [dataclasses.replace(m, ci=cis.get(m.id), params={**m.params, **extra})
            for m in metrics]
