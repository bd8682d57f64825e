"""The pairwise engine: products with an n x n kernel matrix, one row tile at a time.

Every quadratic statistic in calaudit (SKCE, KLCE, their resampling nulls, LCB) reduces to
products ``K @ Z`` or quadratic forms ``z^T K z`` with a kernel matrix ``K`` and a matrix
``Z`` whose columns are residual vectors, resampled residual vectors or weights. ``K`` is
never stored: rows are processed in tiles of ``tile_rows`` rows, each tile's kernel block
is computed once and multiplied by all columns of ``Z`` in one BLAS call. Because ``K`` is
symmetric, only the blocks on and above the diagonal are computed (half the kernel
evaluations and half the flops). Memory is ``O(tile_rows * n + n * q)``.

(Design notes, sec. 5: "one pairwise engine".)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calaudit.numerics.kernels import Gram

#: Target size, in float64 entries, of one kernel block (about 32 MB).
BLOCK_ENTRIES = 4_000_000


def tile_rows_for(n: int, block_entries: int = BLOCK_ENTRIES) -> int:
    """Rows per tile so that one ``tile x n`` block holds about ``block_entries`` values."""
    return int(min(max(n, 1), max(16, block_entries // max(n, 1))))


def _tiles(n: int, tile_rows: int):
    for start in range(0, n, tile_rows):
        yield start, min(start + tile_rows, n)


def kernel_matmul(
    gram: Gram, z: NDArray[np.float64], *, tile_rows: int | None = None
) -> NDArray[np.float64]:
    """``K @ Z`` for ``Z`` of shape (n,) or (n, q), without forming ``K``.

    For each tile ``a`` the block ``K[a, a_start:]`` (upper part) is computed once and used
    twice: ``out[a] += K[a, a_start:] @ Z[a_start:]`` and, by symmetry,
    ``out[a_end:] += K[a, a_end:]^T @ Z[a]``.
    """
    n = gram.n
    matrix = np.asarray(z, dtype=np.float64)
    flat = matrix.reshape(n, -1)
    out = np.zeros_like(flat)
    step = tile_rows or tile_rows_for(n)
    for start, stop in _tiles(n, step):
        block = gram.block(slice(start, stop), slice(start, n))
        out[start:stop] += block @ flat[start:]
        if stop < n:
            out[stop:] += block[:, stop - start :].T @ flat[start:stop]
    return out.reshape(matrix.shape)


def kernel_quadratic_forms(
    gram: Gram,
    z: NDArray[np.float64],
    *,
    exclude_diagonal: bool = True,
    tile_rows: int | None = None,
) -> NDArray[np.float64]:
    """Quadratic forms of ``K`` with each column of ``Z``, summed over class slices.

    ``Z`` has shape (n,), (n, q) or (n, m, q). The result has shape () / (q,) / (q,):

    ``Q_c = sum_{i, j} K_ij <Z_i., Z_j.>_c``  (``<., .>`` sums over the class axis ``m``),

    with the ``i = j`` terms removed when ``exclude_diagonal`` (the U-statistic sums
    over ``i != j``). With ``Z`` the residuals ``e_{y_i} - p_i`` this is
    ``sum_{i != j} h_ij`` of the SKCE (Widmann et al. 2019, eq. 6); with resampled
    residuals in the columns it is every resample's statistic at once.
    """
    n = gram.n
    matrix = np.asarray(z, dtype=np.float64)
    if matrix.ndim == 1:
        return kernel_quadratic_forms(
            gram, matrix[:, None], exclude_diagonal=exclude_diagonal, tile_rows=tile_rows
        )[0]
    if matrix.ndim == 2:
        matrix = matrix[:, None, :]
    m, q = matrix.shape[1], matrix.shape[2]
    flat = matrix.reshape(n, m * q)
    totals = np.zeros(m * q)
    step = tile_rows or tile_rows_for(n)
    for start, stop in _tiles(n, step):
        block = gram.block(slice(start, stop), slice(start, n))
        here = flat[start:stop]
        upper = block @ flat[start:]
        on_diag_block = block[:, : stop - start] @ here
        totals += 2.0 * np.einsum("ij,ij->j", here, upper)
        totals -= np.einsum("ij,ij->j", here, on_diag_block)
    if exclude_diagonal:
        totals -= gram.diagonal() @ (flat * flat)
    return totals.reshape(m, q).sum(axis=0)


def kernel_forms_and_matvec(
    gram: Gram,
    z: NDArray[np.float64],
    v: NDArray[np.float64] | None = None,
    *,
    exclude_diagonal: bool = True,
    gemm_dtype: type = np.float64,
    tile_rows: int | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`kernel_quadratic_forms` of the columns of ``z`` (n, q) **and** ``K @ v``
    (``v`` of shape (n,); skipped when ``None``) in one pass over the tiles, so each kernel
    block is computed once.

    ``gemm_dtype=np.float32`` runs the products with ``z`` in single precision (the block
    is rounded to float32, accumulation of the per-tile results stays float64): twice the
    throughput, relative error about ``1e-7`` per tile product. ``K @ v`` is float64.
    """
    n = gram.n
    flat = np.asarray(z, dtype=np.float64).reshape(n, -1)
    low = flat.astype(gemm_dtype, copy=False)
    vector = None if v is None else np.asarray(v, dtype=np.float64)
    totals = np.zeros(flat.shape[1])
    product = np.zeros(n)
    step = tile_rows or tile_rows_for(n)
    for start, stop in _tiles(n, step):
        block = gram.block(slice(start, stop), slice(start, n))
        if vector is not None:
            product[start:stop] += block @ vector[start:]
            if stop < n:
                product[stop:] += block[:, stop - start:].T @ vector[start:stop]
        # keep i <= j inside the diagonal block, halve i == j: one product then gives
        # sum_{j > i} K_ij z_i z_j + sum_i K_ii z_i^2 / 2 for the rows of this tile
        size = stop - start
        square = block[:, :size]
        square[np.tril_indices(size, -1)] = 0.0
        square[np.diag_indices(size)] *= 0.5
        upper = (block.astype(gemm_dtype, copy=False) @ low[start:]).astype(np.float64)
        totals += 2.0 * np.einsum("ij,ij->j", flat[start:stop], upper)
    if exclude_diagonal:
        totals -= gram.diagonal() @ (flat * flat)
    return totals, product
