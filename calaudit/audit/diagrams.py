"""Stage: the data behind the reports' reliability diagrams
(:func:`calaudit.metrics.diagrams.reliability_diagrams_of_rows`: a dataset's tasks read
their own rows); the consistency bands only when
the audit runs tests (``calaudit metrics`` records ``consistency_band: null``)."""

from __future__ import annotations

import numpy as np

from calaudit.audit.config import AuditConfig
from calaudit.audit.stages import StageOutput
from calaudit.data.dataset import CalibrationData
from calaudit.inference.weighted_diagrams import weighted_reliability
from calaudit.metrics.diagrams import reliability_diagrams_of_rows
from calaudit.metrics.row_summary import row_source


class DiagramsStage:
    """Reliability bins, consistency bands and histograms for the reports."""

    name = "diagrams"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        if data.weights is not None:  # the panels of weighted rows
            return StageOutput(diagrams=weighted_reliability(
                data.y_true, data.y_proba, data.weights, data.sample_weight,
                n_bins=config.binning.n_bins, strategy=config.binning.strategy,
                band_resamples=config.n_resamples if config.run_tests else None, rng=rng,
                classes=data.classes))
        return StageOutput(diagrams=reliability_diagrams_of_rows(
            row_source(data, config.binning.strategy), n_bins=config.binning.n_bins,
            strategy=config.binning.strategy, classes=data.classes,
            band_resamples=config.n_resamples if config.run_tests else None, rng=rng))
