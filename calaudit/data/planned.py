"""A dataset audited where its rows are: the client plans and adds up.

:func:`plan` opens a Parquet dataset from its footers only (files, row counts, column
types: the loader's own checks, :class:`~calaudit.data.partitioned.Dataset`); a local CSV /
TSV dataset, which has no footers, is counted and checked by one task per file
(:mod:`calaudit.data.csv_plan`). It builds the small row
source :class:`~calaudit.data.dataset_rows.DatasetRows` and runs the first reduction
(:func:`~calaudit.data.dataset_rows.check_partial`) through :mod:`calaudit.scale`: the
loader's row rules on every range, where the executor runs it (on Dask: each task reads
its own range on a worker), with the same one-line errors, and the summaries the stages
need. The result, :class:`RowsData`, is the data object of such a run: it keeps the
source and the summaries, not the rows.

A stage written for the source reads it through ``data.rows`` (its partials read their own
ranges): the default global battery does. Covariates of the same files are planned too
(their kinds from the footers; their levels, missing and infinite values from the first
reduction: :mod:`calaudit.data.dataset_covariates`; the numeric covariates' bands, the
quantile bins and Hosmer-Lemeshow's groups from exact order-statistics reductions,
:mod:`calaudit.numerics.order_statistics`). A stage that needs every row in memory (the
local stage's exact path; Kuiper's ordered residuals) reads ``y_true`` / ``y_proba`` / a
covariate's ``values``: then each column it asks for is read once, range by range through
the executor, into this process (``--verbose`` says so). A multi-class model's labels
may be text (each range's labels name their classes row by row); a binary model's text
labels are loaded.

Only the default reading of a dataset (covariates allowed) takes this path
(:func:`why_not`); any other input or option is loaded as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import progress, scale
from calaudit.data.covariates import check_count, check_shape
from calaudit.data.dataset import LabelledRows
from calaudit.data.dataset_covariates import PREFIX, CovariatePlan
from calaudit.data.dataset_rows import (
    Columns,
    DatasetRows,
    check_partial,
    column_plans,
    combine_checks,
    first_value,
    problems,
    read_partial,
)
from calaudit.data.parts import CovariateRows, Provenance, read_only
from calaudit.exceptions import InputError

#: The ``load`` arguments this path reproduces, with their defaults.
DEFAULTS = {"labels": None, "covariates_file": None, "positive_label": None,
            "renormalize": False, "drop_invalid": False, "weight_col": None,
            "negative_rate": None, "sampling_rate_col": None, "id_col": None}


def why_not(path: str, options: dict[str, Any]) -> str | None:
    """Why ``path`` with the ``load`` ``options`` is not read by tasks (None: it is): it
    must be a dataset (a directory, glob or URL) read with the
    default options (covariates of the same files allowed), without weights."""
    from calaudit.data.locations import locate

    changed = sorted(k for k, v in DEFAULTS.items() if options.get(k, v) not in (v, None, ()))
    if changed:
        return "options " + ", ".join(changed)
    try:
        location = locate(path)
    except Exception:  # noqa: BLE001 - the loader reports it
        return "not a dataset"
    if not location.is_dataset:
        return "not a dataset"
    return None


@dataclass(frozen=True, eq=False)
class RowsData(LabelledRows):
    """The data object of a dataset read by tasks (module docstring): the attributes of
    :class:`~calaudit.data.dataset.CalibrationData`, ``rows`` (the source) and the
    summaries of the first reduction; ``y_true``, ``y_proba`` and the covariates' values
    are read into this process only when a stage asks for them."""

    rows: DatasetRows
    classes: tuple[str, ...]
    counts: NDArray[np.int64]
    provenance: Provenance
    clipped: int = 0
    expected: tuple[float, float] = (0.0, 0.0)
    spill: object | None = field(default=None, repr=False)
    weights: None = None

    @property
    def n(self) -> int:
        return self.rows.n

    def class_counts(self) -> dict[str, int]:
        return {name: int(c) for name, c in zip(self.classes, self.counts)}

    @cached_property
    def covariates(self) -> tuple[DatasetCovariate, ...]:
        """The covariates: names, kinds and levels from the plan, values read when asked
        for (:attr:`_loaded`)."""
        return tuple(DatasetCovariate(self, plan) for plan in self.rows.covariates)

    @property
    def sample_weight(self) -> None:
        return None

    def top_label_hits(self) -> int:
        """The rows whose label is their most probable class (``argmax p == y``),
        counted by the tasks that read them."""
        return int(scale.map_sum(hits_partial, scale.task_ranges(self.n), {
            "columns": Columns(self.rows, ("y", "proba"))})["hits"][0])

    @cached_property
    def _loaded(self) -> LoadedColumns:
        """The columns a stage not computed from the tasks' own rows asks for, each read
        into this process when first asked for (:class:`LoadedColumns`)."""
        return LoadedColumns(self)

    @property
    def y_true(self) -> NDArray[np.int64]:
        return self._loaded["y"]

    @property
    def y_proba(self) -> NDArray[np.float64]:
        return self._loaded["proba"]


def hits_partial(start: int, stop: int, *, columns: Columns) -> dict[str, NDArray]:
    """The rows ``[start, stop)`` whose label is their most probable class."""
    part = columns.rows.read(start, stop, columns.names)
    return {"hits": np.array([np.count_nonzero(np.argmax(part["proba"], axis=1)
                                               == part["y"])], np.int64)}


class LoadedColumns:
    """Columns of a :class:`RowsData` read into this process, range by range through the
    executor, each when first asked for (``y``, ``proba``, ``x:NAME``), with a note of
    what is read and why."""

    def __init__(self, data: RowsData) -> None:
        self.data, self.columns = data, {}

    def __getitem__(self, name: str) -> NDArray:
        if name not in self.columns:
            data = self.data
            width = len(data.classes) if name == "proba" else 1
            progress.note(f"{data.rows.source}: a stage not computed from the tasks' own "
                          f"rows needs the column {name} in memory: reading {data.n:,} "
                          f"rows ({8 * width * data.n:,} bytes) into this process, range "
                          "by range through the executor")
            values = scale.map_rows(read_partial, scale.task_ranges(data.n),
                                    {"columns": Columns(data.rows, (name,))})[name]
            self.columns[name] = read_only(values)
        return self.columns[name]


class DatasetCovariate(CovariateRows):
    """A covariate of :class:`RowsData` (the duck type of
    :class:`~calaudit.data.parts.Covariate`): ``values`` (float64, or int64 codes into
    ``categories``) read into this process when first asked for."""

    def __init__(self, data: RowsData, plan: CovariatePlan) -> None:
        self.data, self.name, self.kind = data, plan.name, plan.kind
        self.categories = plan.categories

    @property
    def values(self) -> NDArray:
        return self.data._loaded[PREFIX + self.name]


def plan(path: str, *, label_col: str | None = None, prob_cols: str | None = None,
         logit_cols: str | None = None, covariates: Any = (), categorical: Any = (),
         require_two_classes: bool = True, **ignored: Any) -> RowsData:
    """The :class:`RowsData` of the dataset ``path`` (:func:`why_not` is None): Parquet
    footers read here (CSV / TSV files counted and checked by one task per file,
    :mod:`calaudit.data.csv_plan`), the rows checked (and the covariates' levels found)
    range by range through the executor in force, with the loader's checks and errors."""
    from calaudit.data.build import check_enough
    from calaudit.data.columns import detect_label, require_column, resolve_scores
    from calaudit.data.csv_plan import csv_plans
    from calaudit.data.csv_rows import first_header
    from calaudit.data.load import ColumnOptions, _check_roles, _names
    from calaudit.data.locations import locate
    from calaudit.data.partitioned import Dataset
    from calaudit.data.row_source import ParquetRows

    covariates, categorical = tuple(_names(covariates)), tuple(_names(categorical))
    check_count(covariates, path, categorical)
    dataset = Dataset(locate(path))
    stored_text = dataset.location.format != "parquet" and dataset.location.filesystem
    available = dataset.columns(  # a stored CSV's header read by a task, not here
        (lambda: first_header(dataset.location)) if stored_text else None)
    label = detect_label(available, path, label_col)
    for name in covariates:
        require_column(name, available, path, "--covariates")
    scores = resolve_scores(prob_cols, logit_cols, available, path,
                            exclude={label, *covariates})
    _check_roles(scores.columns, label, ColumnOptions(covariates=covariates))
    if any(name in dataset.partitions for name in (label, *scores.columns, *covariates)):
        raise NotPlanned("a partition key is a label, prediction or covariate column")
    if dataset.location.format == "parquet":
        plans = _plans(dataset, label, scores.columns, covariates, categorical)
        files = ParquetRows.of(dataset.location)
        dataset.rows = files.rows
    else:
        planned = csv_plans(dataset, label, scores.columns, covariates, categorical)
        if isinstance(planned, str):
            raise NotPlanned(planned)
        files, plans = planned
    source = DatasetRows(files, plans[0], tuple(plans[1:len(scores.columns) + 1]),
                         scores.class_names, scores.kind, path,
                         tuple(plans[len(scores.columns) + 1:]))
    n = source.n
    ranges = scale.task_ranges(n)
    summary = (scale.map_combine(check_partial, ranges, {
        "rows": source, "task_rows": scale.TASK_ROWS, "tasks": len(ranges)},
        combine_checks) if n else None)
    if summary is not None:
        _raise_first(summary, source, ranges, {path: dataset.layout()})
    classes = (("0", "1") if plans[0].kind == "numeric" else ("False", "True")) \
        if len(scores.columns) == 1 else scores.class_names
    counts = (summary["classes"] if summary is not None
              else np.zeros(len(classes), np.int64))
    counts = np.asarray(counts).astype(np.int64)
    codes = np.repeat(np.arange(len(classes)), np.minimum(counts, 1))
    check_enough(n, codes, classes, path, (path, label), require_two_classes)
    if source.covariates:
        source = replace(source, covariates=tuple(
            cov.settled(found, int(fractional)) for cov, found, fractional in zip(
                source.covariates, summary["levels"], summary["fractional"], strict=True)))
        check_shape(source.covariates, [path] * len(source.covariates))
    provenance = Provenance(
        files=tuple(dataset.provenance("predictions")), rows_read=n, rows_used=n,
        rows_excluded={}, label_column=label, score_columns=scores.columns,
        score_kind=scores.kind, id_column=None, renormalized_rows=0,
        dataset=dataset.describe())
    expected = (0.0, 0.0)
    if len(classes) == 2 and summary is not None:
        expected = (float(summary["expected"][0]), float(summary["expected"][1]))
    clipped = int(summary["clipped"].sum()) if summary is not None and "clipped" in summary \
        else 0
    return RowsData(source, tuple(classes), counts.astype(np.int64), provenance,
                    clipped, expected)


def _plans(dataset: Any, label: str, scores: tuple[str, ...], covariates: tuple[str, ...],
           categorical: tuple[str, ...]) -> list[Any]:
    """How the loader would build each column (its kinds and per-file dtypes, from the
    footers, checked in the loader's order of columns): the label's and the scores'
    :class:`ColumnPlan`, then each covariate's :class:`CovariatePlan`; a column the
    loader would refuse is refused with its error, one it reads otherwise (a label or
    prediction of text, a partition key, a column without values) is left to it."""
    from calaudit.data.column_sink import ColumnSink

    names = list(dict.fromkeys([*scores, label, *covariates]))
    sinks = {name: ColumnSink(name) for name in names}
    for file in dataset.location.files:
        fragment = dataset._check_parquet(file, names, sinks)
        dataset._declared_rows(file, fragment, names, sinks)
    # text labels name a multi-class model's classes row by row (a binary model's text
    # labels need every row to find the positive class)
    plans = column_plans({name: (sink.kind, sink.dtypes) for name, sink in sinks.items()},
                         label, scores, covariates, categorical, len(scores) > 1)
    if isinstance(plans, str):
        raise NotPlanned(plans)
    return plans


class NotPlanned(Exception):
    """The dataset is read by the loader instead (the reason)."""


def _raise_first(summary: dict[str, NDArray], source: DatasetRows,
                 ranges: list[tuple[int, int]], layouts: dict[str, Any]) -> None:
    """The loader's error for the first rule (in the loader's order) any row breaks: the
    count over every range, the first row's range read again by a task (one range) for
    the problem's column and value."""
    for j, rule in enumerate(source.rules):
        if not summary["count"][j]:
            continue
        first = int(np.flatnonzero(np.asarray(summary["first"])[:, j])[0])
        raise scale.map_combine(error_partial, [ranges[first]], {
            "rows": source, "rule": rule, "count": int(summary["count"][j]),
            "layouts": layouts}, lambda parts: next(iter(parts)))


def error_partial(start: int, stop: int, *, rows: DatasetRows, rule: str, count: int,
                  layouts: dict[str, Any]) -> InputError:
    """The loader's error for ``rule`` at its first row in ``[start, stop)`` (``count``
    rows break it in all), as a value."""
    problem = problems(rows, start, stop)[0][rule]
    local = int(np.flatnonzero(problem.rows)[0])
    return problem.error_at(start + local, count,
                            first_value(problem, rows.raw(start, stop), local), layouts)


__all__ = ["InputError", "NotPlanned", "RowsData", "plan", "why_not"]
