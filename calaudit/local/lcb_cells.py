"""The LCB estimation kernel split into categorical cells and a continuous part:
``K_ij = C[a_i, a_j] exp(-|z_i - z_j|^2)`` (:class:`CellKernel`), for the feature sums of
:mod:`calaudit.local.lcb_features`. More than :data:`MAX_CELLS` cells: one cell, every
column continuous.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.local.lcb_bandwidth import EstimationRows
from calaudit.numerics.features import row_chunks

#: Largest number of categorical cells handled exactly.
MAX_CELLS = 512


@dataclass(frozen=True)
class CellKernel:
    """``K_ij = cell_matrix[cells_i, cells_j] exp(-|z_i - z_j|^2)``."""

    #: an (n, columns) array, or an array-like that builds the rows asked for
    #: (:class:`calaudit.local.lcb_bandwidth.EstimationRows`)
    z: NDArray[np.float64]
    #: int16 (at most :data:`MAX_CELLS` cells) or any integer type
    cells: NDArray[np.integer]
    cell_matrix: NDArray[np.float64]
    #: ``z`` and ``cells`` as a row source whose tasks read their own rows
    #: (:class:`calaudit.local.kernel_sources.LcbKernelRows`); None: the arrays above
    rows: Any = field(default=None, compare=False, repr=False)

    def squared(self) -> CellKernel:
        z = self.z.scaled(np.sqrt(2.0)) if hasattr(self.z, "scaled") else np.sqrt(2.0) * self.z
        return CellKernel(z, self.cells, self.cell_matrix ** 2)

    @property
    def n_cells(self) -> int:
        return self.cell_matrix.shape[0]


def distinct_values(column: NDArray[np.float64]) -> NDArray[np.float64]:
    """Sorted distinct values of a column, a row chunk at a time (no n-row sort)."""
    parts = [np.unique(column[lo:hi]) for lo, hi in row_chunks(column.shape[0], 8)]
    return np.unique(np.concatenate(parts)) if parts else np.empty(0)


def cell_index(table: NDArray[np.float64] | Callable[[int], NDArray[np.float64]],
               columns: Sequence[int], limit: int = MAX_CELLS
               ) -> tuple[NDArray[np.float64], NDArray[np.intp]] | None:
    """``np.unique(table[:, columns], axis=0, return_inverse=True)`` in O(n) time and one
    integer per row (columns added one at a time, the pairs' codes ranked by a bincount),
    or ``None`` above ``limit`` distinct rows. ``table`` may be a function giving column
    ``j``."""
    column = table if callable(table) else (lambda j: table[:, j])
    cells, reps = None, np.zeros((1, 0))
    for j in columns:
        x = column(j)
        if cells is None:
            cells = np.zeros(x.shape[0], np.intp)
        values = distinct_values(x)
        if values.size > limit:
            return None
        cells *= values.size
        cells += np.searchsorted(values, x)
        del x
        present = np.flatnonzero(np.bincount(cells, minlength=reps.shape[0] * values.size))
        if present.size > limit:
            return None
        rank = np.zeros(reps.shape[0] * values.size, dtype=np.intp)
        rank[present] = np.arange(present.size)
        cells = rank[cells]
        reps = np.column_stack([reps[present // values.size], values[present % values.size]])
    return reps, cells


def cell_kernel(scaled: NDArray[np.float64], categorical: Sequence[int]) -> CellKernel:
    """Split the Gram's scaled rows (``K = exp(-|z_i - z_j|^2)``) into the categorical
    columns ``categorical`` (one cell per distinct combination, :func:`cell_index`) and
    the rest."""
    scaled = np.asarray(scaled, dtype=np.float64)
    cat = np.asarray(sorted(categorical), dtype=np.intp)
    found = cell_index(scaled, cat) if cat.size else None
    if found is not None:
        rest = np.setdiff1d(np.arange(scaled.shape[1]), cat)
        return CellKernel(np.ascontiguousarray(scaled[:, rest]), *_cells(*found))
    return CellKernel(scaled, np.zeros(scaled.shape[0], dtype=np.int16), np.ones((1, 1)))


def rows_cell_kernel(rows: EstimationRows, categorical: Sequence[int]) -> CellKernel:
    """:func:`cell_kernel` of scaled rows that are never stored whole
    (:class:`calaudit.local.lcb_bandwidth.EstimationRows`): the cells come from one column
    at a time and ``z`` is the continuous columns' on-demand view; only the cells (int16)
    are stored per row."""
    cat = np.asarray(sorted(categorical), dtype=np.intp)
    found = cell_index(rows.column, cat) if cat.size else None
    if found is not None:
        return CellKernel(rows.select(np.setdiff1d(np.arange(rows.width), cat)),
                          *_cells(*found))
    return CellKernel(rows.select(range(rows.width)),
                      np.zeros(rows.shape[0], dtype=np.int16), np.ones((1, 1)))


def _cells(reps: NDArray[np.float64], cells: NDArray[np.intp]
           ) -> tuple[NDArray[np.int16], NDArray[np.float64]]:
    """The rows' cells as int16 (at most :data:`MAX_CELLS`) and the cell matrix ``C``."""
    d2 = ((reps[:, None, :] - reps[None, :, :]) ** 2).sum(axis=2)
    return cells.astype(np.int16), np.exp(-d2)


def categorical_columns(offset: int, covariates: Sequence[Any],
                        blocks: Sequence[slice]) -> list[int]:
    """Columns of the Gram's scaled rows (prediction columns first, ``offset`` of them)
    that encode categorical covariates."""
    return [offset + k for c, block in zip(covariates, blocks, strict=True)
            if c.kind == "categorical" for k in range(block.start, block.stop)]
