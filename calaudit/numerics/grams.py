"""Gram matrices built from other Gram matrices: :class:`ResidualGram` (``H_ij = K_ij
<r_i, r_j>``, the SKCE terms, Widmann et al. 2019, sec. 5), :class:`DenseGram` (held in
memory when no larger than one engine tile, :func:`cached`) and
:func:`within_block_kernels` (the kernel inside consecutive blocks of rows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit.numerics.kernels import Gram, StationaryKernel
from calaudit.numerics.pair_tasks import cuttable, gram_rows, joined
from calaudit.numerics.pairwise import BLOCK_ENTRIES
from calaudit.scale import one_blas_thread


@dataclass(frozen=True)
class ResidualGram:
    """``H_ij = K_ij * <R_i, R_j>`` for a Gram ``K`` and residual rows ``R`` (n, m)."""

    kernel: Gram
    residuals: NDArray[np.float64]

    @property
    def n(self) -> int:
        return self.kernel.n

    def block(self, rows: slice, cols: slice) -> NDArray[np.float64]:
        out = self.kernel.block(rows, cols)
        out *= self.residuals[rows] @ self.residuals[cols].T
        return out

    def diagonal(self) -> NDArray[np.float64]:
        r = self.residuals
        return self.kernel.diagonal() * np.einsum("ij,ij->i", r, r)

    @property
    def cuttable(self) -> bool:
        """Whether its kernel can be cut to rows (:func:`calaudit.numerics.pair_tasks.
        gram_rows`): then a block of a pair pass carries its own rows only."""
        return cuttable(self.kernel)

    def rows_of(self, rows: slice) -> ResidualGram:
        """The Gram of the rows ``rows`` alone (same entries)."""
        return ResidualGram(gram_rows(self.kernel, rows), self.residuals[rows])

    def joined_with(self, other: ResidualGram) -> ResidualGram:
        """One Gram on these rows then ``other``'s."""
        return ResidualGram(joined(self.kernel, other.kernel),
                            np.concatenate([self.residuals, other.residuals]))


@dataclass(frozen=True)
class DenseGram:
    """A Gram matrix held in memory; ``block`` returns a copy (callers may write to it)."""

    matrix: NDArray[np.float64]

    @property
    def n(self) -> int:
        return int(self.matrix.shape[0])

    def block(self, rows: slice, cols: slice) -> NDArray[np.float64]:
        return self.matrix[rows, cols].copy()

    def diagonal(self) -> NDArray[np.float64]:
        return np.diagonal(self.matrix).copy()


def cached(gram: Gram, max_entries: int = BLOCK_ENTRIES) -> Gram:
    """``gram`` itself, or a :class:`DenseGram` of it when ``n^2 <= max_entries`` (BLAS on
    one thread: its entries' bits do not depend on the threads, as a pair pass's blocks)."""
    n = gram.n
    if n * n > max_entries:
        return gram
    with one_blas_thread():
        return DenseGram(gram.block(slice(0, n), slice(0, n)))


def within_block_kernels(kernel: StationaryKernel, features: NDArray[np.float64], blocksize: int,
                         first_block: int, stop_block: int) -> NDArray[np.float64]:
    """Kernel matrices (blocks, blocksize, blocksize) inside the blocks ``first_block ..
    stop_block - 1`` of ``blocksize`` consecutive rows."""
    x = features[first_block * blocksize: stop_block * blocksize]
    x = x.reshape(stop_block - first_block, blocksize, -1)
    dist = np.zeros((x.shape[0], blocksize, blocksize))
    for k in range(x.shape[2]):
        diff = x[:, :, None, k] - x[:, None, :, k]
        if kernel.distance == "sqeuclidean":
            dist += diff * diff
        else:
            dist += np.abs(diff)
    if kernel.distance == "tv":
        dist *= 0.5
    dist *= -kernel.gamma
    return np.exp(dist, out=dist)
