"""Per-row validation rules (docs/inputs.md): each finds the rows that break it, which
stop the load with one line or, with ``--drop-invalid``, are dropped."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from calaudit.data.spill import ColumnStore, in_blocks
from calaudit.exceptions import InputError, clip

#: Relative tolerance on ``sum_k p_ik = 1`` for multi-class rows.
SUM_TOLERANCE = 1e-6
#: The ``source`` of rows that come from in-memory arrays (``CalibrationData.from_arrays``).
ARRAYS = "<arrays>"
#: Rules that stop the audit even with ``drop_invalid``: they say the column means something
#: else (real-valued weights read as frequency weights), so dropping rows would bias it.
NOT_DROPPABLE = ("fractional_frequency_weight",)
#: What a column of complex numbers, time spans or timestamps holds (numpy dtype kinds).
KIND_WORDS = {"c": "complex numbers", "m": "time spans", "M": "timestamps"}


@dataclass(frozen=True)
class RowProblem:
    """Rows that break one rule; ``rows`` is a boolean mask over all rows read."""

    rule: str
    source: str
    column: str | None
    rows: np.ndarray
    message: str
    hint: str
    joined: tuple[str, np.ndarray] | None = None

    def where(self, row: int, layouts: Mapping[str, Any] | None = None) -> str:
        """`` of preds.csv (id 'a7')`` when rows are counted in another file (``joined``:
        the predictions file and its ids, for files joined on an id)."""
        if self.joined is None or self.joined[0] == self.source:
            return ""
        path, ids = self.joined
        layout = (layouts or {}).get(path)
        if layout is not None:
            name, local = layout.locate(row)
            return f" of the dataset (data row {local + 1} of {name}, id {shown_value(ids[row])})"
        return f" of {path} (id {shown_value(ids[row])})"

    @property
    def count(self) -> int:
        return int(self.rows.sum())

    def error(self, values: np.ndarray | None = None,
              layouts: Mapping[str, Any] | None = None) -> InputError:
        """The one-line error, quoting the first offending row (``layouts``: datasets'
        :class:`~calaudit.data.partitioned.RowLayout` by name, to name a row's file)."""
        first = int(np.flatnonzero(self.rows)[0])
        return self.error_at(first, self.count,
                             None if values is None else (values[first],), layouts)

    def error_at(self, first: int, count: int, value: tuple[Any] | None = None,
                 layouts: Mapping[str, Any] | None = None) -> InputError:
        """:meth:`error` of a problem known by its first row, its count of rows and the
        first row's value (``(value,)``, or None), as when rows are checked by ranges."""
        shown = "" if value is None else f" (value {shown_value(value[0])})"
        layout = None if self.joined is not None else (layouts or {}).get(self.source)
        source, position = ((self.source, position_of(self.source, first)) if layout is None
                            else located(self.source, first, layout))
        if self.joined is not None and self.joined[0] in (layouts or {}):
            position = f"global row {first + 1}"
        drop = ("" if self.rule in NOT_DROPPABLE
                else "; or pass drop_invalid=True to drop such rows" if self.source == ARRAYS
                else "; or pass --drop-invalid to drop such rows")
        return InputError(f"{self.message}: {count} row(s), first at {position}"
                          f"{self.where(first, layouts)}{shown}", source=source,
                          column=self.column, rule=self.rule, hint=self.hint + drop)


def problem(rule: str, source: str, column: str | None, rows: np.ndarray, message: str,
            hint: str, joined: tuple[str, np.ndarray] | None = None) -> RowProblem | None:
    """A :class:`RowProblem` when any row is flagged, else ``None``."""
    return RowProblem(rule, source, column, rows, message, hint, joined) if rows.any() else None


def position_of(source: str, row: int) -> str:
    """``data row row+1`` in a file (below the header), ``index row`` in arrays."""
    return f"index {row}" if source == ARRAYS else f"data row {row + 1}"


def located(source: str, row: int, layout: Any = None) -> tuple[str, str]:
    """``(file, "data row R (global row G)")`` of 0-based global row ``row`` of a dataset
    (``layout``: its RowLayout); ``(source, "data row R")`` for one file."""
    if layout is None:
        return source, f"data row {row + 1}"
    name, local = layout.locate(row)
    return name, f"data row {local + 1} (global row {row + 1})"


def numbers(values: Any, source: str, column: str, rule: str, hint: str,
            layout: Any = None) -> np.ndarray:
    """A column (a pandas Series) as float64, missing values NaN; the first value that is
    not a number (or a column of complex numbers, at its first row) refused, its row
    located in its file for a dataset (``layout``: its RowLayout)."""
    import pandas as pd

    converted = pd.to_numeric(values, errors="coerce")
    bad = converted.isna() & values.notna()
    if bad.any() or getattr(converted.dtype, "kind", "O") == "c":
        first = int(np.flatnonzero(bad.to_numpy())[0]) if bad.any() else 0
        where, position = ((source, position_of(source, first)) if layout is None
                           else located(source, first, layout))
        raise InputError(f"value {shown_value(values.iloc[first])} at {position} is not a "
                         "number", source=where, column=column, rule=rule, hint=hint)
    return converted.to_numpy(dtype=np.float64, na_value=np.nan)


def shown_value(value: object, limit: int = 60) -> str:
    """``repr`` of a cell for an error message, shortened to ``limit`` characters."""
    return clip(repr(value.item() if hasattr(value, "item") else value), limit)


def row_mask(n: int, flagged: Callable[[int, int], np.ndarray],
             store: ColumnStore | None = None) -> np.ndarray:
    """The boolean mask of rows ``0 .. n-1``, ``flagged(start, stop)`` a block at a time."""
    return in_blocks(store if store is not None else ColumnStore(), n, bool, flagged)


def cell_problem(rule: str, cells: Callable[[np.ndarray], np.ndarray], scores: np.ndarray,
                 columns: tuple[str, ...], source: str, message: str, hint: str,
                 store: ColumnStore | None) -> RowProblem | None:
    """Rows with a bad cell (``cells(block) -> (rows, m) bool``); the column named is the
    first bad cell's of the first bad row."""
    with np.errstate(invalid="ignore"):
        rows = row_mask(len(scores), lambda a, b: cells(scores[a:b]).any(axis=1), store)
    if not rows.any():
        return None
    first = int(np.argmax(rows))
    with np.errstate(invalid="ignore"):
        column = columns[int(np.argmax(cells(scores[first:first + 1])[0]))]
    return RowProblem(rule, source, column, rows, message, hint)
