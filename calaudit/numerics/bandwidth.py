"""The median heuristic: the exact median of a pairwise distance matrix, without storing it.

As CalibrationPaper ``median_TV_kernel``: the median of the full n x n matrix ``D_ij =
d(x_i, x_j)``, diagonal zeros included (``n`` zeros plus every ``d_ij, i < j`` twice).
Small matrices go to ``numpy.median``; larger ones: the wanted ranks are bracketed by
quantiles of a sample of pairs, one tiled pass counts the distances below the bracket and
collects those inside, and the order statistics are selected exactly (a missed bracket is
widened and the pass repeated).

Weighted rows (docs/weights.md, :func:`weighted_median_distance`): the median over ordered
pairs, diagonal included, pair ``(i, j)`` counted ``w_i w_j`` times (frequency weights:
the repeated rows' median), exact by sorting the ``n^2`` values. When half the pairs are
ties (:func:`weighted_nonzero_median`): the weighted median of the positive distances.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calaudit.numerics.kernels import pairwise_distance
from calaudit.numerics.pairwise import BLOCK_ENTRIES, tile_rows_for

#: Pairs sampled to bracket the median before the exact pass.
SAMPLE_PAIRS = 200_000


def median_distance(features: NDArray[np.float64], distance: str, *,
                    max_entries: int = BLOCK_ENTRIES) -> float:
    """Exact median of the full ``n x n`` matrix of ``distance`` between rows."""
    x = np.asarray(features, dtype=np.float64)
    x = x[:, None] if x.ndim == 1 else x
    n = x.shape[0]
    if n * n <= max_entries:
        return float(np.median(pairwise_distance(distance, x, x)))
    ranks = _middle_ranks(n * n)
    sampled = _sample_distances(x, distance, SAMPLE_PAIRS)
    margin = 4.0 / np.sqrt(sampled.size) + 1e-3
    while True:
        low, high = _bracket(sampled, n, ranks, margin)
        found = _select_in_bracket(x, distance, ranks, low, high)
        if found is not None:
            return found
        margin *= 4.0


def _middle_ranks(total: int) -> tuple[int, ...]:
    """0-based ranks whose mean is the median of ``total`` sorted values."""
    if total % 2:
        return (total // 2,)
    return (total // 2 - 1, total // 2)


def _sample_distances(x: NDArray[np.float64], distance: str, size: int) -> NDArray[np.float64]:
    """Distances of ``size`` random pairs ``i != j`` (fixed internal seed: the sample only
    places the bracket; the answer does not depend on it)."""
    rng = np.random.default_rng(0x5EED)
    n = x.shape[0]
    i = rng.integers(0, n, size)
    j = (i + rng.integers(1, n, size)) % n
    out = np.empty(size)
    step = 4096
    for start in range(0, size, step):
        a, b = x[i[start:start + step]], x[j[start:start + step]]
        out[start:start + step] = _rowwise(distance, a, b)
    return np.sort(out)


def _rowwise(distance: str, a: NDArray[np.float64], b: NDArray[np.float64]
             ) -> NDArray[np.float64]:
    """``d(a_r, b_r)`` for each row ``r``, summed over features in order."""
    out = np.zeros(a.shape[0])
    for k in range(a.shape[1]):
        diff = a[:, k] - b[:, k]
        out += diff * diff if distance == "sqeuclidean" else np.abs(diff)
    if distance == "tv":
        out *= 0.5
    return out


def _bracket(sampled: NDArray[np.float64], n: int, ranks: tuple[int, ...], margin: float
             ) -> tuple[float, float]:
    """Sample quantiles around the wanted ranks, translated from the full multiset (with
    ``n`` diagonal zeros) to the off-diagonal distribution; ``margin`` is in probability."""
    off_diagonal = n * (n - 1)
    low_q = (min(ranks) - n) / off_diagonal - margin
    high_q = (max(ranks) - n) / off_diagonal + margin
    if low_q <= 0.0:
        low = -np.inf
    else:
        low = float(np.quantile(sampled, min(low_q, 1.0), method="lower"))
    high = np.inf if high_q >= 1.0 else float(np.quantile(sampled, max(high_q, 0.0),
                                                          method="higher"))
    return low, high


def _select_in_bracket(x: NDArray[np.float64], distance: str, ranks: tuple[int, ...],
                       low: float, high: float) -> float | None:
    """One tiled pass over ``i < j``: count ``d < low`` and ``d == low``/``d == high``,
    collect ``low < d < high``; return the median if every wanted rank falls in
    ``[low, high]``, else ``None``."""
    n = x.shape[0]
    below = equal_low = equal_high = 0
    inside: list[NDArray[np.float64]] = []
    step = tile_rows_for(n)
    for start in range(0, n, step):
        stop = min(start + step, n)
        block = pairwise_distance(distance, x[start:stop], x[start:])
        rows = np.arange(stop - start)[:, None]
        upper = block[np.arange(n - start)[None, :] > rows]
        below += int(np.count_nonzero(upper < low))
        equal_low += int(np.count_nonzero(upper == low))
        equal_high += int(np.count_nonzero(upper == high)) if high != low else 0
        inside.append(upper[(upper > low) & (upper < high)])
    return _pick(n, ranks, low, high, below, equal_low, equal_high, np.concatenate(inside))


def _pick(n: int, ranks: tuple[int, ...], low: float, high: float, below: int,
          equal_low: int, equal_high: int, inside: NDArray[np.float64]) -> float | None:
    """Order statistics of the full multiset from the bracket summary: below ``low``,
    ``2 * below`` off-diagonal entries (plus the ``n`` diagonal zeros when ``0 < low``);
    then the values equal to ``low``, those inside (each twice, plus the zeros when ``low <
    0 < high``) and those equal to ``high``."""
    zeros_below = n if low > 0 else 0
    zeros_at_low = n if low == 0 else 0
    zeros_inside = n if low < 0 < high else 0
    zeros_at_high = n if high == 0 and low != 0 else 0
    start = 2 * below + zeros_below
    values = [np.full(2 * equal_low + zeros_at_low, low),
              np.sort(np.concatenate([np.repeat(inside, 2), np.zeros(zeros_inside)])),
              np.full(2 * equal_high + zeros_at_high, high)]
    bracket = np.concatenate(values)
    picked = []
    for rank in ranks:
        position = rank - start
        if position < 0 or position >= bracket.size:
            return None
        picked.append(bracket[position])
    return float(np.mean(picked)) if len(picked) > 1 else float(picked[0])


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
    """The smallest positive distance whose cumulative pair weight ``w_i w_j`` (in order
    of distance) reaches half that of all positive distances; None without one. Distinct
    rows with their counts as weights: the unweighted fallback's median."""
    d = pairwise_distance(distance, rows, rows).ravel()
    pair = np.outer(weights, weights).ravel()
    positive = (d > 0) & (pair > 0)
    if not positive.any():
        return None
    order = np.argsort(d[positive], kind="stable")
    values, cumulative = d[positive][order], np.cumsum(pair[positive][order])
    return float(values[np.searchsorted(cumulative, cumulative[-1] / 2)])
