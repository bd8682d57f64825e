"""The pairwise engine: products with an n x n kernel matrix, never stored.

Every quadratic statistic in calaudit (SKCE, KLCE, their resampling nulls, LCB) reduces to
products ``K @ Z`` or quadratic forms ``z^T K z`` with a kernel matrix ``K`` and a matrix
``Z`` whose columns are residual vectors, resampled residual vectors or weights. ``K`` is
never stored: its blocks are computed one at a time, each multiplied by all columns of
``Z`` in one BLAS call. Because ``K`` is symmetric, only the blocks on and above the
diagonal are computed (half the kernel evaluations and half the flops).

:func:`kernel_matmul` and :func:`kernel_quadratic_forms` walk row tiles in this process.
:func:`kernel_forms_and_matmul`, the engine of the exact tests, cuts the rows into fixed
blocks of the global row index and makes each pair of blocks ``I <= J`` one task that
reads those two blocks only (:func:`pair_partial`), combined in pair order
(:func:`fold_pairs`): the same bytes on one thread, on threads, or on Dask workers that
each hold some of the blocks, whatever the files or partitions the rows came from.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.numerics.kernels import Gram, ProductGram
from calaudit.scale import one_blas_thread

#: Target size, in float64 entries, of one kernel block (about 32 MB).
BLOCK_ENTRIES = 4_000_000


def as_columns(r: NDArray[np.float64]) -> NDArray[np.float64]:
    """Residuals in the engine's layout: (n, 1) scalar or (n, m, 1) vector residuals."""
    return r[:, None] if r.ndim == 1 else r[:, :, None]


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


#: Rows per fixed row block of :func:`kernel_forms_and_matmul` (blocks ``[k b, (k + 1) b)``
#: of the global row index, whatever the files, partitions or workers). A task is a pair
#: of blocks: one ``b x b`` kernel block (8 MB of float64 at 1024) and its GEMMs, whose
#: throughput grows with the block (the resample matrix is packed once per block).
FUSED_TILE_ROWS = 1024


def pair_blocks(n: int, block_rows: int = FUSED_TILE_ROWS) -> list[tuple[int, int]]:
    """The fixed row blocks ``[k b, min((k + 1) b, n))``, k = 0, 1, ...: keyed by the
    global row index only (the reproducibility rule of
    :mod:`calaudit.scale`)."""
    return list(_tiles(n, max(1, int(block_rows))))


def block_pairs(k: int) -> list[tuple[int, int]]:
    """The pairs ``(I, J)``, ``I <= J``, of ``k`` blocks in the pass's fixed order
    (``I``-major): the upper triangle of the kernel matrix, block by block."""
    return [(i, j) for i in range(k) for j in range(i, k)]


@dataclass(frozen=True)
class RowBlock:
    """The inputs of one row block ``[start, stop)`` of a pass: the kernel's rows, the
    block's rows of ``Z`` (flattened over classes) and of ``W``.

    In process ``gram`` is the whole Gram and ``offset = start`` (views, no copy);
    :meth:`detached` gives the block alone (``gram`` restricted to the block's rows,
    ``offset = 0``, contiguous copies): what an executor that places data on other
    processes (Dask) sends, one value per block."""

    start: int
    stop: int
    gram: Any
    offset: int
    z: NDArray
    w: NDArray

    @property
    def size(self) -> int:
        return self.stop - self.start

    @property
    def rows(self) -> slice:
        """This block's rows in :attr:`gram`."""
        return slice(self.offset, self.offset + self.size)

    def detached(self) -> RowBlock:
        """The block on its own (nothing of the other rows): the restricted Gram
        (:func:`gram_rows`) and copies of its rows of ``Z`` and ``W``."""
        if self.offset == 0 and getattr(self.gram, "n", None) == self.size:
            return self
        try:
            gram = gram_rows(self.gram, self.rows)
        except TypeError:  # a Gram calaudit cannot cut: the whole Gram goes along
            return RowBlock(self.start, self.stop, self.gram, self.offset,
                            np.ascontiguousarray(self.z), np.ascontiguousarray(self.w))
        return RowBlock(self.start, self.stop, gram, 0, np.ascontiguousarray(self.z),
                        np.ascontiguousarray(self.w))

    def __sizeof__(self) -> int:
        features = getattr(self.gram, "features", None)
        extra = int(getattr(features, "nbytes", 0)) if self.offset == 0 else 0
        return int(self.z.nbytes + self.w.nbytes) + extra


def gram_rows(gram: Any, rows: slice) -> Any:
    """The Gram of the rows ``rows`` alone: same kernel, the rows' features only (a
    :class:`~calaudit.numerics.kernels.BoundKernel`, a ``GaussianProductGram`` or a
    :class:`~calaudit.numerics.kernels.ProductGram` of those). Entries are computed from
    the same two rows, so they are the bits of ``gram.block``. ``TypeError`` for another
    kind of Gram."""
    if isinstance(gram, ProductGram):
        return ProductGram(tuple(gram_rows(factor, rows) for factor in gram.factors))
    if dataclasses.is_dataclass(gram) and hasattr(gram, "features"):
        return dataclasses.replace(gram, features=np.asarray(gram.features[rows]))
    raise TypeError(f"cannot take the rows of a {type(gram).__name__}")


def _cuttable(gram: Any) -> bool:
    """Whether :func:`gram_rows` can cut ``gram`` (else blocks carry it whole)."""
    if isinstance(gram, ProductGram):
        return all(_cuttable(factor) for factor in gram.factors)
    return dataclasses.is_dataclass(gram) and hasattr(gram, "features")


def _joined(a: Any, b: Any) -> Any:
    """One Gram on the rows of ``a`` then those of ``b`` (two :func:`gram_rows`)."""
    if isinstance(a, ProductGram):
        return ProductGram(tuple(_joined(x, y) for x, y in zip(a.factors, b.factors)))
    return dataclasses.replace(a, features=np.concatenate([a.features, b.features]))


def _pair_frame(left: RowBlock, right: RowBlock) -> tuple[Any, int]:
    """A Gram holding both blocks' rows and the offset of ``right``'s rows in it
    relative to its own Gram: the block itself in process (same Gram), else the two
    placed blocks' features joined once per pair. A Gram that cannot be cut
    (:func:`gram_rows`, e.g. a dense one) travels whole with each block, at the blocks'
    global offsets: either copy serves."""
    if left.gram is right.gram or not _cuttable(left.gram):
        return left.gram, 0
    return _joined(left.gram, right.gram), int(left.gram.n)


def _kernel_rows(gram: Any, shift: int, left: RowBlock, right: RowBlock,
                 dtype: type | None, pooled: bool) -> NDArray:
    """``K[left rows, right rows]`` from :func:`_pair_frame`'s Gram (``dtype``: a Gram
    that ``supports_dtype``; ``None``: its float64 ``block``)."""
    cols = slice(shift + right.offset, shift + right.offset + right.size)
    if dtype is None:
        return gram.block(left.rows, cols)
    return gram.block(left.rows, cols, dtype=dtype, pooled=pooled)


def kernel_forms_and_matmul(
    gram: Gram,
    z: NDArray[np.float64],
    w: NDArray[np.float64] | None = None,
    *,
    exclude_diagonal: bool = True,
    tile_rows: int | None = None,
    dtype: type = np.float64,
    matmul_dtype: type | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`kernel_quadratic_forms` of ``Z`` and :func:`kernel_matmul` ``K @ W`` from
    **one** pass over the kernel (each kernel entry is evaluated once for both).

    ``Z`` has shape (n, q) or (n, m, q) (forms summed over the class axis, as in
    :func:`kernel_quadratic_forms`); ``W`` has shape (n, r) (``None``: r = 0).

    **Decomposition.** The rows are cut into fixed blocks of ``b = tile_rows`` rows
    (default :data:`FUSED_TILE_ROWS`; :func:`pair_blocks`, keyed by the global row
    index). Every pair of blocks ``I <= J`` (:func:`block_pairs`) is one task
    (:func:`pair_partial`), which reads only blocks ``I`` and ``J``: the kernel block
    ``K_IJ``, one GEMM ``K_IJ [Z_J | W_J]``, for ``I < J`` one with ``K_IJ^T W_I``, and
    the forms' share ``f_IJ = sum_{i in I} <Z_i, (K_IJ Z_J)_i>`` (float64). No copy of
    ``Z`` is made (``Z`` is typically all resamples of a test, n x B floats).

    **Combination**, on the caller, in pair order (:func:`fold_pairs`): the forms are the
    left fold of ``f_II`` and ``2 f_IJ`` (``I < J``: the pair stands for both triangles);
    ``K @ W`` is the left fold of each pair's ``K_IJ W_J`` into the rows of ``I`` and
    ``K_IJ^T W_I`` into those of ``J``. The bits are fixed by ``b`` and this order alone:
    the same whatever runs the pairs (``executor.map_pairs``: one thread, threads with
    BLAS at one thread each, or Dask workers holding one placed value per block) and
    however the rows were stored (the executor in force, :func:`calaudit.scale.current`).

    ``dtype=np.float32`` runs the GEMMs (and, when the Gram supports it, the kernel
    evaluation) in single precision -- about twice as fast -- with the forms accumulated
    in double precision across pairs; the relative rounding error of each form is then of
    order ``1e-7 sqrt(b)`` (for resampled null statistics, not for reported estimates).
    ``matmul_dtype`` (default: ``dtype``) sets the precision of ``K @ W`` separately, e.g.
    single-precision forms of bootstrap counts with exact row sums ``K @ 1``.

    Cost: ``n^2 / 2`` kernel entries and ``n^2 (q + r)`` multiply-adds, in
    ``k (k + 1) / 2`` tasks of ``b^2`` entries (``k = n / b``); memory per task
    ``O(b^2 + b (q + r))``.
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


def partial_fold(n: int, q: int, r: int, ranges: list[tuple[int, int]]):
    """The combination of :func:`kernel_forms_and_matmul`: a function of the pairs'
    partials, in pair order, returning ``(forms, K @ W)`` (:func:`fold_pairs`)."""
    def combine(partials):
        return fold_pairs(partials, n, q, r, ranges)
    return combine


def fold_pairs(partials, n: int, q: int, r: int, ranges: list[tuple[int, int]]
               ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Left fold, in the given (pair) order, of :func:`pair_partial` results: ``forms +=
    f`` (``I = J``) or ``forms += 2 f`` (``I < J``), and ``products[I] += left``,
    ``products[J] += right`` (float64)."""
    forms = np.zeros(q)
    products = np.zeros((n, r))
    for part in partials:
        i, j = int(part["pair"][0]), int(part["pair"][1])
        forms += part["forms"] if i == j else 2.0 * part["forms"]
        if r:
            a, b = ranges[i]
            products[a:b] += part["left"]
            if i != j:
                c, d = ranges[j]
                products[c:d] += part["right"]
    return forms, products


def group_partial(a: int, b: int, left: RowBlock, right: RowBlock, *, block_rows: int,
                  **shared: Any) -> dict[str, list]:
    """The pairs ``(i, j)``, ``i <= j``, of the blocks of ``block_rows`` rows inside two
    groups of consecutive blocks (``left``, ``right``; group ``a <= b``), each computed by
    :func:`pair_partial` from views of the groups: a coarser task (fewer tasks, fewer
    transfers per kernel entry on a cluster) with the very same pairs, hence the same bits
    once :func:`in_pair_order` puts them back in pair order."""
    parts = []
    for lo in range(0, left.size, block_rows):
        i = (left.start + lo) // block_rows
        sub_left = _sub_block(left, lo, block_rows)
        for co in range(0, right.size, block_rows):
            j = (right.start + co) // block_rows
            if j >= i:
                parts.append(pair_partial(i, j, sub_left, _sub_block(right, co, block_rows),
                                          **shared))
    return {"parts": parts}


def _sub_block(block: RowBlock, lo: int, rows: int) -> RowBlock:
    hi = min(block.size, lo + rows)
    return RowBlock(block.start + lo, block.start + hi, block.gram, block.offset + lo,
                    block.z[lo:hi], block.w[lo:hi])


def in_pair_order(results, pairs: list[tuple[int, int]]):
    """The pair partials inside :func:`group_partial` results, in the order ``pairs``
    (each yielded as soon as every pair before it has arrived)."""
    ready: dict[tuple[int, int], Any] = {}
    position = 0
    for result in results:
        for part in result["parts"]:
            ready[(int(part["pair"][0]), int(part["pair"][1]))] = part
        while position < len(pairs) and pairs[position] in ready:
            yield ready.pop(pairs[position])
            position += 1
    if position != len(pairs):
        raise ValueError(f"{len(pairs) - position} block pairs are missing")


#: Entries of the row groups of a products-only pass (1 MB of float64, cache resident).
GROUP_ENTRIES = 131_072


def pair_partial(i: int, j: int, left: RowBlock, right: RowBlock, *, dtype: str,
                 native: bool, pooled: bool) -> dict[str, NDArray]:
    """The pair of blocks ``(I, J) = (i, j)``, ``I <= J``, of :func:`kernel_forms_and_matmul`
    from those two blocks alone:

    * ``forms``: ``f_IJ = sum_{a in I, b in J} K_ab <Z_a, Z_b>`` (diagonal included when
      ``I = J``), float64 from one GEMM ``K_IJ Z_J``;
    * ``left``: ``K_IJ W_J`` (rows of ``I``); ``right``: ``K_IJ^T W_I`` (rows of ``J``,
      ``I < J`` only).

    ``native``: the Gram fills the block in ``dtype`` (else float64, then cast);
    ``pooled``: fill it on the kernel's thread pool (else in the calling thread). BLAS
    runs one thread inside the task, so the bits do not depend on where it runs.
    """
    precision = np.dtype(dtype).type
    q, r, f8 = left.z.shape[1], left.w.shape[1], np.float64
    out: dict[str, NDArray] = {"pair": np.array([i, j])}
    with one_blas_thread():  # the GEMMs' bits must not depend on where the task runs
        frame = _pair_frame(left, right)
        if q == 0 and r and native:
            out["left"], right = _products_only(frame, left, right, precision, pooled,
                                                i == j)
            out["forms"] = np.zeros(0)
            if i != j:
                out["right"] = right
            return out
        if native:
            block = _kernel_rows(*frame, left, right, precision, pooled)
            wblock = block
        else:
            exact = _kernel_rows(*frame, left, right, None, pooled)
            block = exact.astype(precision, copy=False)
            wblock = exact.astype(left.w.dtype, copy=False)
        if r and q + r <= 64 and left.w.dtype == precision:  # one GEMM with [Z | W]
            both = block @ np.hstack([right.z, right.w])
            upper, out["left"] = both[:, :q], both[:, q:].astype(f8)
        else:
            upper = block @ right.z
            if r:
                out["left"] = (wblock @ right.w).astype(f8, copy=False)
        if r and i != j:
            out["right"] = (wblock.T @ left.w).astype(f8, copy=False)
    out["forms"] = np.einsum("ij,ij->j", left.z, upper, dtype=f8)
    return out


def _products_only(frame: tuple[Any, int], left: RowBlock, right: RowBlock,
                   precision: type, pooled: bool, diagonal: bool) -> tuple[NDArray, NDArray | None]:
    """``K_IJ W_J`` and ``K_IJ^T W_I`` alone (e.g. the LCB's ``K @ [r, 1]``): the block is
    filled and multiplied a group of rows at a time, so both narrow GEMMs read it from the
    cache instead of from memory (a GEMM with two columns is bound by memory)."""
    r, f8 = left.w.shape[1], np.float64
    group = max(1, GROUP_ENTRIES // right.size)
    own = np.zeros((left.size, r))
    other = None if diagonal else np.zeros((right.size, r))
    for a0 in range(0, left.size, group):
        a1 = min(left.size, a0 + group)
        rows = RowBlock(left.start + a0, left.start + a1, left.gram, left.offset + a0,
                        left.z[a0:a1], left.w[a0:a1])
        part = _kernel_rows(*frame, rows, right, precision, pooled)
        own[a0:a1] += part @ right.w
        if other is not None:
            other += (part.T @ left.w[a0:a1]).astype(f8, copy=False)
    return own, other
