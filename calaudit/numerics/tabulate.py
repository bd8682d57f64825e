"""Weighted sums per cell ``S_c = sum_{i in c} w_i x_i`` (bin, grid cell, group): with ``w
= 1`` the estimates (one ``bincount`` per fixed row range, added in range order,
:func:`range_bincount`), with bootstrap counts as the columns of ``W`` (n, q) the
replicates (one sparse product ``A @ (x * W)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from calaudit.scale import fold, task_ranges


@dataclass(frozen=True)
class Cells:
    """Membership of ``n`` rows in ``n_cells`` cells (``index[i]`` in ``0 .. n_cells - 1``)."""

    index: NDArray[np.intp]
    n_cells: int

    @classmethod
    def of(cls, index: NDArray[np.integer]) -> Cells:
        index = np.asarray(index, dtype=np.intp)
        return cls(index, int(index.max()) + 1 if index.size else 0)

    @cached_property
    def membership(self) -> sparse.csr_matrix:
        """The (n_cells, n) 0/1 matrix of memberships, built once."""
        n = self.index.size
        return sparse.csr_matrix((np.ones(n), (self.index, np.arange(n))),
                                 shape=(self.n_cells, n))

    def sums(self, values: NDArray[np.float64] | None,
             weights: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """``sum_{i in c} w_i x_i`` per cell (``values=None``: counts); (n_cells,) without
        ``weights``, (n_cells, q) with (n, q) weights."""
        if weights is None:
            return range_bincount(self.index, values, self.n_cells)
        if weights.ndim == 2 and weights.shape[1] == 1:  # one weighting (row weights)
            column = weights[:, 0]
            product = column if values is None else values * column
            return range_bincount(self.index, product, self.n_cells)[:, None]
        weighted = weights if values is None else values[:, None] * weights
        return np.asarray(self.membership @ weighted)

    def sums_of(self, values: Callable[[int, int], NDArray[np.float64]]
                ) -> NDArray[np.float64]:
        """``self.sums(x)`` for ``x`` given by ``values(start, stop)``, its rows of each
        range (e.g. ``p * p`` without the n-row product): the same bytes."""
        return range_bincount(self.index, values, self.n_cells)


def range_bincount(index: NDArray[np.intp],
                   values: NDArray[np.float64] | Callable[[int, int], NDArray] | None,
                   n_cells: int) -> NDArray[np.float64]:
    """``np.bincount(index, values, minlength=n_cells)`` as float64, reduced over the fixed
    ranges of ``task_ranges(n)``: one ``bincount`` per range, added in range order.
    ``values`` may be a function ``values(start, stop)`` giving each range's values."""
    def weights(a: int, b: int) -> NDArray | None:
        if values is None:
            return None
        return values(a, b) if callable(values) else values[a:b]

    parts = ({"sums": np.bincount(index[a:b], weights=weights(a, b), minlength=n_cells)}
             for a, b in task_ranges(index.size))
    if index.size == 0:
        return np.zeros(n_cells)
    return fold(parts)["sums"].astype(np.float64, copy=False)


#: Largest whole number :func:`distinct` counts through a table.
DISTINCT_TABLE = 1 << 20


def distinct(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """``np.unique(values)``, the sorted distinct values; for whole numbers in ``[0,
    DISTINCT_TABLE)`` (frequency weights) from a table of counts, in O(rows)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size and values.min() >= 0 and values.max() < DISTINCT_TABLE:
        whole = values.astype(np.int64)
        if np.array_equal(whole, values):
            return np.flatnonzero(np.bincount(whole)).astype(np.float64)
    return np.unique(values)
