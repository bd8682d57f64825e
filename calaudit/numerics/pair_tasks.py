"""The block-pair tasks of :func:`calaudit.numerics.pairwise.kernel_forms_and_matmul`
(:func:`pair_partial`, :func:`group_partial`) and their fold in pair order
(:func:`fold_pairs`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.numerics.kernels import ProductGram
from calaudit.scale import one_blas_thread


def tiles(n: int, tile_rows: int):
    for start in range(0, n, tile_rows):
        yield start, min(start + tile_rows, n)


#: Rows per fixed row block ``[k b, (k + 1) b)`` of the global row index.
FUSED_TILE_ROWS = 1024


def pair_blocks(n: int, block_rows: int = FUSED_TILE_ROWS) -> list[tuple[int, int]]:
    """The fixed row blocks ``[k b, min((k + 1) b, n))``, k = 0, 1, ..."""
    return list(tiles(n, max(1, int(block_rows))))


def block_pairs(k: int) -> list[tuple[int, int]]:
    """The pairs ``(I, J)``, ``I <= J``, of ``k`` blocks, ``I``-major."""
    return [(i, j) for i in range(k) for j in range(i, k)]


@dataclass(frozen=True)
class RowBlock:
    """One row block ``[start, stop)`` of a pass: ``gram`` (whole, ``offset = start``, in
    process; :meth:`detached`: the block's rows alone, ``offset = 0``) and the block's
    rows of ``Z`` (flattened over classes) and ``W``."""

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
        """The block on its own: the restricted Gram (:func:`gram_rows`) and copies of
        its rows of ``Z`` and ``W``."""
        if self.offset == 0 and getattr(self.gram, "n", None) == self.size:
            return self
        try:
            gram, offset = gram_rows(self.gram, self.rows), 0
        except TypeError:  # a Gram calaudit cannot cut: the whole Gram goes along
            gram, offset = self.gram, self.offset
        return RowBlock(self.start, self.stop, gram, offset, np.ascontiguousarray(self.z),
                        np.ascontiguousarray(self.w))

    def __sizeof__(self) -> int:
        features = getattr(self.gram, "features", None)
        extra = int(getattr(features, "nbytes", 0)) if self.offset == 0 else 0
        return int(self.z.nbytes + self.w.nbytes) + extra


def gram_rows(gram: Any, rows: slice) -> Any:
    """The Gram of the rows ``rows`` alone (same kernel and entries; a Gram with
    ``features`` or a :class:`~calaudit.numerics.kernels.ProductGram` of those, else
    ``TypeError``; a Gram of other Grams cuts itself: ``rows_of``)."""
    if hasattr(gram, "rows_of"):
        return gram.rows_of(rows)
    if isinstance(gram, ProductGram):
        return ProductGram(tuple(gram_rows(factor, rows) for factor in gram.factors))
    if dataclasses.is_dataclass(gram) and hasattr(gram, "features"):
        return dataclasses.replace(gram, features=np.asarray(gram.features[rows]))
    raise TypeError(f"cannot take the rows of a {type(gram).__name__}")


def cuttable(gram: Any) -> bool:
    """Whether :func:`gram_rows` can cut ``gram`` (else blocks carry it whole)."""
    if hasattr(gram, "rows_of"):
        return bool(gram.cuttable)
    if isinstance(gram, ProductGram):
        return all(cuttable(factor) for factor in gram.factors)
    return dataclasses.is_dataclass(gram) and hasattr(gram, "features")


def joined(a: Any, b: Any) -> Any:
    """One Gram on the rows of ``a`` then those of ``b`` (two :func:`gram_rows`)."""
    if hasattr(a, "rows_of"):
        return a.joined_with(b)
    if isinstance(a, ProductGram):
        return ProductGram(tuple(joined(x, y) for x, y in zip(a.factors, b.factors)))
    return dataclasses.replace(a, features=np.concatenate([a.features, b.features]))


def _pair_frame(left: RowBlock, right: RowBlock) -> tuple[Any, int]:
    """A Gram holding both blocks' rows and the shift of ``right``'s rows in it: the shared
    Gram in process (or one that cannot be cut), else the two blocks' features joined."""
    if left.gram is right.gram or not cuttable(left.gram):
        return left.gram, 0
    return joined(left.gram, right.gram), int(left.gram.n)


def _kernel_rows(gram: Any, shift: int, left: RowBlock, right: RowBlock,
                 dtype: type | None, pooled: bool) -> NDArray:
    """``K[left rows, right rows]`` from :func:`_pair_frame`'s Gram (``dtype``: a Gram
    that ``supports_dtype``; ``None``: its float64 ``block``)."""
    cols = slice(shift + right.offset, shift + right.offset + right.size)
    if dtype is None:
        return gram.block(left.rows, cols)
    return gram.block(left.rows, cols, dtype=dtype, pooled=pooled)


def partial_fold(n: int, q: int, r: int, ranges: list[tuple[int, int]]):
    """:func:`fold_pairs` as a function of the partials alone."""
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
    """:func:`pair_partial` of every pair ``(i, j)``, ``i <= j``, of blocks of ``block_rows``
    rows inside two groups of consecutive blocks (a coarser task with the same pairs)."""
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
    """The pair partials inside :func:`group_partial` results, in the order ``pairs``."""
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
    """The pair of blocks ``(I, J) = (i, j)``, ``I <= J``, of :func:`kernel_forms_and_matmul`:
    ``forms`` ``f_IJ = sum_{a in I, b in J} K_ab <Z_a, Z_b>`` (float64), ``left`` ``K_IJ
    W_J`` and (``I < J``) ``right`` ``K_IJ^T W_I``. ``native``: the Gram fills the block in
    ``dtype``; ``pooled``: on the kernel's thread pool. BLAS runs one thread."""
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
    """``K_IJ W_J`` and ``K_IJ^T W_I`` alone, a group of rows at a time (both narrow GEMMs
    read the block from the cache)."""
    r, f8 = left.w.shape[1], np.float64
    group = max(1, GROUP_ENTRIES // right.size)
    own = np.zeros((left.size, r))
    other = None if diagonal else np.zeros((right.size, r))
    for a0 in range(0, left.size, group):
        a1 = min(left.size, a0 + group)
        part = _kernel_rows(*frame, _sub_block(left, a0, group), right, precision, pooled)
        own[a0:a1] += part @ right.w
        if other is not None:
            other += (part.T @ left.w[a0:a1]).astype(f8, copy=False)
    return own, other
