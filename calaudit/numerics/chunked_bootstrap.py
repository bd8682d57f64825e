"""Bootstrap counts drawn one row chunk at a time (exact multinomial, O(chunk x B) memory).

A bootstrap resample draws ``n`` rows uniformly with replacement; its count vector is
multinomial(``n``; 1/n, ..., 1/n). It factorises over consecutive row chunks: with ``N``
draws left and ``R`` rows left, the chunk of ``s`` rows receives
``T ~ Binomial(N, s / R)`` draws, spread uniformly over its rows (a multinomial(``T``;
1/s, ...)); then ``N <- N - T``, ``R <- R - s``. Every resample (column) is handled at
once, so a statistic that is a sum over rows of count-weighted pieces (random-feature
products ``Phi^T (C o R)``) never needs the n x B count matrix.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray


class ChunkedCounts:
    """Multinomial bootstrap counts of ``n_resamples`` resamples of ``n`` rows, chunk by
    chunk; call :meth:`next` with consecutive chunk sizes summing to ``n``."""

    def __init__(self, rng: np.random.Generator, n: int, n_resamples: int) -> None:
        self.rng, self.rows_left = rng, int(n)
        self.draws_left = np.full(n_resamples, int(n), dtype=np.int64)

    def next(self, size: int) -> NDArray[np.float64]:
        """Counts (size, B) of the next ``size`` rows."""
        if size > self.rows_left:
            raise ValueError("more rows requested than remain")
        share = size / self.rows_left
        taken = (self.draws_left.copy() if size == self.rows_left
                 else self.rng.binomial(self.draws_left, share))
        self.draws_left -= taken
        self.rows_left -= size
        b = taken.size
        cells = self.rng.integers(0, size, size=int(taken.sum()))
        cells += np.repeat(np.arange(b) * size, taken)
        counts = np.bincount(cells, minlength=b * size).reshape(b, size)
        return counts.T.astype(np.float64)


def chunked_counts(rng: np.random.Generator, n: int, n_resamples: int, step: int
                   ) -> Iterator[tuple[int, int, NDArray[np.float64]]]:
    """``(start, stop, counts)`` for consecutive chunks of ``step`` rows."""
    counts = ChunkedCounts(rng, n, n_resamples)
    for start in range(0, n, step):
        stop = min(n, start + step)
        yield start, stop, counts.next(stop - start)
