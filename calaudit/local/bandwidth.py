"""Bandwidths of the Gaussian kernels: explicit or the median heuristic.

Convention (every local kernel): ``k(a, b) = exp(-|a - b|^2 / (2 s^2))`` with bandwidth
``s``, i.e. ``gamma = 1 / (2 s^2)``.

Median heuristic (Gretton et al. 2012; CalibrationErrors.jl's lengthscale convention):
``s^2 = median{ |a_i - a_j|^2 : i < j, a_i != a_j }`` (ties left out, so discrete data still
get a positive bandwidth). With several covariates (:mod:`.encoding`) the median is taken
per covariate over its own encoded columns and ``s^2`` is the median of those medians (the
median over the concatenation grows with the number of covariates).

The medians are exact on all pairs when ``n <= max_rows``, otherwise computed on
``max_rows`` rows drawn without replacement from the stage's seeded generator.

Weighted rows (docs/weights.md; row weights ``w``): the same medians of the weighted law,
pair ``i < j`` counted ``w_i w_j`` times (whole-number weights: ``np.median`` of the
repeated pairs; otherwise the smallest distance whose pair weight below and at it reaches
half, by :func:`weighted_rank_value`), the source ``weighted median``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.spatial.distance import pdist

DEFAULT_MAX_ROWS = 2000


@dataclass(frozen=True)
class GaussianBandwidth:
    """A Gaussian kernel's bandwidth ``s`` and where it came from.

    ``source``: ``median`` (heuristic), ``option`` (given by the user), ``kite`` (KiTE
    mode), ``default`` (heuristic impossible: all rows identical, ``s = 1``).
    """

    bandwidth: float
    source: str
    rows_used: int | None = None

    @property
    def gamma(self) -> float:
        """``1 / (2 s^2)``."""
        return 1.0 / (2.0 * self.bandwidth * self.bandwidth)

    def to_dict(self) -> dict:
        out = {"type": "gaussian", "bandwidth": self.bandwidth, "gamma": self.gamma,
               "source": self.source, "formula": "exp(-|a - b|^2 / (2 bandwidth^2))"}
        if self.rows_used is not None:
            out["median_rows"] = self.rows_used
        return out

    @classmethod
    def from_gamma(cls, gamma: float, source: str) -> GaussianBandwidth:
        """The bandwidth with ``exp(-gamma d^2)``: ``s = 1 / sqrt(2 gamma)``."""
        return cls(1.0 / math.sqrt(2.0 * gamma), source)


def subsample_rows(features: NDArray[np.float64], rng: np.random.Generator | None,
                   max_rows: int = DEFAULT_MAX_ROWS) -> NDArray[np.float64]:
    """All rows (as a matrix) if ``n <= max_rows``, else ``max_rows`` rows drawn without
    replacement with ``rng``, in row order."""
    return weighted_rows(features, rng, max_rows, None)[0]


def weighted_rows(features: NDArray[np.float64], rng: np.random.Generator | None,
                  max_rows: int, weights: NDArray[np.float64] | None
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
    """:func:`subsample_rows` and the weights of its rows (None stays None)."""
    n = features.shape[0] if hasattr(features, "shape") else len(features)
    if n > max_rows:  # the rows first: an array-like features builds only those
        if rng is None:
            raise ValueError("a generator is needed to subsample rows for the median")
        rows = np.sort(rng.choice(n, size=max_rows, replace=False))
        features = features[rows]
        weights = None if weights is None else weights[rows]
    x = np.asarray(features, dtype=np.float64)
    return (x[:, None] if x.ndim == 1 else x), weights


def median_nonzero_squared(x: NDArray[np.float64], weights: NDArray[np.float64] | None = None,
                           frequency: bool = False) -> float:
    """Median of the non-zero squared Euclidean distances between rows of ``x`` (pairs
    ``i < j``, counted ``w_i w_j`` times with ``weights``: :func:`weighted_median`); 0 if
    none."""
    squared = pdist(x, "sqeuclidean")
    if weights is None:
        positive = squared[squared > 0]
        return float(np.median(positive)) if positive.size else 0.0
    i, j = np.triu_indices(x.shape[0], 1)
    pair = weights[i] * weights[j]
    keep = (squared > 0) & (pair > 0)
    return weighted_median(squared[keep], pair[keep], frequency) if keep.any() else 0.0


def weighted_median(values: NDArray[np.float64], weights: NDArray[np.float64],
                    frequency: bool) -> float:
    """Median of ``values`` counted ``weights`` times: for whole-number weights the
    ``np.median`` of the repeated values, else :func:`weighted_rank_value` of half."""
    total = float(np.sum(weights))
    if not frequency:
        return weighted_rank_value(values, weights, total / 2.0, strict=False)
    units = int(round(total))
    ranks = (units // 2,) if units % 2 else (units // 2 - 1, units // 2)
    return float(np.mean([weighted_rank_value(values, weights, rank, strict=True)
                          for rank in ranks]))


def weighted_rank_value(values: NDArray[np.float64], weights: NDArray[np.float64],
                        target: float, strict: bool, sort_below: int = 4096) -> float:
    """The smallest value ``v`` whose weight ``W(<= v)`` exceeds ``target`` (``strict``)
    or reaches it: O(n) quickselect, the last ``sort_below`` values sorted."""
    def reached(weight: float) -> bool:
        return weight > target if strict else weight >= target

    below = 0.0
    while values.size > sort_below:
        pivot = np.partition(values, values.size // 2)[values.size // 2]
        less = values < pivot
        upto = values <= pivot
        if reached(below + float(weights[less].sum())):
            values, weights = values[less], weights[less]
        elif reached(below + float(weights[upto].sum())):
            return float(pivot)
        else:
            below += float(weights[upto].sum())
            values, weights = values[~upto], weights[~upto]
    order = np.argsort(values, kind="stable")
    cumulative = below + np.cumsum(weights[order])
    at = np.searchsorted(cumulative, target, side="right" if strict else "left")
    return float(values[order][min(at, values.size - 1)])


def median_squared_distance(features: NDArray[np.float64], rng: np.random.Generator | None,
                            max_rows: int = DEFAULT_MAX_ROWS,
                            blocks: Sequence[slice] | None = None,
                            weights: NDArray[np.float64] | None = None,
                            frequency: bool = False) -> tuple[float, int]:
    """The heuristic's ``s^2`` and the number of rows it was computed on.

    Without ``blocks``: the median over all columns. With ``blocks`` (one column slice per
    covariate): the median over blocks of each block's median (blocks whose rows are all
    equal are skipped). ``rng`` is used only when ``n > max_rows``; ``weights``: the rows'
    weights (whole numbers: ``frequency``), the medians of the weighted law.
    """
    x, w = weighted_rows(features, rng, max_rows, weights)
    if blocks is None:
        return median_nonzero_squared(x, w, frequency), int(x.shape[0])
    medians = [m for m in (median_nonzero_squared(x[:, b], w, frequency) for b in blocks)
               if m > 0]
    return (float(np.median(medians)) if medians else 0.0), int(x.shape[0])


def choose_bandwidth(features: NDArray[np.float64], option: float | None,
                     rng: np.random.Generator | None,
                     max_rows: int = DEFAULT_MAX_ROWS,
                     blocks: Sequence[slice] | None = None,
                     weights: NDArray[np.float64] | None = None,
                     frequency: bool = False) -> GaussianBandwidth:
    """The user's bandwidth if given, else the median heuristic (see module docstring;
    ``weights``: of the weighted law)."""
    if option is not None:
        return GaussianBandwidth(float(option), "option")
    median, rows = median_squared_distance(features, rng, max_rows, blocks, weights,
                                           frequency)
    if median <= 0:
        return GaussianBandwidth(1.0, "default", rows)
    source = "median" if blocks is None or len(blocks) == 1 else "median per covariate"
    return GaussianBandwidth(math.sqrt(median), source if weights is None
                             else f"weighted {source}", rows)
