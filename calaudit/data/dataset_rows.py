"""A dataset's rows as the loader's validated columns, read by the task that reduces them.

:class:`DatasetRows` is a row source (``read(start, stop, names)``, :mod:`calaudit.scale`)
over the files of a dataset (:class:`~calaudit.data.row_source.ParquetRows`: paths and
footer row counts; or CSV / TSV files, :class:`~calaudit.data.csv_rows.CsvRows`) plus
what the loader does to the raw columns: the label's and the prediction columns'
conversion (the same :class:`~calaudit.data.column_sink.ColumnSink`
per range, with the dtypes the client fixed from every file's footer), the probabilities
(:func:`calaudit.data.build.to_probabilities`) and the class codes
(:func:`calaudit.data.build.label_codes`). Every step works row by row, so a range's
values are the rows the loader would have produced: a partial that reads ``y``, ``p``
or ``logit`` here computes the same bytes as on the loaded arrays. It holds a few hundred
bytes per file, whatever the rows; on Dask it travels inside each task (``reads_own_rows``),
so a task lost with its worker is rerun by Dask from its spec.

:func:`check_partial` is the first reduction: the loader's row rules on each range
(:func:`calaudit.data.build.score_problems` and the label rules), giving per range and rule
the count of rows broken, the first one and its value, and the summaries the stages need
(class counts, clipped probabilities, the expected events).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calaudit.data.build import (
    LoadOptions,
    RawInputs,
    covariate_problems,
    label_codes,
    label_problems,
    score_problems,
)
from calaudit.data.column_sink import ColumnSink
from calaudit.data.dataset import residuals_of
from calaudit.data.dataset_covariates import (
    COVARIATE_RULES,
    PREFIX,
    CovariatePlan,
    range_levels,
    union,
)
from calaudit.data.spill import ColumnStore
from calaudit.scale import fold

#: The loader's options this source reproduces (the defaults: no renormalising, no
#: dropped rows, no named positive label).
OPTIONS = LoadOptions()
#: The rules checked on the workers, in the loader's order.
RULES = ("missing_label", "nonfinite_probability", "probability_out_of_range",
         "probabilities_not_summing_to_one", "unknown_label")
#: ``logit(clip(p))``'s clip (:data:`calaudit.metrics.clinical.CLIP`).
CLIP = 1e-12


@dataclass(frozen=True)
class ColumnPlan:
    """How the loader builds one column: its kind (``numeric`` or ``bool``) and, for
    numbers, each file's numpy dtype (:meth:`ColumnSink.final_dtype` decides)."""

    name: str
    kind: str
    dtypes: tuple[Any, ...] = ()

    def sink(self, rows: int) -> ColumnSink:
        """The column's sink for ``rows`` rows, filled file by file (``FileRows.series``)."""
        sink = ColumnSink(self.name, self.kind, dtypes=[np.dtype(d) for d in self.dtypes])
        sink.allocate(rows, ColumnStore())
        return sink


def column_plans(columns: dict[str, tuple[str | None, Any]], label: str,
                 scores: tuple[str, ...], covariates: tuple[str, ...],
                 categorical: tuple[str, ...], text_labels: bool) -> list[Any] | str:
    """The label's and the scores' :class:`ColumnPlan`, then each covariate's
    :class:`CovariatePlan`, from each column's kind and per-file dtypes (``columns``);
    the reason instead when the loader reads a column otherwise (a prediction, or unless
    ``text_labels`` a label, that is not numbers or booleans; a column without values)."""
    plans: list[Any] = []
    for index, name in enumerate([label, *scores]):
        kind, dtypes = columns[name]
        kinds = ("numeric", "bool", "text") if text_labels else ("numeric", "bool")
        if kind not in kinds or (index and kind != "numeric"):
            return f"column {name} holds {kind or 'no'} values"
        plans.append(ColumnPlan(name, kind, tuple(str(d) for d in dtypes)))
    for name in covariates:
        kind, dtypes = columns[name]
        if kind is None:
            return f"column {name} holds no values"
        plans.append(CovariatePlan(ColumnPlan(name, kind, tuple(str(d) for d in dtypes)),
                                   kind != "numeric" or name in categorical))
    return plans


@dataclass(frozen=True)
class DatasetRows:
    """Rows of a Parquet dataset as ``y`` (class codes), ``proba`` (n, m), ``p`` (the
    positive class's probability, binary), ``logit`` (``logit(clip(p))``) and
    ``residuals`` (``e_y - p``); see the module docstring."""

    #: The files (:class:`~calaudit.data.row_source.FileRows`: :class:`ParquetRows`, or
    #: CSV / TSV files' :class:`~calaudit.data.csv_rows.CsvRows`).
    files: Any
    label: ColumnPlan
    scores: tuple[ColumnPlan, ...]
    class_names: tuple[str, ...]
    kind: str
    source: str
    #: The covariates (:mod:`calaudit.data.dataset_covariates`), read as ``x:NAME``.
    covariates: tuple[CovariatePlan, ...] = ()

    reads_own_rows = True

    @property
    def n(self) -> int:
        return self.files.n

    @property
    def rules(self) -> tuple[str, ...]:
        """The row rules checked by :func:`check_partial`, in the loader's order: those of
        :data:`RULES`, then each covariate's (``missing_covariate:age``, ...)."""
        return RULES + tuple(f"{rule}:{cov.name}" for cov in self.covariates
                             for rule in COVARIATE_RULES)

    @staticmethod
    def covariate_column(name: str) -> str:
        """The column of covariate ``name`` in :meth:`read` (its values or codes)."""
        return PREFIX + name

    def series(self, start: int, stop: int, plans: Iterable[ColumnPlan]
               ) -> dict[str, pd.Series]:
        """The columns ``plans`` of rows ``[start, stop)`` as the loader's Series."""
        return self.files.series(start, stop, plans)

    def raw(self, start: int, stop: int, covariates: bool = True) -> RawInputs:
        """Rows ``[start, stop)`` as the loader's raw inputs (labels, prediction matrix
        and, unless ``covariates`` is false, the covariates)."""
        from calaudit.data.load import _score_matrix as score_matrix

        chosen = self.covariates if covariates else ()
        series = self.series(start, stop, (self.label, *self.scores,
                                           *(c.column for c in chosen)))
        names = tuple(plan.name for plan in self.scores)
        return RawInputs(score_matrix([series[name] for name in names], names, self.source,
                                      None, ColumnStore()),
                         names, self.class_names, self.kind, self.source,
                         series[self.label.name], self.label.name, self.source,
                         [(c.name, series[c.name], self.source) for c in chosen])

    def columns(self, start: int, stop: int) -> tuple[NDArray, NDArray]:
        """``(class codes, probabilities)`` of rows ``[start, stop)``."""
        codes, proba, _, _ = coded(self.raw(start, stop, covariates=False))
        return codes, proba

    def read(self, start: int, stop: int, names: Iterable[str]) -> dict[str, NDArray]:
        names = list(names)
        wanted = {name[len(PREFIX):] for name in names if name.startswith(PREFIX)}
        covariates = [c for c in self.covariates if c.name in wanted]
        if len(covariates) != len(wanted):
            raise KeyError(f"no covariate among {sorted(wanted)} in the dataset's rows")
        series = self.series(start, stop, (c.column for c in covariates)) if covariates \
            else {}
        out: dict[str, NDArray] = {PREFIX + c.name: c.encoded(series[c.name])
                                   for c in covariates}
        if len(out) == len(names):
            return out
        codes, proba = self.columns(start, stop)
        for name in names:
            if name in out:
                continue
            if name == "y":
                out[name] = codes
            elif name == "proba":
                out[name] = proba
            elif name == "p":
                out[name] = proba[:, 1]
            elif name == "logit":
                out[name] = logit_column(proba[:, 1])
            elif name == "residuals":
                out[name] = residuals_of(codes, proba)
            else:
                raise KeyError(f"no column {name!r} in the dataset's rows")
        return {name: out[name] for name in names}

    def __repr__(self) -> str:
        return f"DatasetRows({self.source}, {self.files!r})"


def logit_column(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """``logit(clip(p))``: the operations of :func:`calaudit.metrics.clinical.logit_of`."""
    from scipy import special

    return special.logit(np.clip(p, CLIP, 1.0 - CLIP))


@dataclass(frozen=True)
class Columns:
    """Columns ``names`` of the row source ``rows``: a few names that travel inside each
    task with the source (``reads_own_rows``: nothing scattered, so Dask reruns a task
    lost with its worker from its spec alone)."""

    rows: Any
    names: tuple[str, ...]

    reads_own_rows = True


def read_partial(start: int, stop: int, *, columns: Columns) -> dict[str, NDArray]:
    """The columns ``columns.names`` of rows ``[start, stop)`` (a per-row map)."""
    return columns.rows.read(start, stop, columns.names)


def problems(rows: DatasetRows, start: int, stop: int
             ) -> tuple[dict[str, Any], RawInputs, NDArray, NDArray]:
    """The loader's row problems of rows ``[start, stop)`` by rule (rows numbered from
    ``start``), the raw rows, their class codes and probabilities."""
    raw = rows.raw(start, stop)
    codes, proba, missing, classes = coded(raw)
    missing_label, unknown_label = label_problems(raw, missing, codes, classes)
    found = {problem.rule: problem for problem in (
        missing_label, *score_problems(raw, proba, OPTIONS), unknown_label)
        if problem is not None}
    for problem in covariate_problems(raw):
        if problem is not None:
            found[f"{problem.rule}:{problem.column}"] = problem
    return found, raw, codes, proba


def first_value(problem: Any, raw: RawInputs, local: int) -> tuple[Any] | None:
    """The value the loader's error quotes for the broken row ``local`` (None: none)."""
    if problem.column == raw.label_column:
        return (raw.labels.to_numpy()[local],)
    if problem.column in raw.score_columns:
        return (raw.scores[local, raw.score_columns.index(problem.column)],)
    for name, series, _ in raw.covariates:
        if name == problem.column:
            return (series.to_numpy()[local],)
    return None


def check_partial(start: int, stop: int, *, rows: DatasetRows, task_rows: int,
                  tasks: int) -> dict[str, Any]:
    """The loader's row rules on rows ``[start, stop)`` (range ``start // task_rows`` of
    ``tasks``): per rule of ``rows.rules`` the rows broken (``count``) and, in the
    range's own row of ``first`` (tasks x rules), 1 + the first broken row (0: none); the
    class counts (``classes``), the probabilities clipped by ``logit(clip(p))``
    (``clipped``) and ``[sum p, sum 1 - p]`` (``expected``, binary); with covariates,
    each one's levels in use (``levels``) and the ranges with a value that is not a whole
    number (``fractional``). :func:`combine_checks` adds them over the ranges."""
    found, raw, codes, proba = problems(rows, start, stop)
    rules = rows.rules
    count = np.zeros(len(rules), np.int64)
    first = np.zeros((tasks, len(rules)), np.int64)
    for j, rule in enumerate(rules):
        if rule in found:
            count[j] = found[rule].count
            first[start // task_rows, j] = start + 1 + int(np.flatnonzero(found[rule].rows)[0])
    m = proba.shape[1]
    known = codes[codes >= 0]
    out: dict[str, Any] = {"count": count, "first": first,
                           "classes": np.bincount(known, minlength=m)[:m].astype(np.int64)}
    if m == 2:
        p = proba[:, 1]
        out["clipped"] = np.array([np.count_nonzero((p < CLIP) | (p > 1.0 - CLIP))])
        out["expected"] = np.array([float(p.sum()), float(np.add.reduce(1 - p))])
    if rows.covariates:
        found_levels = [range_levels(c, series) for c, (_, series, _) in
                        zip(rows.covariates, raw.covariates, strict=True)]
        out["levels"] = [levels for levels, _ in found_levels]
        out["fractional"] = np.array([flag for _, flag in found_levels], np.int64)
    return out


def combine_checks(parts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """:func:`check_partial`'s partials, in range order: the arrays added
    (:func:`calaudit.scale.fold`, the bytes of ``map_sum``), the levels joined."""
    levels: list[Any] = []

    def arrays():
        for part in parts:
            part = dict(part)
            found = part.pop("levels", [])
            levels[:] = found if not levels else [union(a, b) for a, b in zip(levels, found)]
            yield part

    total = fold(arrays())
    if levels:
        total["levels"] = list(levels)
    return total


def coded(raw: RawInputs) -> tuple[NDArray, NDArray, NDArray, tuple[str, ...]]:
    """``(class codes, probabilities, missing labels, classes)`` of raw rows, as the
    loader makes them."""
    from calaudit.data.build import to_probabilities

    proba, _ = to_probabilities(raw, OPTIONS)
    missing = raw.labels.isna().to_numpy()
    classes, codes = label_codes(raw, missing, OPTIONS)
    return codes, proba, missing, classes
