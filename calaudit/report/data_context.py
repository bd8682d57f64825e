"""View model of the report's data section (``inputs`` and ``data`` of the JSON result,
``docs/result-schema.md``): the file or dataset read and its fingerprint, the rows read,
used and excluded, the columns, the files of a dataset, the classes with their
prevalence and the covariates with their categories.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from calaudit import limits
from calaudit.output.formatting import fmt_count, fmt_percent, fmt_value, weights_line
from calaudit.report.views import ClassRow, CovariateRow, DataView, FileRow, KeyValue


def build_data(result: Mapping[str, Any]) -> DataView:
    """File, fingerprint, rows, classes with prevalence, covariates."""
    inputs, data = result.get("inputs") or {}, result.get("data") or {}
    excluded = inputs.get("rows_excluded") or {}
    columns = inputs.get("columns") or {}
    dataset = inputs.get("dataset") or {}
    total = inputs.get("total") or {}
    facts = [
        KeyValue("dataset" if dataset else "file",
                 str(inputs.get("path") or "in-memory arrays")),
        KeyValue("format", str(inputs.get("format") or "-")),
        *((KeyValue("files", f"{fmt_count(total.get('files'))} "
                             f"({fmt_count(total.get('bytes'))} bytes)"),) if dataset else
          (KeyValue("sha256", str(inputs.get("sha256") or "-")),)),
        KeyValue("rows read", fmt_count(inputs.get("rows_read"))),
        KeyValue("rows used", fmt_count(inputs.get("rows_used", data.get("n")))),
        KeyValue("rows excluded", fmt_count(sum(excluded.values()))),
    ]
    weighted = weights_line(data)
    if weighted:
        facts.append(KeyValue("weights", weighted))
    if inputs.get("rows_renormalized"):
        facts.append(KeyValue("rows renormalised", fmt_count(inputs["rows_renormalized"])))
    for key in ("label", "scores", "score_kind", "id"):
        if columns.get(key) not in (None, "", []):
            facts.append(KeyValue(f"column: {key.replace('_', ' ')}",
                                  fmt_value(columns[key])))
    counts = data.get("class_counts") or {}
    total = sum(counts.values()) or 1
    files = inputs.get("files") or []
    return DataView(
        facts=tuple(facts),
        excluded=tuple(KeyValue(str(k), fmt_count(v)) for k, v in excluded.items()),
        files=tuple(_file_row(f) for f in files[:MAX_FILES]) if len(files) > 1 else (),
        files_more=max(len(files) - MAX_FILES, 0) if len(files) > 1 else 0,
        classes=tuple(ClassRow(str(name), fmt_count(count), fmt_percent(count / total))
                      for name, count in list(counts.items())[:limits.REPORT_MAX_ROWS]),
        classes_more=max(len(counts) - limits.REPORT_MAX_ROWS, 0),
        covariates=tuple(CovariateRow(str(c.get("name")), str(c.get("type", "-")),
                                      _categories(c.get("categories")))
                         for c in data.get("covariates") or ()),
    )


#: Files listed in a report's data section (a dataset may have thousands; the JSON lists all).
MAX_FILES = 50


def _file_row(entry: Mapping[str, Any]) -> FileRow:
    kind = entry.get("fingerprint_kind") or "sha256"
    value = entry.get("fingerprint") or entry.get("sha256")
    return FileRow(str(entry.get("role", "-")), str(entry.get("path", "-")),
                   str(entry.get("format", "-")), str(entry.get("sha256") or "-"),
                   fmt_count(entry.get("rows")),
                   fmt_count(entry.get("size")) if entry.get("size") is not None else "-",
                   f"{kind} {value}" if value else "-")


def _categories(categories: Sequence[Any] | None, limit: int = 12) -> str:
    if not categories:
        return "-"
    shown = ", ".join(str(c) for c in categories[:limit])
    more = len(categories) - limit
    return f"{shown} (+{more} more)" if more > 0 else shown
