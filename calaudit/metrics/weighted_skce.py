"""The kernel of the SKCE on weighted rows (docs/weights.md; the estimates themselves:
:mod:`calaudit.inference.weighted_skce_test`). The default bandwidth is the median heuristic of the
weighted empirical law: the median of ``d(p_i, p_j)`` over all ordered pairs, diagonal
included, pair ``(i, j)`` counted ``w_i w_j`` times (for frequency weights the median of
the repeated rows' full matrix, as the unweighted convention); computed exactly up to
:data:`MAX_MEDIAN_ROWS` rows.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calaudit.metrics.skce import KERNEL_DISTANCES, KernelChoice
from calaudit.numerics.kernels import pairwise_distance

#: Most rows for the exact weighted median of the pairwise distances (n^2 sorted values).
MAX_MEDIAN_ROWS = 4096


def weighted_median_distance(rows: NDArray[np.float64], weights: NDArray[np.float64],
                             distance: str, frequency: bool) -> float:
    """Median of ``d(x_i, x_j)`` over ordered pairs weighted ``w_i w_j``: frequency weights
    the repeated multiset's (ranks ``W^2 / 2 - 1`` and ``W^2 / 2`` averaged, the middle one
    when ``W^2`` is odd), otherwise the smallest value with half the weight."""
    d = pairwise_distance(distance, rows, rows).ravel()
    pair = np.outer(weights, weights).ravel()
    order = np.argsort(d, kind="stable")
    values, cumulative = d[order], np.cumsum(pair[order])
    total = cumulative[-1]
    if not frequency:
        return float(values[np.searchsorted(cumulative, total / 2.0)])
    total = int(round(total))
    ranks = (total // 2,) if total % 2 else (total // 2 - 1, total // 2)
    return float(np.mean([values[np.searchsorted(cumulative, rank, side="right")]
                          for rank in ranks]))


def weighted_nonzero_median(rows: NDArray[np.float64], weights: NDArray[np.float64],
                            distance: str) -> float | None:
    """The weighted median of the positive distances (when half the pairs are ties),
    as :func:`calaudit.metrics.skce._nonzero_median` with pair weights ``w_i w_j``."""
    d = pairwise_distance(distance, rows, rows).ravel()
    pair = np.outer(weights, weights).ravel()
    positive = (d > 0) & (pair > 0)
    if not positive.any():
        return None
    order = np.argsort(d[positive], kind="stable")
    values, cumulative = d[positive][order], np.cumsum(pair[positive][order])
    return float(values[np.searchsorted(cumulative, cumulative[-1] / 2)])


def weighted_kernel(y_proba: NDArray[np.float64], weights: NDArray[np.float64], name: str,
                    bandwidth: float | None, frequency: bool) -> KernelChoice | None:
    """The kernel with the given bandwidth or the weighted median heuristic (None when
    the median cannot be computed exactly: more than :data:`MAX_MEDIAN_ROWS` rows)."""
    if bandwidth is not None:
        return KernelChoice(name, float(bandwidth), "option")
    if y_proba.shape[0] > MAX_MEDIAN_ROWS:
        return None
    distance = KERNEL_DISTANCES[name]
    median = weighted_median_distance(y_proba, weights, distance, frequency)
    if median > 0:
        return KernelChoice(name, median, "weighted_median")
    nonzero = weighted_nonzero_median(y_proba, weights, distance)
    return KernelChoice(name, nonzero if nonzero else 1.0,
                        "weighted_median_nonzero" if nonzero else "degenerate")
