"""Stage: the data behind the reports' reliability diagrams
(:func:`calaudit.metrics.diagrams.reliability_diagrams`); the consistency bands only when
the audit runs tests (``calaudit metrics`` records ``consistency_band: null``)."""

from __future__ import annotations

import numpy as np

from calaudit.audit.config import AuditConfig
from calaudit.audit.stages import StageOutput
from calaudit.data.dataset import CalibrationData
from calaudit.metrics.diagrams import reliability_diagrams


class DiagramsStage:
    """Reliability bins, consistency bands and histograms for the reports."""

    name = "diagrams"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        if data.weights is not None:  # not weighted yet: left out (data.weights.not_weighted)
            return StageOutput()
        return StageOutput(diagrams=reliability_diagrams(
            data.y_true, data.y_proba, n_bins=config.binning.n_bins,
            strategy=config.binning.strategy, classes=data.classes,
            band_resamples=config.n_resamples if config.run_tests else None, rng=rng))
