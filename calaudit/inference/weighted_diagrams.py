"""The reliability diagram of weighted rows (docs/weights.md): the ECE's bins weighted by
their weight, Wilson intervals at each bin's effective size, and the consistency band of a
calibrated model drawn from the null law of the sampled labels
(:func:`calaudit.inference.weighted_tests.null_sums`, the weighted ECE test's draws).

Per bin with weight ``W_b``: ``count`` is ``W_b``, ``mean_score`` and ``observed_rate`` the
weighted means; the Wilson interval uses ``n_b = W_b`` units (frequency weights) or Kish's
``(sum w)^2 / sum w^2`` of the bin (otherwise). The band is the central ``level`` range of
the redrawn weighted rates ``event*_b / W*_b``, which depend on the redraws only through
event counts per (bin, weight level) cell: drawn as Poisson-binomial counts also under
label-dependent sampling (:func:`calaudit.inference.weighted_tests.label_cell_draws`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.data.weights import SampleWeights
from calaudit.inference.weighted_tests import null_sums
from calaudit.metrics.diagrams import BAND_LEVEL, HISTOGRAM_BINS, score_histogram
from calaudit.metrics.ece import default_notion, notion_outcomes
from calaudit.numerics.binning import Strategy, bin_index
from calaudit.numerics.intervals import wilson_interval


def weighted_reliability(y_true: NDArray[np.int64], y_proba: NDArray[np.float64],
                         weights: SampleWeights, row_weights: NDArray[np.float64], *,
                         n_bins: int = 15, strategy: Strategy = "uniform",
                         band_resamples: int | None = None,
                         rng: np.random.Generator | None = None) -> dict[str, Any]:
    """``{"reliability": panel}`` for the binary (two classes) or top-label notion."""
    binned = notion_outcomes(y_true, y_proba, n_bins=n_bins, strategy=strategy)
    notion = default_notion(y_proba.shape[1])
    seen, drawn = null_sums(binned, weights, y_proba.shape[1] == 2,
                            band_resamples or 0, rng, scores=False)
    count = seen.count[:, 0]
    keep = count > 0
    rate = seen.event[keep, 0] / count[keep]
    index = binned.cells.index
    squares = np.bincount(index, row_weights * row_weights, minlength=binned.cells.n_cells)
    size = count if weights.kind == "frequency" and not weights.label_dependent else (
        np.divide(count * count, squares, out=np.zeros_like(count), where=squares > 0))
    low, high = wilson_interval(rate * size[keep], size[keep])
    band = None
    if drawn is not None:
        rates = drawn.event[keep] / np.where(drawn.count[keep] > 0, drawn.count[keep], 1.0)
        tail = (1.0 - BAND_LEVEL) / 2.0
        band_low, band_high = np.quantile(rates, [tail, 1.0 - tail], axis=1)
        band = {"level": BAND_LEVEL, "n_resamples": band_resamples,
                "low": band_low.tolist(), "high": band_high.tolist()}
    histogram = score_histogram(binned.scores)  # the weight of each histogram bin
    where, _ = bin_index(binned.scores, HISTOGRAM_BINS, "uniform")
    histogram["counts"] = np.bincount(where, row_weights, minlength=HISTOGRAM_BINS).tolist()
    return {"reliability": {
        "notion": notion, "n_bins": n_bins, "binning": strategy, "weights": weights.kind,
        "bins": {"lower": binned.edges[:-1][keep].tolist(),
                 "upper": binned.edges[1:][keep].tolist(), "count": count[keep].tolist(),
                 "mean_score": (seen.score[keep, 0] / count[keep]).tolist(),
                 "observed_rate": rate.tolist(), "rate_low": np.asarray(low).tolist(),
                 "rate_high": np.asarray(high).tolist(),
                 "effective_size": size[keep].tolist()},
        "consistency_band": band, "histogram": histogram}}
