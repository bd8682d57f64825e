"""Whole-array results computed a block of rows at a time, with the whole-array bytes.

Memory of a statistic over ``n`` rows should be O(block), not a few float64 per row for
every intermediate (issue 14: one process under 2 GB at 10^7 rows). Two reductions here
reproduce numpy's whole-array result exactly from values produced one block at a time:

* :func:`pairwise_total` is ``np.add.reduce(values)`` (so ``values.mean()`` is
  ``pairwise_total(...) / n``). numpy sums a float array by pairwise summation: a range
  of more than ``PW_BLOCKSIZE = 128`` elements is split at ``n2 = n // 2`` rounded down
  to a multiple of 8, each half summed the same way, and the two sums added. The split
  points depend only on the range's length, so the recursion is repeated here down to
  ranges of at most ``block`` rows, whose values are computed and summed by numpy itself:
  every addition is the one numpy performs on the whole array.
* :func:`dense_codes` is ``np.unique(codes, return_inverse=True)[1]`` (the rank of each
  row's code among the distinct codes) from codes made block by block, in two passes: the
  distinct codes of every block, then each block's ranks by ``searchsorted``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray


#: Rows per block (64 Ki rows: 512 KiB per float64 column).
BLOCK_ROWS = 65_536

Values = Callable[[int, int], NDArray]
#: numpy's ``PW_BLOCKSIZE``: ranges of at most this many elements are not split.
_PW_BLOCKSIZE = 128


def pairwise_total(values: Values, n: int, block: int = BLOCK_ROWS) -> np.floating:
    """``np.add.reduce`` of the ``n`` values ``values(0, n)`` (a float array), with
    ``values(start, stop)`` called on ranges of at most ``block`` rows only (at least
    128, numpy's unsplit range)."""
    return _pairwise(values, 0, n, max(block, _PW_BLOCKSIZE))


def _pairwise(values: Values, start: int, n: int, block: int) -> np.floating:
    if n <= block:
        return np.add.reduce(values(start, start + n))
    half = n // 2
    half -= half % 8
    return _pairwise(values, start, half, block) + _pairwise(values, start + half,
                                                             n - half, block)


def count_total(flags: Values, n: int, block: int = BLOCK_ROWS) -> int:
    """``np.count_nonzero`` of the ``n`` values ``flags(0, n)``, a block at a time."""
    return sum(int(np.count_nonzero(flags(start, min(n, start + block))))
               for start in range(0, n, block))


def dense_codes(codes: Values, n: int, block: int = BLOCK_ROWS) -> NDArray[np.int64]:
    """``np.unique(codes(0, n), return_inverse=True)[1]`` as int64: the rank of every
    row's code among the distinct codes, with ``codes(start, stop)`` called per block."""
    ranges = [(start, min(n, start + block)) for start in range(0, n, block)]
    distinct = np.unique(np.concatenate([np.unique(codes(a, b)) for a, b in ranges]
                                        or [np.zeros(0, dtype=np.int64)]))
    out = np.empty(n, np.int64)
    for a, b in ranges:
        out[a:b] = np.searchsorted(distinct, codes(a, b))
    return out
