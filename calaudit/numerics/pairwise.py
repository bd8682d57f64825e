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

from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.numerics.kernels import Gram
from calaudit.numerics.row_blocks import ThreadExecutor, one_blas_thread

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


#: Rows per tile of :func:`kernel_forms_and_matmul`; GEMM throughput grows with the tile
#: height (the resample matrix is packed once per tile), e.g. about 4x from 82 to 1024 rows.
FUSED_TILE_ROWS = 1024
#: Entries of one kernel block of :func:`kernel_forms_and_matmul` (16 MB of float64): one
#: block per thread, so two threads hold what one 32 MB block did; the GEMMs run at the
#: same speed from 2,000 columns on.
FUSED_BLOCK_ENTRIES = 2_000_000


def _tiles_2d(n: int, tile_rows: int, chunk_cols: int):
    """Row tiles ``[a, b)`` of the upper triangle and their column chunks ``[c, d)``,
    ``c >= a``; the first chunk of a tile starts on its diagonal and, since
    ``chunk_cols >= tile_rows``, contains the whole diagonal block."""
    if chunk_cols < tile_rows:
        raise ValueError("column chunks must be at least as wide as the row tiles")
    for start, stop in _tiles(n, tile_rows):
        for c0 in range(start, n, chunk_cols):
            yield start, stop, c0, min(n, c0 + chunk_cols)


def kernel_forms_and_matmul(
    gram: Gram,
    z: NDArray[np.float64],
    w: NDArray[np.float64] | None = None,
    *,
    exclude_diagonal: bool = True,
    tile_rows: int | None = None,
    block_entries: int = FUSED_BLOCK_ENTRIES,
    dtype: type = np.float64,
    matmul_dtype: type | None = None,
    executor: Any = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`kernel_quadratic_forms` of ``Z`` and :func:`kernel_matmul` ``K @ W`` from
    **one** pass over the kernel (each kernel entry is evaluated once for both).

    ``Z`` has shape (n, q) or (n, m, q) (forms summed over the class axis, as in
    :func:`kernel_quadratic_forms`); ``W`` has shape (n, r) (``None``: r = 0). The upper
    triangle is visited in tiles of ``tile_rows`` rows (default :data:`FUSED_TILE_ROWS`),
    each cut into column chunks of about ``block_entries`` entries, so memory stays
    ``O(block_entries + tile_rows * (q + r))`` however tall the tile. Per chunk: one GEMM
    with ``Z`` (row products of the forms), one with ``W`` (upper part of ``K @ W``) and a
    narrow one with the chunk's transpose (lower part). No copy of ``Z`` is made (``Z`` is
    typically all resamples of a test, n x B floats). Use it when a statistic's resampled
    columns and a few kernel-weighted sums (e.g. the local calibration bias) are needed
    from the same kernel.

    ``executor`` (``map_sum`` of :mod:`calaudit.numerics.row_blocks`: serial, threads or
    Dask) computes every row tile as a task (:func:`tile_partial`: its kernel block,
    chunk by chunk, and its GEMMs) and adds the tiles' partial forms and products **in
    tile order**, so the result has the same bytes whatever runs the tiles (one thread,
    several threads with BLAS at one thread each, or cluster workers). ``None``: a
    :class:`~calaudit.numerics.row_blocks.ThreadExecutor` on the usable cores. Tiles on
    threads of their own beat one tile at a time with a threaded kernel fill and a
    threaded GEMM: no core waits for the other phase, and no BLAS thread spins while the
    kernel block is filled.

    ``dtype=np.float32`` runs the GEMMs (and, when the Gram supports it, the kernel
    evaluation) in single precision -- about twice as fast -- with the forms accumulated
    in double precision; the relative rounding error of each form is then of order
    ``1e-7 sqrt(n)`` (for resampled null statistics, not for reported estimates).
    ``matmul_dtype`` (default: ``dtype``) sets the precision of ``K @ W`` separately, e.g.
    single-precision forms of bootstrap counts with exact row sums ``K @ 1``.
    """
    n = gram.n
    zm = np.asarray(z, dtype=dtype)
    zm = zm[:, None, :] if zm.ndim == 2 else zm
    m, q = zm.shape[1], zm.shape[2]
    flat = zm.reshape(n, m * q)
    wdtype = matmul_dtype or dtype
    wm = np.zeros((n, 0), wdtype) if w is None else np.asarray(w, dtype=wdtype).reshape(n, -1)
    rows = min(n, tile_rows or FUSED_TILE_ROWS)
    threaded = getattr(executor, "threads", 1) > 1
    shared = {"gram": gram, "flat": flat, "w": wm, "chunk": max(rows, block_entries // rows),
              "dtype": np.dtype(dtype).name, "pooled": not threaded}
    total = (executor or ThreadExecutor()).map_sum(tile_partial, list(_tiles(n, rows)),
                                                  shared)
    totals, products = total["forms"], total["products"]
    if exclude_diagonal:
        diagonal = gram.diagonal()
        f8 = np.float64
        for start, stop in _tiles(n, rows):
            part = flat[start:stop]
            totals -= np.einsum("i,ij,ij->j", diagonal[start:stop], part, part, dtype=f8)
    return totals.reshape(m, q).sum(axis=0), products


def tile_partial(start: int, stop: int, *, gram: Gram, flat: NDArray, w: NDArray,
                 chunk: int, dtype: str, pooled: bool) -> dict[str, NDArray[np.float64]]:
    """The row tile ``[start, stop)`` of :func:`kernel_forms_and_matmul`: its blocks
    ``K[start:stop, c0:c1]`` of the upper triangle (column chunks of ``chunk`` entries,
    the first one holding the diagonal block), with

    * ``forms``: ``sum_{i, j in tile} K_ij <Z_i, Z_j> + 2 sum_{i in tile, j >= stop} K_ij
      <Z_i, Z_j>`` (the tile's share of every quadratic form, diagonal still included).
      Without ``W`` the diagonal block enters the doubled upper products with its lower
      triangle zeroed and its diagonal halved (:func:`_halve_diagonal_block`); with ``W``
      (which needs the whole block) its form is subtracted after, one more GEMM;
    * ``products``: the tile's contributions to ``K @ W`` (its own rows from the upper
      blocks, the later rows from the blocks' transposes), an (n, r) array.

    ``pooled``: fill the kernel block on the kernel's thread pool (when the tiles run one
    at a time); a task on a thread of its own fills it in its own thread.
    """
    n = gram.n
    precision = np.dtype(dtype).type
    q, r = flat.shape[1], w.shape[1]
    native = getattr(gram, "supports_dtype", False) and w.dtype == precision
    # one GEMM with [Z | W] per chunk (a small copy) when both share a precision
    narrow = r and q + r <= 64 and w.dtype == precision
    here = flat[start:stop]
    upper = np.zeros((stop - start, q), dtype=precision)
    products = np.zeros((n, r))
    forms = np.zeros(q)
    f8 = np.float64
    with one_blas_thread():  # the GEMMs' bits must not depend on where the task runs
        for c0 in range(start, n, chunk):
            _tile_chunk(gram, start, stop, c0, min(n, c0 + chunk), here, flat, w, upper,
                        products, forms, precision, native, narrow, pooled)
    forms += 2.0 * np.einsum("ij,ij->j", here, upper, dtype=f8)
    return {"forms": forms, "products": products}


#: Entries of the row groups of a products-only pass (1 MB of float64, cache resident).
GROUP_ENTRIES = 131_072


def _products_only(gram: Gram, start: int, stop: int, c0: int, c1: int, w: NDArray,
                   products: NDArray, precision: type, pooled: bool) -> None:
    """``K @ W`` alone (e.g. the LCB's ``K @ [r, 1]``): the block ``K[start:stop, c0:c1]``
    is filled and multiplied a group of rows at a time, so both narrow GEMMs read it from
    the cache instead of from memory (a GEMM with two columns is bound by memory)."""
    group = max(1, GROUP_ENTRIES // (c1 - c0))
    lower = max(c0, stop)
    for a0 in range(start, stop, group):
        a1 = min(stop, a0 + group)
        part = gram.block(slice(a0, a1), slice(c0, c1), dtype=precision, pooled=pooled)
        products[a0:a1] += part @ w[c0:c1]
        if lower < c1:
            products[lower:c1] += part[:, lower - c0:].T @ w[a0:a1]


def _halve_diagonal_block(block: NDArray, size: int) -> None:
    """In the first ``size`` columns (the diagonal block), zero the entries below the
    diagonal and halve the diagonal: ``2 z^T (B' z) = z^T B z`` for the symmetric block
    ``B``, so the tile's doubled upper products count each of its own pairs once."""
    square = block[:, :size]
    square[np.tril_indices(size, -1)] = 0.0
    square[np.diag_indices(size)] *= 0.5


def _tile_chunk(gram: Gram, start: int, stop: int, c0: int, c1: int, here: NDArray,
                flat: NDArray, w: NDArray, upper: NDArray, products: NDArray,
                forms: NDArray, precision: type, native: bool, narrow: bool,
                pooled: bool) -> None:
    """One block ``K[start:stop, c0:c1]`` of :func:`tile_partial`, added into its
    ``upper`` row products, ``products`` and (diagonal block) ``forms``."""
    q, r, f8 = flat.shape[1], w.shape[1], np.float64
    if q == 0 and r and native:
        _products_only(gram, start, stop, c0, c1, w, products, precision, pooled)
        return
    if native:
        block = (gram.block(slice(start, stop), slice(c0, c1), dtype=precision)
                 if pooled else gram.block(slice(start, stop), slice(c0, c1),
                                           dtype=precision, pooled=False))
        wblock = block
    else:
        exact = gram.block(slice(start, stop), slice(c0, c1))
        block = exact.astype(precision, copy=False)
        wblock = exact.astype(w.dtype, copy=False)
    if c0 == start and r:  # the block also serves K @ W: correct the forms after
        diag_part = block[:, : stop - start] @ here
        forms -= np.einsum("ij,ij->j", here, diag_part, dtype=f8)
    elif c0 == start:  # forms only: count the diagonal block's pairs once, no extra GEMM
        _halve_diagonal_block(block, stop - start)
    if narrow:
        both = block @ np.hstack([flat[c0:c1], w[c0:c1]])
        upper += both[:, :q]
        products[start:stop] += both[:, q:]
    else:
        upper += block @ flat[c0:c1]
        if r:
            products[start:stop] += wblock @ w[c0:c1]
    lower = max(c0, stop)
    if r and lower < c1:
        products[lower:c1] += wblock[:, lower - c0:].T @ w[start:stop]
