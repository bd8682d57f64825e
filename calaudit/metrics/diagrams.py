"""The data behind the reliability diagrams of the reports (``docs/result-schema.md``,
section ``diagrams``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.metrics.consistency import consistency_band
from calaudit.metrics.ece import default_notion, scores_and_outcomes
from calaudit.metrics.reliability import reliability_bins
from calaudit.numerics.binning import Strategy, bin_index

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


def reliability_diagrams(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *,
                         n_bins: int = 15, strategy: Strategy = "uniform",
                         classes: Sequence[str] | None = None,
                         band_resamples: int | None = None,
                         rng: np.random.Generator | None = None) -> dict[str, Any]:
    """``reliability``: the binned points with Wilson intervals (binary notion for two
    classes, top-label otherwise; the ECE's bins), the consistency band of a calibrated
    model (:mod:`calaudit.metrics.consistency`) and a histogram of the scores; for more
    than two classes ``reliability_per_class``: the one-vs-rest bins of every class
    (score ``p_ik``, outcome ``1{y_i = k}``, named by ``classes``, default ``"0" ..
    "m-1"``), each with its band. ``band_resamples``: the bands from that many label
    redraws drawn with ``rng`` (``None``: ``consistency_band`` is ``None``)."""

    def panel(scores: NDArray[np.float64], outcomes: NDArray[np.float64]) -> dict[str, Any]:
        bins = reliability_bins(scores, outcomes, n_bins=n_bins, strategy=strategy)
        band = None
        if band_resamples is not None:
            band = consistency_band(scores, n_bins=n_bins, strategy=strategy,
                                    n_resamples=band_resamples, level=BAND_LEVEL,
                                    rng=rng).to_dict()
        return {"bins": bins.to_dict(), "consistency_band": band}

    m = y_proba.shape[1]
    notion = default_notion(m)
    scores, outcomes = scores_and_outcomes(y_true, y_proba, notion)
    diagrams: dict[str, Any] = {"reliability": {
        "notion": notion, "n_bins": n_bins, "binning": strategy, **panel(scores, outcomes),
        "histogram": score_histogram(scores)}}
    if m != 2:
        diagrams["reliability_per_class"] = [
            {"class": name, **panel(y_proba[:, k], (y_true == k).astype(np.float64))}
            for k, name in enumerate(classes or [str(k) for k in range(m)])]
    return diagrams
