"""Covariate terms of the recalibration model.

Each covariate is cut into the levels of the group table (:func:`covariate_levels`: the
categories of a categorical covariate, ``n_bands`` equal-mass quantile bands of a numeric
one) and enters with treatment coding: one 0/1 column per level except the reference, the
largest level (the choice changes no fit, test or standardised bias, only coefficients).
Levels too small to estimate (fewer than ``min_rows`` rows or ``min_events`` events or
non-events) are left out together with their rows (``rows_used`` says how many rows the
model saw); such levels are reported without a bias.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit.local.groups import Levels


@dataclass(frozen=True)
class Term:
    """One covariate's columns: level labels, the per-row level code, the reference and
    the levels too small to use."""

    name: str
    labels: tuple[str, ...]
    codes: NDArray[np.intp]
    reference: int
    used: tuple[int, ...]
    kind: str

    @property
    def columns(self) -> tuple[int, ...]:
        """Codes that get a column (used levels other than the reference)."""
        return tuple(c for c in self.used if c != self.reference)


def build_terms(levels: Sequence[Levels], kinds: Sequence[str], outcome: NDArray[np.float64],
                min_rows: int, min_events: int) -> tuple[list[Term], NDArray[np.intp]]:
    """The terms and the rows kept (rows of a too-small level of any covariate are left
    out)."""
    keep = np.ones(outcome.size, dtype=bool)
    usable: list[tuple[int, ...]] = []
    for lv in levels:
        ok = []
        for code in range(len(lv.labels)):
            mask = lv.codes == code
            n, events = int(mask.sum()), float(outcome[mask].sum())
            if n >= min_rows and min(events, n - events) >= min_events:
                ok.append(code)
            else:
                keep &= ~mask
        usable.append(tuple(ok))
    rows = np.flatnonzero(keep)
    terms = []
    for lv, kind, ok in zip(levels, kinds, usable, strict=True):
        counts = np.bincount(lv.codes[rows], minlength=len(lv.labels))
        reference = max(ok, key=lambda c: (counts[c], -c)) if ok else 0
        terms.append(Term(lv.name, lv.labels, lv.codes, reference, ok, kind))
    return terms, rows


def coded_design(terms: Sequence[Term], rows: NDArray[np.intp],
                 override: tuple[str, int] | None = None) -> dict[str, NDArray[np.intp]]:
    """The design of ``rows`` in coded form (what the chunked fits share): ``codes``
    (rows x terms, int32; ``override=(name, level)`` sets that covariate's column to the
    level on every row, for standardisation) and, per non-intercept column ``j``,
    ``column_term[j]`` and ``column_code[j]``: ``x_ij = 1{codes[i, column_term[j]] =
    column_code[j]}``. About 4 bytes per row and term instead of 8 per row and column."""
    codes = np.empty((rows.size, len(terms)), dtype=np.int32)
    column_term, column_code = [], []
    for t, term in enumerate(terms):
        if override and override[0] == term.name:
            codes[:, t] = override[1]
        else:
            codes[:, t] = term.codes[rows]
        column_term += [t] * len(term.columns)
        column_code += list(term.columns)
    return {"codes": codes, "column_term": np.asarray(column_term, dtype=np.intp),
            "column_code": np.asarray(column_code, dtype=np.intp)}


def design_rows(codes: NDArray[np.intp], column_term: NDArray[np.intp],
                column_code: NDArray[np.intp]) -> NDArray[np.float64]:
    """``[1, 0/1 columns]`` of the rows whose codes are given (a chunk of
    :func:`coded_design`'s ``codes``)."""
    x = np.empty((codes.shape[0], 1 + column_term.size))
    x[:, 0] = 1.0
    np.equal(codes[:, column_term], column_code[None, :], out=x[:, 1:], casting="unsafe")
    return x


def design_matrix(terms: Sequence[Term], rows: NDArray[np.intp],
                  override: tuple[str, int] | None = None) -> NDArray[np.float64]:
    """``[1, terms...]`` for ``rows`` as one dense matrix (small data and tests; the fits
    use :func:`coded_design` chunk by chunk); ``override=(name, level)`` sets one
    covariate to a level on every row (standardisation)."""
    return design_rows(**coded_design(terms, rows, override))
