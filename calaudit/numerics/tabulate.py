"""Weighted sums per cell (bin, grid cell, group), for one weight vector or many.

Binned estimators are functions of per-cell sums ``S_c = sum_{i in c} w_i x_i``. With
``w = 1`` these are the estimates; with bootstrap counts as the columns of ``W`` (n, q)
they are ``q`` bootstrap replicates at once, computed as one sparse product
``A @ (x * W)`` where ``A`` (cells x n) is the 0/1 membership matrix. Estimates and
replicates thus share one code path.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray
from scipy import sparse


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
        """``sum_{i in c} w_i x_i`` per cell; ``values=None`` means ``x = 1`` (counts).

        ``weights`` None gives shape (n_cells,); (n, q) weights give (n_cells, q).
        """
        if weights is None:
            return np.bincount(self.index, weights=values, minlength=self.n_cells).astype(
                np.float64)
        weighted = weights if values is None else values[:, None] * weights
        return np.asarray(self.membership @ weighted)
