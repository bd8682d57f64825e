"""Per-row validation rules (design notes 2.2).

Each rule finds the rows that break it. Without ``--drop-invalid`` the first broken rule
stops the load with one message naming file, column, rule, count and the first row; with
it, bad rows are dropped and counted by reason (each row under the first rule it breaks).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from calaudit.exceptions import InputError

#: Relative tolerance on ``sum_k p_ik = 1`` for multi-class rows.
SUM_TOLERANCE = 1e-6
#: The ``source`` of rows that come from in-memory arrays (``CalibrationData.from_arrays``).
ARRAYS = "<arrays>"


@dataclass(frozen=True)
class RowProblem:
    """Rows that break one rule; ``rows`` is a boolean mask over all rows read."""

    rule: str
    source: str
    column: str | None
    rows: np.ndarray
    message: str
    hint: str
    #: For files joined on an id: ``(predictions file, ids)``, to say which row is meant.
    joined: tuple[str, np.ndarray] | None = None

    def where(self, row: int, layouts: Mapping[str, Any] | None = None) -> str:
        """`` of preds.csv (id 'a7')`` when rows are counted in another file."""
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

    def position(self, row: int) -> str:
        """Where row ``row`` (0-based) is: ``data row row+1`` in a file (1-based, below the
        header), ``index row`` in in-memory arrays (0-based, as numpy)."""
        return f"index {row}" if self.source == ARRAYS else f"data row {row + 1}"

    def error(self, values: np.ndarray | None = None,
              layouts: Mapping[str, Any] | None = None) -> InputError:
        """The one-line error for this problem, quoting the first offending row.

        ``layouts`` maps a dataset's name to its
        :class:`~calaudit.data.partitioned.RowLayout`: the message then names the file of
        the row, the row in that file and the global row."""
        first = int(np.flatnonzero(self.rows)[0])
        shown = "" if values is None else f" (value {shown_value(values[first])})"
        layout = None if self.joined is not None else (layouts or {}).get(self.source)
        source, position = ((self.source, self.position(first)) if layout is None
                            else located(self.source, first, layout))
        if self.joined is not None and self.joined[0] in (layouts or {}):
            position = f"global row {first + 1}"
        return InputError(
            f"{self.message}: {self.count} row(s), first at {position}"
            f"{self.where(first, layouts)}{shown}",
            source=source,
            column=self.column,
            rule=self.rule,
            hint=self.hint + ("; or pass drop_invalid=True to drop such rows"
                              if self.source == ARRAYS
                              else "; or pass --drop-invalid to drop such rows"),
        )


def problem(rule: str, source: str, column: str | None, rows: np.ndarray, message: str,
            hint: str, joined: tuple[str, np.ndarray] | None = None) -> RowProblem | None:
    """A :class:`RowProblem` when any row is flagged, else ``None``."""
    return RowProblem(rule, source, column, rows, message, hint, joined) if rows.any() else None


def located(source: str, row: int, layout: Any = None) -> tuple[str, str]:
    """``(file, "data row R (global row G)")`` of 0-based global row ``row`` of a dataset
    (``layout``: its :class:`~calaudit.data.partitioned.RowLayout`); ``(source, "data row
    R")`` for one file. Both numbers are 1-based, as a data row below a header."""
    if layout is None:
        return source, f"data row {row + 1}"
    name, local = layout.locate(row)
    return name, f"data row {local + 1} (global row {row + 1})"


def shown_value(value: object, limit: int = 60) -> str:
    """``repr`` of a cell for an error message, shortened to ``limit`` characters."""
    value = value.item() if hasattr(value, "item") else value
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 15]}...{text[-12:]}"


def first_bad_column(bad: np.ndarray, columns: tuple[str, ...]) -> str | None:
    """The column of the first bad cell of the first bad row (``bad`` is (n, m))."""
    rows = np.flatnonzero(bad.any(axis=1))
    if rows.size == 0:
        return None
    return columns[int(np.flatnonzero(bad[rows[0]])[0])]


def nonfinite_scores(scores: np.ndarray, columns: tuple[str, ...], source: str,
                     kind: str) -> RowProblem | None:
    """NaN or infinite probability / logit."""
    bad = ~np.isfinite(scores)
    return problem("nonfinite_probability", source, first_bad_column(bad, columns),
                   bad.any(axis=1),
                   f"{kind} is missing, NaN or infinite", "check the model output")


def out_of_range(probs: np.ndarray, columns: tuple[str, ...], source: str) -> RowProblem | None:
    """Probability below 0 or above 1."""
    with np.errstate(invalid="ignore"):
        bad = (probs < 0.0) | (probs > 1.0)
    return problem("probability_out_of_range", source, first_bad_column(bad, columns),
                   bad.any(axis=1),
                   "probabilities must lie in [0, 1]",
                   "pass probabilities, or logits with --logit-cols")


def not_summing_to_one(probs: np.ndarray, columns: tuple[str, ...], source: str
                       ) -> RowProblem | None:
    """Multi-class row whose probabilities do not sum to 1 within ``SUM_TOLERANCE``."""
    with np.errstate(invalid="ignore"):
        bad = np.abs(probs.sum(axis=1) - 1.0) > SUM_TOLERANCE
    return problem("probabilities_not_summing_to_one", source, f"{columns[0]}..{columns[-1]}", bad,
                   f"class probabilities must sum to 1 (tolerance {SUM_TOLERANCE:g})",
                   "pass --renormalize to rescale each row")
