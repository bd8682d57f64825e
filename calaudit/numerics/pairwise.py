"""The pairwise engine: products ``K @ Z`` and quadratic forms ``z^T K z`` with an n x n
kernel matrix that is never stored (its blocks on and above the diagonal computed one at
a time, each multiplied by every column of ``Z`` in one BLAS call).

:func:`kernel_matmul` and :func:`kernel_quadratic_forms` walk row tiles in this process;
:func:`kernel_forms_and_matmul` makes each pair of fixed row blocks ``I <= J`` one task
(:func:`pair_partial`), combined in pair order (:func:`fold_pairs`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.numerics.kernels import Gram
from calaudit.numerics.pair_tasks import (
    FUSED_TILE_ROWS,
    RowBlock,
    block_pairs,
    fold_pairs,
    group_partial,
    in_pair_order,
    pair_blocks,
    pair_partial,
    partial_fold,
    tiles,
)

#: Target size, in float64 entries, of one kernel block (about 32 MB).
BLOCK_ENTRIES = 4_000_000


def as_columns(r: NDArray[np.float64]) -> NDArray[np.float64]:
    """Residuals in the engine's layout: (n, 1) scalar or (n, m, 1) vector residuals."""
    return r[:, None] if r.ndim == 1 else r[:, :, None]


def tile_rows_for(n: int, block_entries: int = BLOCK_ENTRIES) -> int:
    """Rows per tile so that one ``tile x n`` block holds about ``block_entries`` values."""
    return int(min(max(n, 1), max(16, block_entries // max(n, 1))))


def kernel_matmul(gram: Gram, z: NDArray[np.float64], *, tile_rows: int | None = None
                 ) -> NDArray[np.float64]:
    """``K @ Z`` for ``Z`` (n,) or (n, q): each tile's upper block ``K[a, a_start:]`` used
    for ``out[a]`` and, by symmetry, ``out[a_end:]`` (BLAS on one thread: the bits do not
    depend on the threads, as a task's over rows it reads,
    :func:`calaudit.numerics.pair_rows.matmul_of_rows`)."""
    n = gram.n
    matrix = np.asarray(z, dtype=np.float64)
    flat = matrix.reshape(n, -1)
    out = np.zeros_like(flat)
    step = tile_rows or tile_rows_for(n)
    with scale.one_blas_thread():
        for start, stop in tiles(n, step):
            block = gram.block(slice(start, stop), slice(start, n))
            out[start:stop] += block @ flat[start:]
            if stop < n:
                out[stop:] += block[:, stop - start :].T @ flat[start:stop]
    return out.reshape(matrix.shape)


def kernel_quadratic_forms(gram: Gram, z: NDArray[np.float64], *, exclude_diagonal: bool = True,
                           tile_rows: int | None = None) -> NDArray[np.float64]:
    """``Q_c = sum_{i, j} K_ij <Z_i., Z_j.>_c`` for ``Z`` (n,), (n, q) or (n, m, q) (result
    (), (q,), (q,); ``<., .>`` over classes), without the ``i = j`` terms when
    ``exclude_diagonal``: the SKCE's ``sum_{i != j} h_ij`` (Widmann et al. 2019, eq. 6)."""
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
    for start, stop in tiles(n, step):
        block = gram.block(slice(start, stop), slice(start, n))
        here = flat[start:stop]
        upper = block @ flat[start:]
        on_diag_block = block[:, : stop - start] @ here
        totals += 2.0 * np.einsum("ij,ij->j", here, upper)
        totals -= np.einsum("ij,ij->j", here, on_diag_block)
    if exclude_diagonal:
        totals -= gram.diagonal() @ (flat * flat)
    return totals.reshape(m, q).sum(axis=0)


def kernel_forms_and_matmul(gram: Gram, z: NDArray[np.float64],
                            w: NDArray[np.float64] | None = None, *, exclude_diagonal: bool = True,
                            tile_rows: int | None = None, dtype: type = np.float64,
                            matmul_dtype: type | None = None
                           ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`kernel_quadratic_forms` of ``Z`` ((n, q) or (n, m, q)) and :func:`kernel_matmul`
    ``K @ W`` (``W`` (n, r) or ``None``) from one pass over the kernel.

    The rows are cut into fixed blocks of ``b = tile_rows`` rows (default
    :data:`FUSED_TILE_ROWS`); every pair of blocks ``I <= J`` is one task
    (:func:`pair_partial`) computing ``K_IJ``, ``K_IJ [Z_J | W_J]``, for ``I < J`` also
    ``K_IJ^T W_I``, and ``f_IJ = sum_{i in I} <Z_i, (K_IJ Z_J)_i>``. They are combined in
    pair order (:func:`fold_pairs`: forms the left fold of ``f_II`` and ``2 f_IJ``), so the
    bits depend on ``b`` alone, not on what runs the pairs.

    ``dtype=np.float32`` runs the GEMMs (and, when the Gram supports it, the kernel) in
    single precision, the forms accumulated in double (relative error about ``1e-7
    sqrt(b)``); ``matmul_dtype`` (default ``dtype``) sets the precision of ``K @ W``.
    """
    n = gram.n
    zm = np.asarray(z, dtype=dtype)
    zm = zm[:, None, :] if zm.ndim == 2 else zm
    m, q = zm.shape[1], zm.shape[2]
    flat = zm.reshape(n, m * q)
    wdtype = matmul_dtype or dtype
    wm = np.zeros((n, 0), wdtype) if w is None else np.asarray(w, dtype=wdtype).reshape(n, -1)
    ranges = pair_blocks(n, min(n, tile_rows or FUSED_TILE_ROWS))
    blocks = [RowBlock(a, b, gram, a, flat[a:b], wm[a:b]) for a, b in ranges]
    runner = scale.current()
    threaded = getattr(runner, "threads", 1) > 1
    precision = np.dtype(dtype)
    shared = {"dtype": precision.name,
              "native": bool(getattr(gram, "supports_dtype", False) and wm.dtype == precision),
              "pooled": not threaded}
    combine = partial_fold(n, m * q, wm.shape[1], ranges)
    pairs = block_pairs(len(ranges))
    group = max(1, int(getattr(runner, "pair_group", 1)))
    if not hasattr(runner, "map_pairs"):
        totals, products = combine(pair_partial(i, j, blocks[i], blocks[j], **shared)
                                   for i, j in pairs)
    elif group == 1:
        totals, products = runner.map_pairs(pair_partial, pairs, blocks, shared, combine)
    else:  # tasks of group x group pairs: the same pairs, folded in the same order
        spans = [(ranges[g][0], ranges[min(g + group, len(ranges)) - 1][1])
                 for g in range(0, len(ranges), group)]
        groups = [RowBlock(a, b, gram, a, flat[a:b], wm[a:b]) for a, b in spans]
        totals, products = runner.map_pairs(
            group_partial, block_pairs(len(groups)), groups,
            {**shared, "block_rows": ranges[0][1] - ranges[0][0]},
            lambda parts: combine(in_pair_order(parts, pairs)))
    if exclude_diagonal:
        diagonal = gram.diagonal()
        f8 = np.float64
        for start, stop in ranges:
            part = flat[start:stop]
            totals -= np.einsum("i,ij,ij->j", diagonal[start:stop], part, part, dtype=f8)
    return totals.reshape(m, q).sum(axis=0), products


__all__ = [
    "BLOCK_ENTRIES", "FUSED_TILE_ROWS", "RowBlock", "as_columns", "block_pairs", "fold_pairs",
    "kernel_forms_and_matmul", "kernel_matmul", "kernel_quadratic_forms", "pair_blocks",
    "pair_partial", "partial_fold", "tile_rows_for",
]
