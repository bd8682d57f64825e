"""The LCB kernel's rows of a dataset whose tasks read their own rows.

For a binary dataset read by its tasks (``data.rows`` with ``reads_own_rows``),
:class:`LcbKernelRows` builds the feature path's columns (:mod:`calaudit.local.lcb_features`)
for a range from the range's ``proba`` and covariates, the same bits as the placed arrays:

- ``z``: the continuous columns of :class:`~calaudit.local.lcb_bandwidth.EstimationRows`;
- ``cells``: as :func:`calaudit.local.lcb_cells.cell_index`, a row's cell is the rank of its
  mixed-radix code ``(r_1 V_2 + r_2) V_3 + r_3 ...`` (``r_t`` a value's rank among column
  ``t``'s ``V_t`` distinct ``values``) among the sorted codes ``present``.

A source keeps the last task range it built (:data:`calaudit.scale.TASK_ROWS` rows) and
slices it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.local.features import covariate_reads, encoded_range
from calaudit.local.lcb_bandwidth import EstimationRows
from calaudit.local.lcb_cells import CellKernel
from calaudit.scale import TASK_ROWS


@dataclass(frozen=True, eq=False)
class LcbKernelRows:
    """``z`` and ``cells`` of the LCB's :class:`CellKernel` built per range (module
    docstring). ``covariates``: each one's ``(name, kind, categories)`` and ``columns``
    its column in ``source``; ``rest`` and ``categorical``: the scaled rows' continuous
    and categorical columns."""

    source: Any
    columns: tuple[str, ...]
    covariates: tuple[tuple[str, str, tuple[str, ...]], ...]
    encoding: dict[str, Any]
    blocks: tuple[slice, ...]
    prob_bandwidth: float
    column_bandwidths: NDArray[np.float64]
    rest: tuple[int, ...]
    categorical: tuple[int, ...]
    values: tuple[NDArray[np.float64], ...]
    present: NDArray[np.int64]
    _built: dict[str, Any] = field(default_factory=dict, repr=False)

    reads_own_rows = True

    @property
    def n(self) -> int:
        return self.source.n

    def estimation_rows(self, start: int, stop: int) -> EstimationRows:
        part = self.source.read(start, stop, ["proba", *self.columns])
        return EstimationRows(part["proba"][:, 1].copy(), self.prob_bandwidth,
                              encoded_range(part, self.covariates, self.columns,
                                            self.encoding, self.blocks),
                              self.column_bandwidths)

    def _range(self, start: int) -> tuple[int, dict[str, NDArray]]:
        lo = start - start % TASK_ROWS
        if self._built.get("lo") != lo:
            hi = min(lo + TASK_ROWS, self.n)
            rows = self.estimation_rows(lo, hi)
            self._built.clear()
            self._built.update(lo=lo, z=rows.select(self.rest)[0:hi - lo],
                               cells=self._cells(rows))
        return lo, self._built

    def _cells(self, rows: EstimationRows) -> NDArray[np.int16]:
        if not self.categorical:
            return np.zeros(rows.shape[0], np.int16)
        code = mixed_radix(rows, self.categorical, self.values)
        return np.searchsorted(self.present, code).astype(np.int16)

    def read(self, start: int, stop: int, names: Any) -> dict[str, NDArray]:
        lo, built = self._range(start)
        if stop > lo + TASK_ROWS:
            raise ValueError(f"rows {start}-{stop} span two task ranges")
        return {name: built[name][start - lo:stop - lo] for name in names}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_built"] = {}
        return state


def dataset_kernel(kernel: CellKernel, rows: EstimationRows, data: Any, encoded: Any,
                   categorical: list[int]) -> CellKernel:
    """``kernel`` (:func:`calaudit.local.lcb_cells.rows_cell_kernel` of ``rows``) with its rows
    read by the tasks (:class:`LcbKernelRows`) when the data's rows are (binary), else as it
    is."""
    source = getattr(data, "rows", None)
    if not (getattr(source, "reads_own_rows", False) and data.is_binary):
        return kernel
    split = bool(categorical) and kernel.z.shape[1] == rows.width - len(categorical)
    cat = sorted(categorical) if split else []  # else one cell, every column continuous
    values = tuple(np.unique(rows.column(j)) for j in cat)
    present = np.zeros(kernel.n_cells, np.int64)
    if cat:
        present[kernel.cells] = mixed_radix(rows, cat, values)
    rest = tuple(j for j in range(rows.width) if j not in set(cat))
    return replace(kernel, rows=LcbKernelRows(
        source, *covariate_reads(data), encoded.encoding, encoded.blocks,
        rows.prob_bandwidth, np.asarray(rows.column_bandwidths), rest, tuple(cat), values,
        present))


def mixed_radix(rows: EstimationRows, columns: Any, values: Any) -> NDArray[np.int64]:
    """Each row's code ``(r_1 V_2 + r_2) V_3 + r_3 ...`` over the ``columns`` (``r_t`` the
    rank of the row's value among column ``t``'s sorted distinct ``values``, ``V_t`` their
    count)."""
    code = np.zeros(rows.shape[0], np.int64)
    for j, distinct in zip(columns, values, strict=True):
        code = code * distinct.size + np.searchsorted(distinct, rows.column(j))
    return code
