"""Assigning scores in [0, 1] to bins.

Convention (scikit-learn ``calibration_curve``, CalibrationErrors.jl ``UniformBinning``):
bins are right-closed, ``(e_{b-1}, e_b]``, and a score of exactly 0 falls in the first bin.
Empty bins are dropped by the estimators that use them.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import NDArray

Strategy = Literal["uniform", "quantile"]


def bin_edges(scores: NDArray[np.float64], n_bins: int, strategy: Strategy) -> NDArray[np.float64]:
    """Edges ``e_0 = 0 < ... < e_B = 1`` of ``n_bins`` bins.

    ``uniform``: equal width, ``np.linspace(0, 1, n_bins + 1)``.
    ``quantile``: equal mass, the ``b / n_bins`` quantiles of ``scores`` (linear
    interpolation, as ``np.quantile``), outer edges forced to 0 and 1, repeated edges
    merged, so fewer than ``n_bins`` bins may result when scores are tied.
    """
    if strategy == "uniform":
        return np.linspace(0.0, 1.0, n_bins + 1)
    if strategy == "quantile":
        inner = np.quantile(scores, np.linspace(0.0, 1.0, n_bins + 1)[1:-1])
        return np.unique(np.concatenate(([0.0], inner, [1.0])))
    raise ValueError(f"unknown binning strategy {strategy!r}")


def assign_bins(scores: NDArray[np.float64], edges: NDArray[np.float64]) -> NDArray[np.intp]:
    """Index ``b`` (0-based) with ``e_b < score <= e_{b+1}``; a score of 0 goes to bin 0.

    Equivalent to ``ceil(n_bins * score) - 1`` for uniform edges, computed against the
    edge array so that scores exactly on an edge are never split by rounding.
    """
    return np.searchsorted(edges[1:-1], scores, side="left")


def grid_cell_index(probs: NDArray[np.float64], n_bins: int) -> NDArray[np.int64]:
    """Flat index of the per-dimension uniform grid cell of each probability vector.

    Each coordinate ``p`` gets the 1-based bin ``ceil(n_bins * p)`` (``p = 0`` in bin 1):
    exactly CalibrationErrors.jl ``binindex``, the product ``n_bins * p`` rounded as in
    floating point, so results match that reference bit for bit. This differs from
    :func:`assign_bins` (and from ``min(floor(k p), k - 1)``) only for a probability
    lying on a grid point up to rounding (e.g. with 6 bins ``p = 5/6 = 0.8333333333333334``
    is in bin ``ceil(6 p) = 5``, while it lies above the edge
    ``linspace(0, 1, 7)[5] = 0.8333333333333333``). The tuple of per-coordinate indices is
    packed into one integer per row and then relabelled densely, so the grid is never
    materialised.
    """
    per_dim = np.maximum(np.ceil(n_bins * np.asarray(probs, dtype=np.float64)), 1.0)
    per_dim = per_dim.astype(np.int64) - 1
    m = per_dim.shape[1]
    if m * np.log2(max(n_bins, 2)) < 62:
        packed = per_dim @ (n_bins ** np.arange(m, dtype=np.int64))
        _, dense = np.unique(packed, return_inverse=True)
    else:  # too many cells for one int64: compare rows instead (slower sort)
        _, dense = np.unique(per_dim, axis=0, return_inverse=True)
    return dense.reshape(-1).astype(np.int64)
