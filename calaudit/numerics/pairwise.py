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
    return int(max(16, min(n, block_entries // max(n, 1))))


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


def kernel_forms_and_matmul(
    gram: Gram,
    z: NDArray[np.float64],
    w: NDArray[np.float64] | None = None,
    *,
    exclude_diagonal: bool = True,
    tile_rows: int | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`kernel_quadratic_forms` of ``Z`` and :func:`kernel_matmul` ``K @ W`` from
    **one** pass over the kernel (each block is evaluated once for both).

    ``Z`` has shape (n, q) or (n, m, q) (forms summed over the class axis, as in
    :func:`kernel_quadratic_forms`); ``W`` has shape (n, r) (``None``: r = 0). Per tile, one
    GEMM of the block with ``Z`` gives the forms' row products and one with ``W`` the upper
    part of ``K @ W``; a narrow GEMM with the block's transpose adds the lower part. No
    copy of ``Z`` is made (``Z`` is typically all resamples of a test: n x B floats). Use it
    when a statistic's resampled columns and a few kernel-weighted sums (e.g. the local
    calibration bias) are needed from the same kernel.
    """
    n = gram.n
    zm = np.asarray(z, dtype=np.float64)
    zm = zm[:, None, :] if zm.ndim == 2 else zm
    m, q = zm.shape[1], zm.shape[2]
    flat = zm.reshape(n, m * q)
    wm = np.zeros((n, 0)) if w is None else np.asarray(w, dtype=np.float64).reshape(n, -1)
    totals = np.zeros(m * q)
    products = np.zeros_like(wm)
    step = tile_rows or tile_rows_for(n)
    for start, stop in _tiles(n, step):
        block = gram.block(slice(start, stop), slice(start, n))
        here = flat[start:stop]
        totals += 2.0 * np.einsum("ij,ij->j", here, block @ flat[start:])
        totals -= np.einsum("ij,ij->j", here, block[:, : stop - start] @ here)
        if wm.shape[1]:
            products[start:stop] += block @ wm[start:]
            if stop < n:
                products[stop:] += block[:, stop - start:].T @ wm[start:stop]
    if exclude_diagonal:
        diagonal = gram.diagonal()
        for start, stop in _tiles(n, step):
            part = flat[start:stop]
            totals -= np.einsum("i,ij,ij->j", diagonal[start:stop], part, part)
    return totals.reshape(m, q).sum(axis=0), products
