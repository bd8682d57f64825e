"""Block pairs whose tasks read their own rows: :func:`forms_and_matmul_of_rows` is
:func:`calaudit.numerics.pairwise.kernel_forms_and_matmul` with the two blocks of each pair
built in the pair's task from a row source, so nothing per row is placed from the caller.

A pass is described by a row source (``n``, ``read(start, stop, names)``: a dataset whose
tasks read their rows; not arrays placed as row blocks, since a pair's task reads two
blocks that no single row range covers) and a
small *recipe* (a frozen object with ``names``, the columns it reads, and ``block(read,
start, stop, **inputs)`` giving the Gram of those rows (one that :func:`~calaudit.numerics.
pair_tasks.gram_rows` can join), their rows of ``Z`` (b, q) and of ``W`` (b, r)). Each pair
``I <= J`` of fixed row blocks is one range of a :func:`calaudit.scale.map_combine`: its
task reads both blocks, builds their columns and runs
:func:`~calaudit.numerics.pair_tasks.pair_partial`; the task of ``(I, I)`` also gives the
diagonal terms of block ``I`` (``sum_{a in I} K_aa <Z_a, Z_a>``). The partials are folded
in pair order (:func:`~calaudit.numerics.pair_tasks.fold_pairs`) and the diagonal terms
taken off block by block, the order of ``kernel_forms_and_matmul``: the same bits when the
blocks' Gram entries and columns are the in-memory ones (every entry is computed from its
own two rows). On Dask a task lost with its worker is run again from its spec (the source
and the recipe travel inside it); ``inputs`` (per-pass values such as a handle from
:func:`calaudit.scale.made`) go in ``shared``.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.numerics import pairwise
from calaudit.numerics.grams import cached
from calaudit.numerics.pair_tasks import (
    RowBlock,
    block_pairs,
    fold_pairs,
    pair_blocks,
    pair_partial,
    tiles,
)


def block_columns(rows: Any, recipe: Any, start: int, stop: int, dtype: type,
                  wdtype: type, inputs: dict[str, Any], dense: bool = False
                  ) -> tuple[RowBlock, NDArray]:
    """The :class:`RowBlock` of rows ``[start, stop)`` built from the source (its own Gram,
    ``offset = 0``; ``Z`` flattened over classes, in ``dtype``; ``W`` in ``wdtype``) and the
    Gram's diagonal on those rows; ``dense``: the Gram held as one matrix
    (:func:`calaudit.numerics.grams.cached`)."""
    read = rows.read(start, stop, list(recipe.names))
    gram, z, w = recipe.block(read, start, stop, **inputs)
    if dense:  # the in-memory Gram of a few rows: its entries from one n x n block
        gram = cached(gram)
    size = stop - start
    zm = np.asarray(z, dtype=dtype).reshape(size, -1)
    wm = np.zeros((size, 0), wdtype) if w is None else np.asarray(w, dtype=wdtype).reshape(
        size, -1)
    return RowBlock(start, stop, gram, 0, zm, wm), gram.diagonal()


def dense(recipe: Any, n: int) -> bool:
    """Whether the in-memory pass holds the Gram of ``n`` rows as one matrix (a recipe
    with ``cached = True``: ``n^2 <= BLOCK_ENTRIES``, :func:`calaudit.numerics.grams.
    cached`): then a task reads every row (at most ``sqrt(BLOCK_ENTRIES)``) and cuts its
    blocks from that matrix, as the in-memory pass does."""
    return bool(getattr(recipe, "cached", False)) and n * n <= pairwise.BLOCK_ENTRIES


def rows_pair_partial(first: int, stop: int, *, rows: Any, recipe: Any,
                      ranges: list[tuple[int, int]], pairs: list[tuple[int, int]], dtype: str,
                      wdtype: str, diagonal: bool, **inputs: Any) -> dict[str, list]:
    """The pairs ``pairs[first:stop]``: each block read once by this task, each pair's
    :func:`pair_partial` (with ``diagonal``, the pair ``(I, I)``'s ``diag`` terms)."""
    precision, wprecision = np.dtype(dtype).type, np.dtype(wdtype).type
    built: dict[int, tuple[RowBlock, NDArray]] = {}
    n = ranges[-1][1]

    def block(k: int) -> tuple[RowBlock, NDArray]:
        if k not in built:
            a, b = ranges[k]
            if dense(recipe, n):  # every block a view of the rows' one dense Gram
                if -1 not in built:
                    built[-1] = block_columns(rows, recipe, 0, n, precision, wprecision,
                                              inputs, dense=True)
                whole, diagonal = built[-1]
                built[k] = (RowBlock(a, b, whole.gram, a, whole.z[a:b], whole.w[a:b]),
                            diagonal[a:b])
            else:
                built[k] = block_columns(rows, recipe, a, b, precision, wprecision, inputs)
        return built[k]

    parts = []
    for i, j in pairs[first:stop]:
        (left, kernel_diagonal), (right, _) = block(i), block(j)
        native = bool(getattr(left.gram, "supports_dtype", False)
                      and left.w.dtype == np.dtype(precision))
        part = pair_partial(i, j, left, right, dtype=np.dtype(precision).name,
                            native=native, pooled=False)
        if diagonal and i == j:
            z = left.z
            part["diag"] = np.einsum("i,ij,ij->j", kernel_diagonal, z, z, dtype=np.float64)
        parts.append(part)
    return {"parts": parts}


def forms_and_matmul_of_rows(rows: Any, recipe: Any, *, inputs: dict[str, Any] | None = None,
                             classes: int = 1, exclude_diagonal: bool = True,
                             tile_rows: int | None = None, dtype: type = np.float64,
                             matmul_dtype: type | None = None
                             ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``kernel_forms_and_matmul(gram, z, w, ...)`` of the Gram and columns that ``recipe``
    builds from ``rows`` (module docstring; ``Z`` of ``classes`` classes, flattened): the
    quadratic forms of ``Z`` summed over classes (q,) and ``K @ W`` (n, r) (float64).
    ``inputs``: per-pass values the recipe's ``block`` takes, given in ``shared``."""
    n = int(rows.n)
    ranges = pair_blocks(n, min(n, tile_rows or pairwise.FUSED_TILE_ROWS))
    pairs = block_pairs(len(ranges))
    shared = {"rows": rows, "recipe": recipe, "ranges": ranges, "pairs": pairs,
              "dtype": np.dtype(dtype).name,
              "wdtype": np.dtype(matmul_dtype or dtype).name,
              "diagonal": bool(exclude_diagonal), **(inputs or {})}

    def combine(results):
        diagonals: dict[int, NDArray] = {}

        def parts():
            for result in results:
                for part in result["parts"]:
                    if "diag" in part:
                        diagonals[int(part["pair"][0])] = part["diag"]
                    yield part

        stream = parts()
        first = next(stream)
        q, r = first["forms"].shape[0], first["left"].shape[1] if "left" in first else 0
        totals, products = fold_pairs(itertools.chain([first], stream), n, q, r, ranges)
        for k in range(len(ranges)) if exclude_diagonal else ():
            totals -= diagonals[k]
        return totals.reshape(classes, -1).sum(axis=0), products

    return scale.map_combine(rows_pair_partial, [(k, k + 1) for k in range(len(pairs))],
                             shared, combine)


def tile_partial(start: int, stop: int, *, rows: Any, recipe: Any, n: int, **inputs: Any
                 ) -> dict[str, NDArray]:
    """The tile ``[start, stop)`` of :func:`calaudit.numerics.pairwise.kernel_matmul`: its
    upper block ``K[tile, start:]`` from the rows ``[start, n)`` read here, ``own = K[tile,
    start:] W[start:]`` and ``later = K[tile, stop:]^T W[tile]``."""
    first = 0 if dense(recipe, n) else start
    block, _ = block_columns(rows, recipe, first, n, np.float64, np.float64, inputs,
                             dense=first == 0 and dense(recipe, n))
    size, shift = stop - start, start - first
    w = block.w[shift:]
    with scale.one_blas_thread():  # the bits must not depend on where the task runs
        kernel = block.gram.block(slice(shift, shift + size), slice(shift, n - first))
        return {"own": kernel @ w, "later": kernel[:, size:].T @ w[:size]}


def matmul_of_rows(rows: Any, recipe: Any, *, inputs: dict[str, Any] | None = None,
                   tile_rows: int | None = None) -> NDArray[np.float64]:
    """``kernel_matmul(gram, w)`` ((n, r)) of the Gram and the ``W`` columns that ``recipe``
    builds from ``rows``: one task per tile of ``tile_rows_for(n)`` rows reading the rows
    from the tile on (:func:`tile_partial`), the products added in tile order as
    ``kernel_matmul`` adds them (its bits)."""
    n = int(rows.n)
    step = tile_rows or pairwise.tile_rows_for(n)
    ranges = list(tiles(n, step))

    def combine(parts):
        out = None
        for (start, stop), part in zip(ranges, parts, strict=True):
            if out is None:
                out = np.zeros((n, part["own"].shape[1]))
            out[start:stop] += part["own"]
            if stop < n:
                out[stop:] += part["later"]
        return out

    return scale.map_combine(tile_partial, ranges,
                             {"rows": rows, "recipe": recipe, "n": n, **(inputs or {})}, combine)


__all__ = ["block_columns", "dense", "forms_and_matmul_of_rows", "matmul_of_rows",
           "rows_pair_partial", "tile_partial"]
