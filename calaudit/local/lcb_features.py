"""LCB kernel sums in O(n D) for large ``n``: exact on categorical cells, random Fourier
features on the continuous part.

The estimation kernel is ``K_ij = C[a_i, a_j] exp(-|z_i - z_j|^2)``: a categorical factor
``C`` over the category cells ``a`` (:mod:`calaudit.local.lcb_cells`) times a Gaussian on
the scaled prediction and numeric covariates ``z``. With features ``phi`` of
``exp(-|z_i - z_j|^2)`` (frequencies ``N(0, 2 I)``):

    ``(K W)_j = phi_j . M[a_j]``,  ``M[a] = sum_b C[a, b] sum_{i in b} phi_i W_i``,

O(n D + L^2 D) work for ``L`` cells. The categorical factor is exact because random
features of a narrow kernel on a few discrete points do not average out. Squared kernels
are the same form with ``z -> sqrt(2) z`` and ``C -> C^2``. More than ``MAX_CELLS`` cells:
every column goes through the features (``L = 1``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.local.features import MIN_WEIGHT, product_features
from calaudit.local.lcb import RowProducts
from calaudit.local.lcb_cells import CellKernel
from calaudit.local.lcb_curves import CurveColumns
from calaudit.numerics.features import FourierFeatures, row_chunks
from calaudit.scale import TASK_ROWS, ArrayRows, blocks, one_blas_thread, task_ranges

#: Rows per task of :func:`cell_matmul`'s row pass (a constant: the ranges depend on n only).
PASS_ROWS = TASK_ROWS


def _features(kernel: CellKernel, n_features: int, seed: int) -> FourierFeatures:
    return product_features(kernel.z if kernel.z.shape[1] else np.zeros((1, 1)),
                            n_features, seed)


def _transform(features: FourierFeatures, z: NDArray[np.float64]) -> NDArray[np.float32]:
    if z.shape[1] == 0:  # no continuous column: the continuous factor is 1 = phi . phi
        out = np.zeros((z.shape[0], features.n_features), dtype=np.float32)
        out[:, 0] = 1.0
        return out
    return features.transform(z).astype(np.float32, copy=False)


#: Largest ``L q`` for which a pass multiplies by every cell's block at once (a row's
#: columns placed in its cell's slot, zeros elsewhere); above, one GEMM per cell.
DENSE_OUTPUT = 256
#: Most cells for the per-cell GEMMs of :func:`cell_partial` (more: the placed columns).
MAX_SORTED_CELLS = 64


def kernel_rows(kernel: CellKernel) -> ArrayRows:
    """The kernel's per-row columns ``z`` and ``cells`` as one row source (the kernel's
    own, ``kernel.rows``, when its tasks read their rows)."""
    if kernel.rows is not None:
        return kernel.rows
    return ArrayRows({"z": kernel.z, "cells": kernel.cells})


@dataclass(frozen=True)
class _SourceColumn:
    """Column ``name`` of a row source as the array-like a partial slices: ``[lo:hi]``
    reads those rows, times ``factor`` when given."""

    source: Any
    name: str
    factor: float | None = None

    def __getitem__(self, rows: slice) -> NDArray:
        values = self.source.read(rows.start, rows.stop, [self.name])[self.name]
        return values if self.factor is None else self.factor * values


def placed_kernel(rows: Any, cell_matrix: NDArray[np.float64], squared: bool = False
                  ) -> CellKernel:
    """The :class:`CellKernel` a partial reads by row ranges from its row source ``rows``
    (:func:`kernel_rows`); ``squared``: of the squared kernel (:meth:`CellKernel.squared`)."""
    factor = np.sqrt(2.0) if squared else None
    return CellKernel(_SourceColumn(rows, "z", factor), _SourceColumn(rows, "cells"),
                      cell_matrix ** 2 if squared else cell_matrix)


def cell_partial(start: int, stop: int, *, kernel: Any, cell_matrix: NDArray[np.float64],
                 features: FourierFeatures, w: Any, q: int, squared: bool = False,
                 w_kept: Any = None) -> dict[str, NDArray[np.float64]]:
    """``sum_{i in [start, stop)} phi_i (w_i placed in cell a_i's slot)`` (D, L q): one
    single-precision GEMM per row block, accumulated in float64 (relative error about
    ``1e-6``). ``kernel`` and ``w`` are row sources (:func:`kernel_rows`; column ``w``: an
    (n, q) array or a :class:`calaudit.local.lcb_curves.CurveColumns`). ``squared``: the
    sums of the squared kernel (:func:`placed_kernel`). ``w_kept``: the kept rows a
    column source built by the tasks reads (its ``reads_kept``), as this task received
    them."""
    if w_kept is not None:
        w = w.reading(w_kept)
    with one_blas_thread():
        return {"acc": _cell_sums(start, stop, placed_kernel(kernel, cell_matrix, squared),
                                  features, _SourceColumn(w, "w"), q)}


def _cell_sums(start: int, stop: int, kernel: CellKernel, features: FourierFeatures,
               w: Any, q: int) -> NDArray[np.float64]:
    """The sum of :func:`cell_partial`."""
    n_cells = kernel.n_cells
    acc = np.zeros((features.n_features, n_cells * q))
    for _, lo, hi in blocks(start, stop):
        phi = _transform(features, kernel.z[lo:hi])
        cells = kernel.cells[lo:hi]
        rows = w[lo:hi]  # an array's rows, or built for this block (CurveColumns)
        if n_cells * q <= DENSE_OUTPUT or n_cells > MAX_SORTED_CELLS:
            spread = np.zeros((hi - lo, n_cells, q), dtype=np.float32)
            spread[np.arange(hi - lo), cells] = rows
            acc += phi.T @ spread.reshape(hi - lo, n_cells * q)
            continue
        # many columns: one GEMM per cell on the block's rows sorted by cell
        order = np.argsort(cells, kind="stable")
        edges = np.searchsorted(cells[order], np.arange(n_cells + 1))
        phi, rows = phi[order], rows[order].astype(np.float32)
        for a in range(n_cells):
            if edges[a + 1] > edges[a]:
                acc[:, a * q:(a + 1) * q] += (phi[edges[a]:edges[a + 1]].T
                                              @ rows[edges[a]:edges[a + 1]])
    return acc


@dataclass(frozen=True)
class Mixed:
    """The second pass's inputs: ``M[a]`` of every cell (``mixed``, L x D x q) and the
    same as one (D, L q) matrix (``flat``), in single precision (the output products are
    diagnostics; relative error about ``1e-6``)."""

    mixed: NDArray[np.float32]
    flat: NDArray[np.float32]

    @property
    def dense(self) -> bool:
        """All cells' products in one GEMM (``L q <= DENSE_OUTPUT``), else one per cell."""
        return self.flat.shape[1] <= DENSE_OUTPUT

    @property
    def width(self) -> int:
        """Columns of a row chunk's products."""
        return self.flat.shape[0] + (self.flat.shape[1] if self.dense else
                                     self.mixed.shape[2])


def output_rows(features: FourierFeatures, z: NDArray[np.float64], cells: NDArray[np.integer],
                mix: Mixed) -> NDArray[np.float64]:
    """``(K @ w)`` of the rows whose continuous columns ``z`` and cells are given:
    ``phi_j . M[a_j]``, a chunk of rows at a time."""
    size, q = z.shape[0], mix.mixed.shape[2]
    n_cells = mix.mixed.shape[0]
    out = np.empty((size, q))
    for start, stop in row_chunks(size, mix.width):
        phi = _transform(features, z[start:stop])
        here = cells[start:stop]
        if mix.dense:
            out[start:stop] = (phi @ mix.flat).reshape(-1, n_cells, q)[
                np.arange(stop - start), here]
            continue
        for a in np.unique(here):
            mask = here == a
            out[start:stop][mask] = phi[mask] @ mix.mixed[a]
    return out


def rows_partial(start: int, stop: int, *, kernel: Any, cell_matrix: NDArray[np.float64],
                 features: FourierFeatures, mix: Mixed, squared: bool = False
                 ) -> dict[str, NDArray[np.float64]]:
    """:func:`output_rows` of the rows ``[start, stop)`` (the second pass of
    :func:`cell_matmul` over every row, a per-row map; ``kernel`` a row source, as
    :func:`cell_partial`), on one BLAS thread."""
    kernel = placed_kernel(kernel, cell_matrix, squared)
    with one_blas_thread():
        return {"out": output_rows(features, kernel.z[start:stop], kernel.cells[start:stop],
                                   mix)}


def cell_matmul(kernel: CellKernel, features: FourierFeatures, w: NDArray[np.float64],
                targets: NDArray[np.intp] | None = None, *,
                squared: bool = False, placed: Any = None) -> NDArray[np.float64]:
    """``K[targets, :] @ w`` (all rows when ``targets`` is None) with the features on the
    continuous factor and the categorical factor exact; ``w`` (n, q), an array or a
    :class:`calaudit.local.lcb_curves.CurveColumns` (the curves' columns, never materialised).
    The first pass is a reduction over the fixed row ranges (:func:`cell_partial`); the
    second a per-row map over them (:func:`rows_partial`), or, over ``targets``, runs here.
    ``squared``: of the squared kernel (:meth:`CellKernel.squared`); ``placed``: the
    kernel's rows already placed (``scale.resident(kernel_rows(kernel))``); None: placed
    for this one."""
    with contextlib.ExitStack() as stack:
        if placed is None:
            placed = stack.enter_context(scale.resident(kernel_rows(kernel)))
        return _cell_matmul(kernel, features, w, targets, squared, placed)


def _cell_matmul(kernel: CellKernel, features: FourierFeatures, w: NDArray[np.float64],
                 targets: NDArray[np.intp] | None, squared: bool,
                 placed: Any) -> NDArray[np.float64]:
    """:func:`cell_matmul` with the (unsquared) kernel's rows placed (``placed``)."""
    shared = {"kernel": placed, "cell_matrix": kernel.cell_matrix, "features": features,
              "squared": squared}
    mix = mixed_sums(kernel, features, w, placed, squared)
    kernel = kernel.squared() if squared else kernel
    q = w.shape[1]
    if targets is None:
        return scale.map_rows(rows_partial, task_ranges(w.shape[0], PASS_ROWS),
                              {**shared, "mix": mix})["out"]
    rows = np.asarray(targets, dtype=np.intp)
    out = np.empty((rows.size, q))
    with one_blas_thread():
        for start, stop in row_chunks(rows.size, mix.width):
            idx = rows[start:stop]
            out[start:stop] = output_rows(features, kernel.z[idx], kernel.cells[idx], mix)
    return out


def mixed_sums(kernel: CellKernel, features: FourierFeatures, w: Any, placed: Any,
               squared: bool = False) -> Mixed:
    """The first pass of :func:`cell_matmul`: ``M[a] = sum_b C[a, b] sum_{i in b} phi_i
    w_i`` of every cell (``kernel``: the unsquared kernel, its rows ``placed``; ``w``:
    (n, q) columns, an array-like, or a row source whose tasks build column ``w``
    (``reads_own_rows``, with ``shape``))."""
    n, q = w.shape
    if getattr(w, "reads_own_rows", False):
        source = w
    else:
        if not isinstance(w, (CurveColumns, ResidualColumns)):
            # float32 columns stay float32: the block products are single precision
            w = (np.asarray(w) if np.asarray(w).dtype == np.float32
                 else np.asarray(w, np.float64))
        source = ArrayRows({"w": w})
    shared = {"kernel": placed, "cell_matrix": kernel.cell_matrix, "features": features,
              "squared": squared, "w": source, "q": q,
              "w_kept": getattr(source, "reads_kept", None)}
    cell_matrix = kernel.cell_matrix ** 2 if squared else kernel.cell_matrix
    n_cells, d = cell_matrix.shape[0], features.n_features
    acc = scale.map_sum(cell_partial, task_ranges(n, PASS_ROWS), shared)["acc"]
    mixed = np.einsum("ab,dbq->adq", cell_matrix, acc.reshape(d, n_cells, q))
    return Mixed(mixed.astype(np.float32), np.ascontiguousarray(
        mixed.transpose(1, 0, 2).reshape(d, n_cells * q), dtype=np.float32))


@dataclass(frozen=True)
class ResidualColumns:
    """``[r, 1]`` (n, 2) as a read-only array-like: ``columns[lo:hi]`` builds those rows
    (the values of ``np.column_stack([r, np.ones_like(r)])``, never stored whole)."""

    r: NDArray[np.float64]

    @property
    def shape(self) -> tuple[int, int]:
        return (self.r.shape[0], 2)

    def __getitem__(self, rows: slice) -> NDArray[np.float64]:
        part = self.r[rows]
        return np.column_stack([part, np.ones_like(part)])


def feature_kernel_sums(kernel: CellKernel, r: NDArray[np.float64], n_features: int,
                        seed: int, w: NDArray[np.float64] | None = None
                        ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(K r, K 1)`` as :func:`calaudit.local.lcb_bandwidth.kernel_sums` (with row weights
    ``w``: ``(K (w r), K w)``); the second floored at :data:`calaudit.local.features.
    MIN_WEIGHT` times the mean row weight."""
    features = _features(kernel, n_features, seed)
    r = np.asarray(r, dtype=np.float64)
    columns = ResidualColumns(r) if w is None else np.column_stack([w * r, w])
    out = cell_matmul(kernel, features, columns)
    floor = MIN_WEIGHT * (1.0 if w is None else float(np.mean(w)))
    return out[:, 0], np.maximum(out[:, 1], floor)


def feature_row_products(kernel: CellKernel, rows: NDArray[np.intp], r: NDArray[np.float64],
                         weight_sums: NDArray[np.float64],
                         columns: NDArray[np.float64] | CurveColumns,
                         n_features: int, seed: int, meat: NDArray[np.float64] | None = None,
                         centre: NDArray[np.float64] | None = None,
                         squares: Any = None) -> RowProducts:
    """:func:`calaudit.local.lcb.row_products` through :func:`cell_matmul` (the squared
    kernel's features for ``se_j``; ``meat`` and ``centre`` as there). ``squares``: the
    column ``r^2`` as a row source whose tasks build it (unweighted rows; ``r`` unused)."""
    features = _features(kernel, n_features, seed)
    r2 = squares if squares is not None else (r * r if meat is None
                                              else meat * r * r)[:, None]
    if centre is not None:
        r2 = np.column_stack([r2[:, 0], meat * r, meat])
    with scale.resident(kernel_rows(kernel)) as placed:  # one copy for both products
        squares = cell_matmul(kernel, features, r2, rows, squared=True, placed=placed)
        weights = (cell_matmul(kernel, features, columns, rows, placed=placed)
                   if columns.shape[1] else np.zeros((rows.size, 0)))
    se2 = squares[:, 0]
    if centre is not None:
        se2 = se2 - 2.0 * centre * squares[:, 1] + centre * centre * squares[:, 2]
    return RowProducts(rows, np.sqrt(np.maximum(se2, 0.0)) / weight_sums[rows], weights)


def lcb_computation(choice: Any, kernel: CellKernel | None, n_features: int) -> dict[str, Any]:
    """How the LCB's kernel sums ran (JSON ``local.lcb.computation``); ``choice`` is the
    local stage's :class:`calaudit.inference.method.MethodChoice`."""
    out: dict[str, Any] = {"method": choice.method, "reason": choice.reason,
                           "cv_rows": "exact kernel sums on the seeded cross-validation "
                                      "subsample"}
    if kernel is not None:
        out.update(n_features=n_features, frequency_seed=choice.frequency_seed,
                   categorical_cells=kernel.n_cells,
                   form="K_ij = C[a_i, a_j] phi(z_i) . phi(z_j): categorical factor exact per "
                        "cell, random Fourier features on the prediction and numeric covariates",
                   min_weight=MIN_WEIGHT)
    return out
