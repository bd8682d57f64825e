"""Per-row validation rules (design notes 2.2).

Each rule finds the rows that break it. Without ``--drop-invalid`` the first broken rule
stops the load with one message naming file, column, rule, count and the first row; with
it, bad rows are dropped and counted by reason (each row under the first rule it breaks).
"""

from __future__ import annotations

from dataclasses import dataclass

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

    @property
    def count(self) -> int:
        return int(self.rows.sum())

    def position(self, row: int) -> str:
        """Where row ``row`` (0-based) is: ``data row row+1`` in a file (1-based, below the
        header), ``index row`` in in-memory arrays (0-based, as numpy)."""
        return f"index {row}" if self.source == ARRAYS else f"data row {row + 1}"

    def error(self, values: np.ndarray | None = None) -> InputError:
        """The one-line error for this problem, quoting the first offending row."""
        first = int(np.flatnonzero(self.rows)[0])
        value = None if values is None else values[first]
        value = value.item() if hasattr(value, "item") else value
        shown = "" if values is None else f" (value {value!r})"
        return InputError(
            f"{self.message}: {self.count} row(s), first at {self.position(first)}{shown}",
            source=self.source,
            column=self.column,
            rule=self.rule,
            hint=self.hint + ("; or pass drop_invalid=True to drop such rows"
                              if self.source == ARRAYS
                              else "; or pass --drop-invalid to drop such rows"),
        )


def problem(rule: str, source: str, column: str | None, rows: np.ndarray, message: str,
            hint: str) -> RowProblem | None:
    """A :class:`RowProblem` when any row is flagged, else ``None``."""
    return RowProblem(rule, source, column, rows, message, hint) if rows.any() else None


def nonfinite_scores(scores: np.ndarray, columns: tuple[str, ...], source: str,
                     kind: str) -> RowProblem | None:
    """NaN or infinite probability / logit."""
    bad = ~np.isfinite(scores)
    column = columns[int(np.flatnonzero(bad.any(axis=0))[0])] if bad.any() else None
    return problem("nonfinite_probability", source, column, bad.any(axis=1),
                   f"{kind} is missing, NaN or infinite", "check the model output")


def out_of_range(probs: np.ndarray, columns: tuple[str, ...], source: str) -> RowProblem | None:
    """Probability below 0 or above 1."""
    with np.errstate(invalid="ignore"):
        bad = (probs < 0.0) | (probs > 1.0)
    column = columns[int(np.flatnonzero(bad.any(axis=0))[0])] if bad.any() else None
    return problem("probability_out_of_range", source, column, bad.any(axis=1),
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
