"""The LCB's per-group curves (:mod:`calaudit.local.lcb_curves`) of a dataset whose tasks
read their own rows: requests, grids, normalisers, engine columns and centres from
reductions, the bits of the in-memory curves of the same rows.

- **Requests** (:class:`CurveSpec`): a numeric covariate within a level of a categorical
  one (or all rows); its rows are those of the level, read by each task from the range's
  covariates (:func:`group_x`), its size counted by one reduction (per range: the counts
  give each range's offset in the group's subsequence of rows).
- **Grid and bandwidth** (:func:`curve_grid`'s): numpy's percentiles, minimum and
  maximum of the group's ``x`` from exact order statistics
  (:func:`calaudit.numerics.order_statistics.order_statistics` over a source giving each
  range's group values), numpy's ``std(ddof=1)`` from its pairwise sums over the group's
  subsequence (:func:`calaudit.numerics.pairwise_sums.sum_plan` cut at the ranges' offsets).
- **Normalisers and centres**: :func:`calaudit.local.lcb_curves.curve_sums_partial` on
  each range's requests (built in the task), added in range order.
- **Columns** ``V_jt = w_j(t) / D_j`` (:class:`DatasetCurveColumns`): built in the tasks
  from the range's covariates and the kept LCB rows' ``weight_sums``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.local.lcb_curves import (
    CURVE_ROWS,
    CurveDesign,
    CurveRequest,
    CurveRows,
    curve_sums_partial,
)
from calaudit.numerics.order_statistics import interpolate, order_statistics, quantile_positions
from calaudit.numerics.pairwise_sums import SUMMARY_ROWS, sum_plan, sums_partial, tree_sums
from calaudit.scale import TASK_ROWS, task_ranges

#: The percentiles of :func:`calaudit.local.lcb_curves.curve_grid` (grid ends, quartiles).
PERCENTILES = (2, 98, 75, 25)


@dataclass(frozen=True)
class CurveSpec:
    """One curve of a dataset: covariate ``covariate`` (column ``x`` of the source) over
    the rows whose ``by`` column holds ``code`` (all rows: ``by`` None); ``n`` rows."""

    covariate: str
    group_by: str | None
    group: str
    x: str
    by: str | None
    code: int
    n: int = 0


def group_x(part: dict[str, NDArray], spec: CurveSpec) -> NDArray[np.float64]:
    """The group's ``x`` among a range's columns ``part``, in row order."""
    x = np.asarray(part[spec.x], dtype=np.float64)
    return x if spec.by is None else x[part[spec.by] == spec.code]


def group_rows(part: dict[str, NDArray], spec: CurveSpec) -> NDArray[np.intp]:
    """The group's rows among a range's columns ``part`` (counted from the range's
    start)."""
    size = np.asarray(part[spec.x]).shape[0]
    return np.arange(size) if spec.by is None else np.flatnonzero(part[spec.by] == spec.code)


def _columns(specs: Sequence[CurveSpec]) -> list[str]:
    return sorted({s.x for s in specs} | {s.by for s in specs if s.by is not None})


def range_requests(part: dict[str, NDArray], specs: Sequence[CurveSpec], shift: int
                   ) -> tuple[CurveRequest, ...]:
    """The requests of a range's rows (row numbers plus ``shift``), as the in-memory
    requests' rows in the range."""
    out = []
    for s in specs:
        rows = group_rows(part, s)
        out.append(CurveRequest(s.covariate, s.group_by, s.group, rows + shift,
                                np.asarray(part[s.x], dtype=np.float64)[rows]))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class GroupValues:
    """Column ``str(k)``: the ``x`` of request ``k``'s rows in a range (a row source of
    variable-length reads, for order statistics)."""

    source: Any
    specs: tuple[CurveSpec, ...]
    reads_own_rows = True

    @property
    def n(self) -> int:
        return self.source.n

    def read(self, start: int, stop: int, names: Any) -> dict[str, NDArray]:
        part = self.source.read(start, stop, _columns(self.specs))
        return {name: group_x(part, self.specs[int(name)]) for name in names}


def _counts_partial(start: int, stop: int, *, rows: GroupValues) -> NDArray[np.int64]:
    return np.array([v.size for v in rows.read(start, stop, map(str, range(len(rows.specs))))
                     .values()], np.int64)


class _Held:
    """A range's group values as the row source :func:`sums_partial` reads."""

    def __init__(self, values: NDArray[np.float64]) -> None:
        self.values = values

    def read(self, start: int, stop: int, names: Any) -> dict[str, NDArray]:
        return {"x": self.values}


def _sums_partial(start: int, stop: int, *, rows: GroupValues, plans: Any,
                  centres: Any) -> list[Any]:
    """Per request, :func:`sums_partial` of its values in the range (at their places in
    the group's subsequence)."""
    got = rows.read(start, stop, map(str, range(len(rows.specs))))
    out = []
    for k, (offsets, inside, crossing) in enumerate(plans):
        lo, hi = offsets[start]
        out.append(sums_partial(lo, hi, rows=_Held(got[str(k)]), column="x",
                                inside={lo: inside.get(lo, [])}, crossing=crossing,
                                centre=None if centres is None else centres[k])
                   if hi > lo else {"nodes": {}, "parts": {}})
    return out


def group_sums(rows: GroupValues, counts: NDArray[np.int64],
               ranges: Sequence[tuple[int, int]], centres: Any = None) -> list[np.float64]:
    """Per request, numpy's sum of its values (``centres`` None) or of their squared
    deviations from its centre: one reduction over ``ranges`` (``counts``: per range and
    request, its rows)."""
    plans = []
    for k in range(len(rows.specs)):
        ends = np.concatenate([[0], np.cumsum(counts[:, k])])
        offsets = {start: (int(ends[i]), int(ends[i + 1]))
                   for i, (start, _) in enumerate(ranges)}
        sub = [(int(ends[i]), int(ends[i + 1])) for i in range(len(ranges))
               if ends[i + 1] > ends[i]]
        inside, crossing = sum_plan(int(ends[-1]), sub)
        plans.append((offsets, inside, crossing))
    found = scale.map_combine(_sums_partial, ranges,
                              {"rows": rows, "plans": plans, "centres": centres}, list)
    return [tree_sums([part[k] for part in found], int(counts[:, k].sum()), 2
                      if centres is None else 1)[0] for k in range(len(rows.specs))]


def dataset_specs(data: Any, groupings: Sequence[Any], minimum: int,
                  task_rows: int = SUMMARY_ROWS
                  ) -> tuple[list[CurveSpec], GroupValues, NDArray[np.int64],
                             list[tuple[int, int]]]:
    """The curve requests of the in-memory path (a numeric covariate per categorical
    level of at least ``minimum`` rows, or over all rows without groupings), their
    per-range counts over ``ranges`` (of ``task_rows`` rows)."""
    column = data.rows.covariate_column
    candidates = []
    for cov in (c for c in data.covariates if c.kind == "numeric"):
        if not groupings:
            candidates.append(CurveSpec(cov.name, None, "all", column(cov.name), None, -1))
        for g in groupings:
            candidates.extend(CurveSpec(cov.name, g.name, label, column(cov.name),
                                        column(g.name), code)
                              for code, label in enumerate(g.categories))
    ranges = task_ranges(data.n, task_rows)
    if not candidates:
        return [], GroupValues(data.rows, ()), np.zeros((len(ranges), 0), np.int64), ranges
    source = GroupValues(data.rows, tuple(candidates))
    counts = np.array(scale.map_combine(_counts_partial, ranges, {"rows": source}, list))
    keep = [k for k, s in enumerate(candidates)
            if s.by is None or counts[:, k].sum() >= minimum]
    specs = [replace(candidates[k], n=int(counts[:, k].sum())) for k in keep]
    return specs, GroupValues(data.rows, tuple(specs)), counts[:, keep], ranges


def dataset_grids(rows: GroupValues, counts: NDArray[np.int64],
                  ranges: Sequence[tuple[int, int]], points: int
                  ) -> tuple[list[NDArray[np.float64]], list[float]]:
    """:func:`calaudit.local.lcb_curves.curve_grid` of every request, its numbers from
    reductions (module docstring)."""
    q = np.true_divide(PERCENTILES, 100)
    wanted, positions = {}, []
    for k, spec in enumerate(rows.specs):
        previous, following, gamma = quantile_positions(spec.n, q)
        positions.append((previous % spec.n, following % spec.n, gamma))
        wanted[str(k)] = np.unique(np.concatenate([[0, spec.n - 1], previous % spec.n,
                                                   following % spec.n]))
    found = order_statistics(rows, wanted) if wanted else {}
    totals = group_sums(rows, counts, ranges)
    means = [total / spec.n for total, spec in zip(totals, rows.specs, strict=True)]
    squares = group_sums(rows, counts, ranges, [float(m) for m in means])
    grids, bandwidths = [], []
    for k, spec in enumerate(rows.specs):
        ranks, values = wanted[str(k)], found[str(k)]

        def at(r: NDArray[np.intp], ranks: Any = ranks, values: Any = values) -> Any:
            return values[np.searchsorted(ranks, r)]
        previous, following, gamma = positions[k]
        low, high, q75, q25 = interpolate(at(previous), at(following), gamma)
        if high <= low:
            low, high = at(np.array([0, spec.n - 1]))
        grids.append(np.linspace(low, high, points) if high > low
                     else np.array([float(low)]))
        sd = float(np.sqrt(squares[k] / (spec.n - 1))) if spec.n > 1 else 0.0
        bandwidths.append(silverman(sd, float(np.subtract(q75, q25)), spec.n))
    return grids, bandwidths


def silverman(sd: float, iqr: float, n: int) -> float:
    """:func:`calaudit.local.lcb_curves.silverman_bandwidth` from ``x``'s sd, IQR and
    size."""
    spread = min(sd, iqr / 1.34) if iqr > 0 else sd
    if spread <= 0:
        return 1.0
    return 0.9 * spread * n ** (-0.2)


def _range_partial(start: int, stop: int, *, source: Any, specs: tuple[CurveSpec, ...],
                   grids: Any, bandwidths: Any, normalisers: Any, values: Any
                   ) -> dict[str, NDArray[np.float64]]:
    """:func:`curve_sums_partial` of the range's requests, built here."""
    part = source.read(start, stop, _columns(specs))
    requests = CurveRows(range_requests(part, specs, start), source.n)
    return curve_sums_partial(start, stop, requests=requests, grids=grids,
                              bandwidths=bandwidths, normalisers=normalisers, values=values)


def dataset_curve_sums(design: DatasetCurveDesign, normalisers: Any = None,
                       values: Any = None) -> dict[str, NDArray[np.float64]]:
    """:func:`calaudit.local.lcb_curves.curve_sums` of the dataset's requests."""
    return scale.map_sum(_range_partial, task_ranges(design.n, CURVE_ROWS), {
        "source": design.source, "specs": design.requests, "grids": design.grids,
        "bandwidths": design.bandwidths, "normalisers": normalisers, "values": values})


@dataclass(frozen=True)
class DatasetCurveDesign:
    """The :class:`calaudit.local.lcb_curves.CurveDesign` of a dataset's requests
    (:class:`CurveSpec`), its rows read by the tasks."""

    source: Any
    n: int
    requests: tuple[CurveSpec, ...]
    grids: tuple[NDArray[np.float64], ...]
    bandwidths: tuple[float, ...]
    normalisers: tuple[NDArray[np.float64], ...] = ()

    @property
    def width(self) -> int:
        return sum(g.size for g in self.grids)

    def centres(self, values: Any) -> list[NDArray[np.float64]]:
        """``c(t)`` of every request (``values``: a row source of column ``lcb``)."""
        sums = dataset_curve_sums(self, self.normalisers, values)
        return [sums[str(k)] for k in range(len(self.requests))]


def dataset_curve_design(data: Any, groupings: Sequence[Any], minimum: int, points: int
                         ) -> DatasetCurveDesign:
    """Requests, grids, bandwidths and normalisers of a dataset's curves (module
    docstring)."""
    specs, rows, counts, ranges = dataset_specs(data, groupings, minimum)
    design = DatasetCurveDesign(data.rows, data.n, tuple(specs), (), ())
    if not specs:
        return design
    grids, bandwidths = dataset_grids(rows, counts, ranges, points)
    design = replace(design, grids=tuple(grids), bandwidths=tuple(bandwidths))
    sums = dataset_curve_sums(design)
    return replace(design, normalisers=tuple(np.maximum(sums[str(k)], np.finfo(float).tiny)
                                             for k in range(len(specs))))


@dataclass(frozen=True, eq=False)
class DatasetCurveColumns:
    """``V`` (n, points x requests) of a :class:`DatasetCurveDesign` as the row source of
    column ``w`` a pass multiplies: a task builds its rows from the range's covariates
    and the kept LCB rows' ``weight_sums`` (``weights``, given to the task by the
    executor: :meth:`reading`), in float32, the bits of
    :class:`calaudit.local.lcb_curves.CurveColumns`. The covariates and weight sums of
    the last :data:`calaudit.scale.TASK_ROWS` range are kept and sliced."""

    design: DatasetCurveDesign
    #: the kept LCB rows (column ``weight_sums``), given to a pass's tasks by the executor
    reads_kept: Any
    weights: Any = None
    dtype: type = np.float32
    _built: dict[str, Any] = field(default_factory=dict, repr=False)

    reads_own_rows = True

    @property
    def n(self) -> int:
        return self.design.n

    @property
    def shape(self) -> tuple[int, int]:
        return (self.design.n, self.design.width)

    def reading(self, weights: Any) -> DatasetCurveColumns:
        """These columns reading ``weights`` (the kept rows as the task received them)."""
        return replace(self, weights=weights, _built={})

    def read(self, start: int, stop: int, names: Any) -> dict[str, NDArray]:
        lo = start - start % TASK_ROWS
        if stop > lo + TASK_ROWS:
            raise ValueError(f"rows {start}-{stop} span two task ranges")
        if self._built.get("lo") != lo:
            hi = min(lo + TASK_ROWS, self.n)
            d = self.design
            part = d.source.read(lo, hi, _columns(d.requests))
            self._built.clear()
            self._built.update(lo=lo, design=CurveDesign(
                range_requests(part, d.requests, 0), d.grids, d.bandwidths,
                d.normalisers, np.zeros((0, 0))),
                sums=self.weights.read(lo, hi, ["weight_sums"])["weight_sums"])
        built = self._built
        return {name: built["design"].block(start - lo, stop - lo, built["sums"], self.dtype)
                for name in names}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_built"] = {}
        state["reads_kept"] = None  # the executor hands the kept rows to each task
        return state
