"""Stage: the data behind the reliability diagrams of the reports.

The report layer never recomputes statistics, so everything it draws is computed here
(``docs/result-schema.md``, section ``diagrams``):

* ``reliability``: the binned points with Wilson intervals (binary notion for two
  classes, top-label otherwise; the ECE's bins), the consistency band of a calibrated
  model (:mod:`calaudit.metrics.consistency`, labels redrawn from the predictions) and
  a histogram of the scores;
* ``reliability_per_class`` (multi-class only): the one-vs-rest bins of every class
  ``k`` (score ``p_ik``, outcome ``1{y_i = k}``), each with its consistency band.

The consistency bands are resampling, so they are computed only when the audit runs
tests (``calaudit test``); ``calaudit metrics`` records ``consistency_band: null``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.audit.config import AuditConfig
from calaudit.audit.stages import StageOutput
from calaudit.data.dataset import CalibrationData
from calaudit.metrics.consistency import consistency_band
from calaudit.metrics.ece import default_notion, scores_and_outcomes
from calaudit.metrics.reliability import reliability_bins
from calaudit.numerics.binning import bin_index

#: Level of the consistency bands (pointwise, per bin).
BAND_LEVEL = 0.95
#: Equal-width bins of the score histogram on [0, 1].
HISTOGRAM_BINS = 50


def score_histogram(scores: NDArray[np.float64], n_bins: int = HISTOGRAM_BINS
                    ) -> dict[str, list[float] | list[int]]:
    """Counts of ``scores`` in ``n_bins`` equal-width, right-closed bins on [0, 1]
    (0 in the first bin, as every binned estimator here)."""
    index, edges = bin_index(scores, n_bins, "uniform")
    counts = np.bincount(index, minlength=n_bins)
    return {"edges": edges.tolist(), "counts": counts.astype(np.int64).tolist()}


class DiagramsStage:
    """Reliability bins, consistency bands and histograms for the reports."""

    name = "diagrams"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        notion = default_notion(data.n_classes)
        scores, outcomes = scores_and_outcomes(data.y_true, data.y_proba, notion)
        reliability: dict[str, Any] = {
            "notion": notion, "n_bins": config.binning.n_bins,
            "binning": config.binning.strategy,
            **self._panel(scores, outcomes, config, rng),
            "histogram": score_histogram(scores),
        }
        diagrams: dict[str, Any] = {"reliability": reliability}
        if not data.is_binary:
            diagrams["reliability_per_class"] = [
                {"class": name,
                 **self._panel(data.y_proba[:, k], (data.y_true == k).astype(np.float64),
                               config, rng)}
                for k, name in enumerate(data.classes)
            ]
        return StageOutput(diagrams=diagrams)

    @staticmethod
    def _panel(scores: NDArray[np.float64], outcomes: NDArray[np.float64],
               config: AuditConfig, rng: np.random.Generator) -> dict[str, Any]:
        """``bins`` and ``consistency_band`` of one reliability diagram."""
        binning = config.binning
        bins = reliability_bins(scores, outcomes, n_bins=binning.n_bins,
                                strategy=binning.strategy)
        band = None
        if config.run_tests:
            band = consistency_band(scores, n_bins=binning.n_bins, strategy=binning.strategy,
                                    n_resamples=config.n_resamples, level=BAND_LEVEL,
                                    rng=rng).to_dict()
        return {"bins": bins.to_dict(), "consistency_band": band}
