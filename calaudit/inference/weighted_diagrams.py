"""The reliability diagram of weighted rows (docs/weights.md): the ECE's bins with their
weight ``W_b`` as ``count`` and weighted means, Wilson intervals at ``n_b = W_b`` units
(frequency weights) or Kish's ``(sum w)^2 / sum w^2`` (otherwise), and the consistency band
of the redrawn weighted rates ``event*_b / W*_b`` (per (bin, weight level) cell
Poisson-binomial counts, :func:`calaudit.inference.weighted_tests.label_cell_draws`).
Bins of weight 0 are left out. One-vs-rest panels (``reliability_per_class``): the
weighted diagram of ``1{y = c}`` against ``p_c``, band from ``Bernoulli(p_c)``. The smooth
curve is that of the weighted law at the weighted smooth ECE's fixed point.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.data.weights import SampleWeights
from calaudit.inference.weighted_tests import null_sums, take
from calaudit.metrics.binned import BinnedOutcomes
from calaudit.metrics.consistency import band_of_rates
from calaudit.metrics.diagrams import BAND_LEVEL, HISTOGRAM_BINS, score_histogram
from calaudit.metrics.ece import default_notion
from calaudit.metrics.row_summary import panel_columns
from calaudit.metrics.smooth_ece import smooth_reliability
from calaudit.numerics.binning import Strategy, bin_index
from calaudit.numerics.intervals import wilson_interval
from calaudit.numerics.tabulate import Cells


def weighted_reliability(y_true: NDArray[np.int64], y_proba: NDArray[np.float64],
                         weights: SampleWeights, row_weights: NDArray[np.float64], *,
                         n_bins: int = 15, strategy: Strategy = "uniform",
                         band_resamples: int | None = None,
                         rng: np.random.Generator | None = None,
                         classes: Sequence[str] | None = None) -> dict[str, Any]:
    """``{"reliability": panel, "smooth_reliability": curve}`` (binary or top-label, the
    rows' weights ``row_weights``) and, for more than two classes,
    ``reliability_per_class``: per class ``c`` (in order, named by ``classes``, default
    ``"0" .. "m-1"``) the :func:`weighted_bins` of ``p_c`` and ``1{y = c}`` with the design
    weights. The bands (``band_resamples`` redraws) are drawn with ``rng`` in that order."""
    m = y_proba.shape[1]
    panels = []
    for j, (scores, outcomes) in enumerate(panel_columns(y_true, y_proba)[:1 if m == 2 else None]):
        binned = BinnedOutcomes.build(np.ascontiguousarray(scores) if j else scores, outcomes,
                                      n_bins=n_bins, strategy=strategy)
        panels.append((binned, *weighted_bins(binned, weights, weights.design if j else row_weights,
                                              m == 2, band_resamples, rng)))
    binned, bins, band = panels[0]
    histogram = score_histogram(binned.scores)  # the weight of each histogram bin
    where, _ = bin_index(binned.scores, HISTOGRAM_BINS, "uniform")
    histogram["counts"] = np.bincount(where, row_weights, minlength=HISTOGRAM_BINS).tolist()
    notion = default_notion(m)
    curve = smooth_reliability(binned.scores, binned.outcomes, row_weights)
    names = classes or [str(k) for k in range(m)]
    per_class = ({} if m == 2 else {"reliability_per_class": [
        {"class": name, "bins": bins, "consistency_band": band}
        for name, (_, bins, band) in zip(names, panels[1:], strict=True)]})
    return {**per_class, "reliability": {
        "notion": notion, "n_bins": n_bins, "binning": strategy,
        "weights": weights.kind, "bins": bins, "consistency_band": band,
        "histogram": histogram},
        "smooth_reliability": {"notion": notion, **curve.to_dict(), "weights": weights.kind}}


def weighted_bins(binned: BinnedOutcomes, weights: SampleWeights,
                  row_weights: NDArray[np.float64], binary: bool,
                  band_resamples: int | None, rng: np.random.Generator | None,
                  level: float = BAND_LEVEL) -> tuple[dict[str, list[float]],
                                                     dict[str, Any] | None]:
    """The bins of ``binned`` with a positive weight (module docstring; ``row_weights``
    the rows' weights, ``binary``: outcome 1 is the positive class, whose negatives carry
    the sampling rate) and their central ``level`` consistency band (None without
    ``band_resamples``). Rows of weight 0 are left out before the draws, whose uniforms
    are one per (bin of positive weight, redraw): frequency weights draw the band of the
    repeated rows."""
    rows = np.flatnonzero(weights.design > 0)
    index = binned.cells.index[rows]
    filled = np.bincount(index, minlength=binned.cells.n_cells) > 0
    rank = np.cumsum(filled) - 1
    binned = BinnedOutcomes(binned.scores[rows], binned.outcomes[rows],
                            Cells(rank[index], int(filled.sum())), binned.edges)
    weights, row_weights = take(weights, rows), row_weights[rows]
    seen, drawn = null_sums(binned, weights, binary, band_resamples or 0, rng, scores=False)
    count = seen.count[:, 0]
    rate = seen.event[:, 0] / count
    squares = np.bincount(binned.cells.index, row_weights * row_weights,
                          minlength=binned.cells.n_cells)
    size = count if weights.repeated_rows else count * count / squares
    low, high = wilson_interval(rate * size, size)
    band = None if drawn is None else band_of_rates(
        drawn.event / np.where(drawn.count > 0, drawn.count, 1.0), band_resamples,
        level).to_dict()
    return {"lower": binned.edges[:-1][filled].tolist(),
            "upper": binned.edges[1:][filled].tolist(), "count": count.tolist(),
            "mean_score": (seen.score[:, 0] / count).tolist(),
            "observed_rate": rate.tolist(), "rate_low": np.asarray(low).tolist(),
            "rate_high": np.asarray(high).tolist(), "effective_size": size.tolist()}, band
