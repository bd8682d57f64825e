"""Stage: binned calibration errors and the Brier score (the first battery).

Metrics ``ece`` and ``mce`` (binary notion for two classes, top-label otherwise; 15
equal-width bins by default), ``brier`` (summed over classes) and, for binary data,
``brier_binary`` (scikit-learn's convention). The same bins, drawn in the reports, are
recorded by the diagrams stage (:mod:`calaudit.audit.diagrams`).
"""

from __future__ import annotations

import numpy as np

from calaudit.audit.config import AuditConfig
from calaudit.audit.stages import StageOutput
from calaudit.data.dataset import CalibrationData
from calaudit.metrics.brier import brier_score, brier_score_binary
from calaudit.metrics.ece import binned_calibration, default_notion, ece_from_bins, mce_from_bins
from calaudit.results import MetricResult


class CalibrationErrorStage:
    """ECE, MCE and Brier score."""

    name = "calibration_errors"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        notion = default_notion(data.n_classes)
        binning = config.binning
        bins = binned_calibration(data.y_true, data.y_proba, n_bins=binning.n_bins,
                                  strategy=binning.strategy, notion=notion)
        params = {"notion": notion, "n_bins": binning.n_bins, "binning": binning.strategy,
                  "distance": "L1", "bins_used": int(bins.count.size)}
        metrics = [
            MetricResult("ece", ece_from_bins(bins), params,
                         title=f"Expected calibration error ({notion})"),
            MetricResult("mce", mce_from_bins(bins), params,
                         title=f"Maximum calibration error ({notion})"),
            MetricResult("brier", brier_score(data.y_true, data.y_proba),
                         {"definition": "mean squared error of the probability vector"},
                         title="Brier score (summed over classes)"),
        ]
        if data.is_binary:
            metrics.append(MetricResult(
                "brier_binary", brier_score_binary(data.y_true, data.y_proba),
                {"definition": "mean (p - y)^2 of the positive class (scikit-learn)"},
                title="Brier score (binary, scikit-learn convention)"))
        return StageOutput(metrics=tuple(metrics))
