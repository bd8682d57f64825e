"""Assigning scores in [0, 1] to bins: right-closed ``(e_{b-1}, e_b]``, 0 in the first bin;
equal-width bins as CalibrationErrors.jl ``ceil(B * s)`` (1-based), so ties on an edge land
where the reference puts them.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import NDArray

Strategy = Literal["uniform", "quantile"]


def bin_edges(scores: NDArray[np.float64], n_bins: int, strategy: Strategy) -> NDArray[np.float64]:
    """Edges ``e_0 = 0 < ... < e_B = 1`` of ``n_bins`` bins: ``uniform`` equal width;
    ``quantile`` the ``b / n_bins`` quantiles of ``scores`` (``np.quantile``), outer edges
    0 and 1, repeated edges merged (fewer bins when scores tie)."""
    if strategy == "uniform":
        return np.linspace(0.0, 1.0, n_bins + 1)
    if strategy == "quantile":
        return quantile_edges(np.quantile(scores, inner_levels(n_bins)))
    raise ValueError(f"unknown binning strategy {strategy!r}")


def inner_levels(n_bins: int) -> NDArray[np.float64]:
    """The levels ``b / n_bins``, ``0 < b < n_bins``, of the inner quantile edges."""
    return np.linspace(0.0, 1.0, n_bins + 1)[1:-1]


def quantile_edges(inner: NDArray[np.float64]) -> NDArray[np.float64]:
    """Equal-mass edges from the inner quantiles: outer edges 0 and 1, repeats merged."""
    return np.unique(np.concatenate(([0.0], inner, [1.0])))


def uniform_bin_index(scores: NDArray[np.float64], n_bins: int) -> NDArray[np.intp]:
    """0-based equal-width bin: ``ceil(n_bins * s) - 1``, with ``s = 0`` in bin 0."""
    scores = np.asarray(scores, dtype=np.float64)
    return np.clip(np.ceil(scores * n_bins).astype(np.intp) - 1, 0, n_bins - 1)


def assign_bins(scores: NDArray[np.float64], edges: NDArray[np.float64]) -> NDArray[np.intp]:
    """Index ``b`` (0-based) with ``e_b < score <= e_{b+1}``; a score of 0 goes to bin 0."""
    return np.searchsorted(edges[1:-1], scores, side="left")


def bin_index(scores: NDArray[np.float64], n_bins: int, strategy: Strategy
              ) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Bin of every score and the edges: :func:`uniform_bin_index` for ``uniform``,
    :func:`assign_bins` on the quantile edges for ``quantile``."""
    edges = bin_edges(scores, n_bins, strategy)
    if strategy == "uniform":
        return uniform_bin_index(scores, n_bins), edges
    return assign_bins(scores, edges), edges


#: Most grid cells relabelled through a table of every cell (:func:`grid_cell_index`).
DENSE_CELLS = 1 << 22


def grid_cell_index(probs: NDArray[np.float64], n_bins: int) -> NDArray[np.int64]:
    """Dense index of the per-dimension uniform grid cell of each probability vector:
    coordinate ``p`` in the 1-based bin ``ceil(n_bins * p)`` (``p = 0`` in bin 1), exactly
    CalibrationErrors.jl ``binindex`` (:func:`uniform_bin_index`)."""
    m = probs.shape[1]
    if m * np.log2(max(n_bins, 2)) < 62 and n_bins ** m <= DENSE_CELLS:
        # the rank among the cells used, without a sort
        packed = uniform_bin_index(probs, n_bins).astype(np.int64) @ (
            n_bins ** np.arange(m, dtype=np.int64))
        used = np.bincount(packed, minlength=n_bins ** m) > 0
        return (np.cumsum(used) - 1)[packed]
    return grid_cells(probs, n_bins)[1].astype(np.int64)


def grid_cells(probs: NDArray[np.float64], n_bins: int
               ) -> tuple[NDArray[np.int64], NDArray[np.intp]]:
    """The distinct grid cells of the rows, sorted (packed integers, or rows of per-class
    bins when they do not pack into 62 bits), and each row's cell."""
    m = probs.shape[1]
    per_dim = uniform_bin_index(probs, n_bins).astype(np.int64)
    if m * np.log2(max(n_bins, 2)) < 62:
        cells, inverse = np.unique(per_dim @ (n_bins ** np.arange(m, dtype=np.int64)),
                                   return_inverse=True)
    else:  # too many cells for one int64: compare rows instead (slower sort)
        cells, inverse = np.unique(per_dim, axis=0, return_inverse=True)
    return cells, inverse.reshape(-1)


def weighted_quantiles(x: NDArray[np.float64], weights: NDArray[np.float64],
                       probabilities: NDArray[np.float64], frequency: bool
                       ) -> NDArray[np.float64]:
    """Quantiles of ``x`` counted ``weights`` times: for whole-number weights
    ``np.quantile`` of the repeated values (linear interpolation), else the smallest value
    whose cumulative weight reaches the probability (the smallest value at 0)."""
    order = np.argsort(x, kind="stable")
    sorted_x, cumulative = x[order], np.cumsum(weights[order])
    probabilities = np.asarray(probabilities, dtype=np.float64)
    if frequency:
        total = int(round(float(cumulative[-1])))
        position = (total - 1) * probabilities
        low = np.floor(position)

        def stat(rank: float) -> float:
            return float(sorted_x[np.searchsorted(cumulative, rank, side="right")])

        return np.array([np.quantile([stat(lo), stat(min(lo + 1, total - 1))], h - lo)
                         for h, lo in zip(position, low, strict=True)])
    at = np.searchsorted(cumulative, probabilities * cumulative[-1], side="left")
    edges = sorted_x[np.clip(at, 0, x.size - 1)]
    return np.where(probabilities == 0, sorted_x[0], edges)
