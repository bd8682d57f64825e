"""The data behind the reliability diagrams of the reports (``docs/result-schema.md``,
section ``diagrams``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.metrics.consistency import band_from_laws
from calaudit.metrics.ece import default_notion
from calaudit.metrics.reliability import bins_from_sums
from calaudit.metrics.row_laws import cell_laws
from calaudit.metrics.row_summary import HISTOGRAM_BINS, Binning, binned_summary, class_panels
from calaudit.numerics.binning import Strategy, bin_index

#: Level of the consistency bands (pointwise, per bin).
BAND_LEVEL = 0.95


def score_histogram(scores: NDArray[np.float64], n_bins: int = HISTOGRAM_BINS
                    ) -> dict[str, list[float] | list[int]]:
    """Counts of ``scores`` in ``n_bins`` equal-width right-closed bins on [0, 1]."""
    index, edges = bin_index(scores, n_bins, "uniform")
    counts = np.bincount(index, minlength=n_bins)
    return {"edges": edges.tolist(), "counts": counts.astype(np.int64).tolist()}


def reliability_diagrams_of_rows(rows: Any, *, n_bins: int = 15,
                                 strategy: Strategy = "uniform",
                                 classes: Sequence[str] | None = None,
                                 band_resamples: int | None = None,
                                 rng: np.random.Generator | None = None) -> dict[str, Any]:
    """``reliability``: the binned points with Wilson intervals (binary notion for two
    classes, top-label otherwise; the ECE's bins), the consistency band of a calibrated
    model (:mod:`calaudit.metrics.consistency`) and a histogram of the scores; for more
    than two classes ``reliability_per_class``: the one-vs-rest bins of every class
    (named by ``classes``, default ``"0" .. "m-1"``), each with its band.
    ``band_resamples``: label redraws of the bands, drawn with ``rng`` (``None``: no
    band). Of a row source (``y``, ``proba``)."""
    binning = Binning.build(rows, n_bins, strategy)
    summary = binned_summary(rows, binning)
    m = summary.m
    panels = (0,) if m == 2 else (0, *class_panels(m))
    laws = None if band_resamples is None else cell_laws(rows, binning, panels)

    def panel(j: int) -> dict[str, Any]:
        k = panels[j]
        sums = summary.sums(k)
        band = None
        if laws is not None:
            band = band_from_laws(laws[j], sums.count, band_resamples, BAND_LEVEL,
                                  rng).to_dict()
        return {"bins": bins_from_sums(sums, binning.panel_edges(k)).to_dict(),
                "consistency_band": band}

    edges = np.linspace(0.0, 1.0, HISTOGRAM_BINS + 1)
    diagrams: dict[str, Any] = {"reliability": {
        "notion": default_notion(m), "n_bins": n_bins, "binning": strategy, **panel(0),
        "histogram": {"edges": edges.tolist(),
                      "counts": summary.histogram.astype(np.int64).tolist()}}}
    if m != 2:
        diagrams["reliability_per_class"] = [
            {"class": name, **panel(j + 1)}
            for j, name in enumerate(classes or [str(k) for k in range(m)])]
    return diagrams
