"""The LCB kernel's rows of a dataset whose tasks read their own rows.

For a dataset read by its tasks (``data.rows`` with ``reads_own_rows``),
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

from calaudit import scale
from calaudit.local.features import covariate_reads, encoded_range
from calaudit.local.klce import prediction_features
from calaudit.local.lcb import top_label_residual
from calaudit.local.lcb_bandwidth import EstimationRows
from calaudit.local.lcb_cells import MAX_CELLS, CellKernel, _cells
from calaudit.scale import TASK_ROWS, DerivedRows, task_ranges


@dataclass(frozen=True, eq=False)
class LcbKernelRows(DerivedRows):
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

    def estimation_rows(self, start: int, stop: int) -> EstimationRows:
        part = self.source.read(start, stop, ["proba", *self.columns])
        proba = part["proba"]
        return EstimationRows(proba[:, 1].copy() if proba.shape[1] == 2 else proba,
                              self.prob_bandwidth,
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


def planned_kernel(rows: EstimationRows, data: Any, encoded: Any,
                   categorical: list[int]) -> CellKernel:
    """The :class:`CellKernel` of :func:`calaudit.local.lcb_cells.rows_cell_kernel` for
    a dataset whose tasks read their own rows, every per-row column made by the tasks
    (:class:`LcbKernelRows`): the categorical columns' distinct values and present
    combinations from a reduction (:func:`cells_partial`; a cell is a combination's rank
    in sorted order, as :func:`calaudit.local.lcb_cells.cell_index`), the rows' ``z`` and
    cells read by the tasks, those of a few rows (``kernel.z[rows]``) fetched here.
    ``rows`` gives the scaled rows' shape and bandwidths only."""
    cat = sorted(categorical)
    source = LcbKernelRows(
        data.rows, *covariate_reads(data), encoded.encoding, encoded.blocks,
        rows.prob_bandwidth, np.asarray(rows.column_bandwidths), (), tuple(cat), (),
        np.zeros(1, np.int64))
    found = scale.map_combine(cells_partial, task_ranges(source.n), {"rows": source},
                              _union) if cat else None
    if found is None or max(v.size for v in found[0]) > MAX_CELLS \
            or found[1].shape[0] > MAX_CELLS:
        cat, values, reps = [], (), np.zeros((1, 0))
    else:
        values, reps = found
    code = np.zeros(reps.shape[0], np.int64)
    for k, distinct in enumerate(values):
        code = code * distinct.size + np.searchsorted(distinct, reps[:, k])
    rest = tuple(j for j in range(rows.width) if j not in set(cat))
    source = replace(source, rest=rest, categorical=tuple(cat), values=values,
                     present=code)
    cell_matrix = _cells(reps, np.zeros(0, np.intp))[1] if cat else np.ones((1, 1))
    return CellKernel(Picked(source, "z", (source.n, len(rest))),
                      Picked(source, "cells", (source.n,)), cell_matrix, rows=source)


def cells_partial(start: int, stop: int, *, rows: LcbKernelRows
                  ) -> tuple[list[NDArray[np.float64]], NDArray[np.float64]]:
    """The range's distinct values of each categorical scaled column and its distinct
    combinations of them (rows of values, sorted)."""
    built = rows.estimation_rows(start, stop)
    columns = [built.column(j) for j in rows.categorical]
    return ([np.unique(c) for c in columns],
            np.unique(np.column_stack(columns), axis=0))


def _union(parts: Any) -> tuple[tuple[NDArray[np.float64], ...], NDArray[np.float64]]:
    """:func:`cells_partial`'s values and combinations of every range, merged."""
    values, combos = None, None
    for part_values, part_combos in parts:
        values = part_values if values is None else [
            np.unique(np.concatenate([a, b])) for a, b in zip(values, part_values,
                                                               strict=True)]
        combos = part_combos if combos is None else np.unique(
            np.concatenate([combos, part_combos]), axis=0)
    return tuple(values), combos


@dataclass(frozen=True)
class Picked:
    """Column ``name`` of a row source whose tasks read their own rows, as the
    array-like a kernel indexes: ``[rows]`` (a few sorted or unsorted rows) fetched
    here by one reduction, each task giving those in its range; times ``factor``
    when scaled (:meth:`scaled`, as :class:`EstimationRows`)."""

    source: Any
    name: str
    shape: tuple[int, ...]
    factor: float | None = None

    def scaled(self, factor: float) -> Picked:
        return replace(self, factor=factor)

    def __getitem__(self, rows: Any) -> NDArray:
        rows = np.asarray(rows, dtype=np.intp)
        order = np.argsort(rows, kind="stable")
        picked = scale.map_combine(_picked_partial, task_ranges(self.shape[0]),
                                   {"rows": self.source, "name": self.name,
                                    "at": rows[order]}, list)
        values = np.concatenate(picked)
        out = np.empty_like(values)
        out[order] = values
        return out if self.factor is None else self.factor * out


def _picked_partial(start: int, stop: int, *, rows: Any, name: str, at: NDArray[np.intp]
                    ) -> NDArray:
    lo, hi = np.searchsorted(at, [start, stop])
    if hi == lo:
        return rows.read(start, start, [name])[name]
    return rows.read(start, stop, [name])[name][at[lo:hi] - start]


def taker(data: Any, encoded: Any) -> Any:
    """``take(rows) -> (prediction features, encoded covariates, r)`` of the sorted
    ``rows`` of a dataset whose tasks read their own rows (the bandwidths' seeded
    subsamples, :func:`calaudit.local.lcb_bandwidth.select_bandwidths`): one reduction,
    each task giving its range's rows, the bits of the in-memory arrays' rows."""
    columns, covariates = covariate_reads(data)
    shared = {"rows": data.rows, "columns": columns, "covariates": covariates,
              "encoding": encoded.encoding, "blocks": encoded.blocks}

    def take(rows: NDArray[np.intp]) -> tuple[NDArray[np.float64], ...]:
        parts = scale.map_combine(_taken_partial, task_ranges(data.n),
                                  {**shared, "at": np.asarray(rows, np.intp)}, list)
        return tuple(np.concatenate([part[k] for part in parts]) for k in range(3))
    return take


def _taken_partial(start: int, stop: int, *, rows: Any, columns: tuple[str, ...],
                   covariates: Any, encoding: dict[str, Any], blocks: tuple[slice, ...],
                   at: NDArray[np.intp]) -> tuple[NDArray[np.float64], ...]:
    lo, hi = np.searchsorted(at, [start, stop])
    local = at[lo:hi] - start
    part = rows.read(start, stop, ["y", "proba", *columns])
    outcome, prediction = top_label_residual(part["y"], part["proba"])
    return (prediction_features(part["proba"])[local],
            encoded_range(part, covariates, columns, encoding, blocks)[local],
            (outcome - prediction)[local])


def picked_covariates(data: Any, rows: NDArray[np.intp]) -> dict[str, NDArray]:
    """Each covariate's values (numeric) or codes (categorical) at the sorted ``rows``
    of a dataset whose tasks read their own rows: one reduction, each task giving its
    range's rows."""
    columns, _ = covariate_reads(data)
    parts = scale.map_combine(_covariates_partial, task_ranges(data.n), {
        "rows": data.rows, "columns": columns, "at": np.asarray(rows, np.intp)}, list)
    return {c.name: np.concatenate([part[column] for part in parts])
            for c, column in zip(data.covariates, columns, strict=True)}


def _covariates_partial(start: int, stop: int, *, rows: Any, columns: tuple[str, ...],
                        at: NDArray[np.intp]) -> dict[str, NDArray]:
    lo, hi = np.searchsorted(at, [start, stop])
    part = rows.read(start, stop, list(columns))
    return {column: part[column][at[lo:hi] - start] for column in columns}
