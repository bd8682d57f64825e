"""How the loader would build each column of a CSV / TSV dataset, found by one task per
file on the workers (:func:`calaudit.data.csv_rows.scan_partial`) and settled here in the
loader's order of files and columns: the first file's error, then each column's kind
against the other files' (:meth:`~calaudit.data.column_sink.ColumnSink.expect`), the
numbers' dtype (int64 when every file holds integers without missing cells, else float64,
as :meth:`~calaudit.data.csv_stream.CsvColumn.finish` makes it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from calaudit import scale
from calaudit.data.column_sink import ColumnSink
from calaudit.data.csv_rows import CsvFiles, CsvRows, scan_partial
from calaudit.data.dataset_rows import column_plans


def csv_plans(dataset: Any, label: str, scores: tuple[str, ...],
              covariates: tuple[str, ...], categorical: tuple[str, ...]
              ) -> tuple[CsvRows, list[Any]] | str:
    """``(rows, plans)`` of a CSV / TSV ``dataset`` (:class:`~calaudit.data.partitioned.
    Dataset`): the row source and the label's and scores' :class:`ColumnPlan`, then each
    covariate's :class:`CovariatePlan` (the order of :func:`calaudit.data.planned._plans`);
    ``dataset.rows`` set to the files' rows. A column the loader reads otherwise (a label
    or prediction of text, a column without values, one only a whole-file read settles)
    gives the reason instead; a file the loader refuses raises its error."""
    names = list(dict.fromkeys([*scores, label, *covariates]))
    files = CsvFiles.of(dataset.location, names)
    scanned = scale.map_combine(scan_partial, [(k, k + 1) for k in range(len(files.paths))],
                                {"files": files}, _joined)
    sinks = {name: ColumnSink(name) for name in names}
    dtypes: dict[str, list[str]] = {name: [] for name in names}
    for k, found in enumerate(scanned):
        if "error" in found:
            raise found["error"]
        if "whole" in found:
            return f"column {found['whole']} of {files.names[k]} needs a whole-file read"
        for name in names:
            column = found["columns"][name]
            sinks[name].expect(column.kind, column.type_name, files.names[k])
            if column.kind in ("numeric", None):
                dtypes[name].append(column.parse)
    plans = column_plans({name: (sinks[name].kind, dtypes[name]) for name in names},
                         label, scores, covariates, categorical, False)
    if isinstance(plans, str):
        return plans
    dataset.rows = [found["rows"] for found in scanned]
    return CsvRows(files, scanned), plans


def _joined(parts: Iterator[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [found for part in parts for found in part]
