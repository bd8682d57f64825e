"""Covariate terms of the recalibration model.

Each covariate is cut into the levels of the group table (:func:`covariate_levels`) and
enters with treatment coding, the largest level as reference. Levels with fewer than
``min_rows`` rows or ``min_events`` events or non-events are left out with their rows
(``rows_used``) and reported without a bias. On weighted rows (docs/weights.md) a level's
rows and events are its sample size and effective events, the reference the level of the
largest sample size, and rows of weight 0 are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit.data.weights import kish
from calaudit.local.groups import Levels, rows_where


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
                min_rows: int, min_events: int, weights: NDArray[np.float64] | None = None,
                frequency: bool = True) -> tuple[list[Term], NDArray[np.intp]]:
    """The terms and the rows kept (rows of a too-small level of any covariate are left
    out); ``weights``: the rows' weights, ``frequency``: whether they count units."""
    keep = np.ones(outcome.size, dtype=bool) if weights is None else weights > 0
    usable: list[tuple[int, ...]] = []
    for lv in levels:
        ok = []
        for code in range(len(lv.labels)):
            mask = lv.codes == code
            n, events, non_events = level_size(mask, outcome, weights, frequency)
            if n >= min_rows and min(events, non_events) >= min_events:
                ok.append(code)
            else:
                keep &= ~mask
        usable.append(tuple(ok))
    rows = rows_where(keep)
    terms = []
    for lv, kind, ok in zip(levels, kinds, usable, strict=True):
        counts = (np.bincount(lv.codes[rows], minlength=len(lv.labels)) if weights is None
                  else [level_size(lv.codes[rows] == c, outcome[rows], weights[rows],
                                   frequency)[0] for c in range(len(lv.labels))])
        reference = max(ok, key=lambda c: (counts[c], -c)) if ok else 0
        terms.append(Term(lv.name, lv.labels, lv.codes, reference, ok, kind))
    return terms, rows


def level_size(mask: NDArray[np.bool_], outcome: NDArray[np.float64],
               weights: NDArray[np.float64] | None, frequency: bool
               ) -> tuple[float, float, float]:
    """``(rows, events, non-events)`` of the rows ``mask``: counts, the sums of the weights
    (frequency weights) or their Kish sizes."""
    if weights is None:
        n = int(mask.sum())
        events = float(outcome[mask].sum())
        return n, events, n - events
    w = weights[mask]
    positive = outcome[mask] > 0
    if frequency:
        return float(w.sum()), float(w[positive].sum()), float(w[~positive].sum())
    return kish(w), kish(w[positive]), kish(w[~positive])


def _columns(terms: Sequence[Term]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Per non-intercept column ``j``: the term (position in ``terms``) and level code."""
    term_of = [t for t, term in enumerate(terms) for _ in term.columns]
    code_of = [c for term in terms for c in term.columns]
    return np.asarray(term_of, dtype=np.intp), np.asarray(code_of, dtype=np.intp)


def design_rows(codes: NDArray[np.intp], terms: Sequence[Term]) -> NDArray[np.float64]:
    """``[1, 0/1 columns of terms]`` of the rows whose codes (one column per term) are
    given: ``x_j = 1{code of column j's term = column j's level}``."""
    column_term, column_code = _columns(terms)
    x = np.empty((codes.shape[0], 1 + column_term.size))
    x[:, 0] = 1.0
    np.equal(codes[:, column_term], column_code[None, :], out=x[:, 1:], casting="unsafe")
    return x


#: Up to this many possible keys, cells are ranked by a count of every key (O(n), no sort).
COUNT_KEYS = 1 << 22
#: Cells are keyed by one int64 (mixed radix of the level codes) while the product of the
#: level counts stays below this; beyond, by ``np.unique`` over the rows of codes.
MAX_KEYS = 2.0**62


#: Rows per block of :meth:`Cells.build`'s keys.
KEY_ROWS = 1 << 18


def _keys(terms: Sequence[Term], sizes: Sequence[int], rows: NDArray[np.intp]
          ) -> NDArray[np.int64]:
    """Mixed-radix int64 keys of the level codes of ``rows``."""
    key = np.zeros(rows.size, dtype=np.int64)
    for term, size in zip(terms, sizes, strict=True):
        key *= size
        key += term.codes[rows]
    return key


@dataclass(frozen=True)
class Cells:
    """The rows' design in collapsed form: every row's design row is a function of its
    *cell*, the combination of its levels of all ``terms``; ``cell`` (int32 per row) and
    ``codes`` (cells x terms, the levels of each cell). A model's design is
    ``design(...)[cell]`` (cells x columns, ``[cell]`` never materialised)."""

    terms: tuple[Term, ...]
    cell: NDArray[np.int32]
    codes: NDArray[np.intp]

    @classmethod
    def build(cls, terms: Sequence[Term], rows: NDArray[np.intp]) -> Cells:
        """Cells of ``rows`` (mixed-radix keys of the level codes, then ``np.unique``)."""
        if not terms:
            return cls((), np.zeros(rows.size, dtype=np.int32), np.empty((1, 0), np.intp))
        sizes = [len(t.labels) for t in terms]
        if float(np.prod(sizes, dtype=np.float64)) < MAX_KEYS:
            # np.unique(key, return_inverse=True) a block of rows at a time (no n-row key,
            # sort or rank temporaries): the present keys, then each row's rank among them
            keys, cell = _ranked_blocks(terms, sizes, rows,
                                        float(np.prod(sizes, dtype=np.float64)))
            codes = np.empty((keys.size, len(terms)), dtype=np.intp)
            for t in range(len(terms) - 1, -1, -1):
                keys, codes[:, t] = np.divmod(keys, sizes[t])
        else:
            codes, cell = np.unique(np.stack([t.codes[rows] for t in terms], axis=1),
                                    axis=0, return_inverse=True)
        return cls(tuple(terms), cell.reshape(-1).astype(np.int32, copy=False), codes)

    def design(self, terms: Sequence[Term], override: tuple[str, int] | None = None
               ) -> NDArray[np.float64]:
        """The design of every cell for the model with ``terms`` (a subset of the cells'
        terms); ``override=(name, level)`` sets that covariate to the level."""
        names = [t.name for t in self.terms]
        codes = self.codes[:, [names.index(t.name) for t in terms]].copy()
        for j, term in enumerate(terms):
            if override and override[0] == term.name:
                codes[:, j] = override[1]
        return design_rows(codes, terms)


def _ranked_blocks(terms: Sequence[Term], sizes: Sequence[int], rows: NDArray[np.intp],
                   size: float) -> tuple[NDArray[np.int64], NDArray[np.int32]]:
    """``np.unique(key, return_inverse=True)`` of the keys of ``rows`` (:func:`_keys`, all in
    ``[0, size)``), :data:`KEY_ROWS` rows at a time, as int32."""
    ranges = [(a, min(rows.size, a + KEY_ROWS)) for a in range(0, rows.size, KEY_ROWS)]
    cell = np.empty(rows.size, np.int32)
    if size <= COUNT_KEYS:
        counts = np.zeros(int(size), dtype=np.int64)
        for a, b in ranges:
            counts += np.bincount(_keys(terms, sizes, rows[a:b]), minlength=int(size))
        present = np.flatnonzero(counts)
        rank = np.zeros(int(size), dtype=np.int32)
        rank[present] = np.arange(present.size)
        for a, b in ranges:
            cell[a:b] = rank[_keys(terms, sizes, rows[a:b])]
        return present.astype(np.int64), cell
    keys = np.unique(np.concatenate([np.unique(_keys(terms, sizes, rows[a:b]))
                                     for a, b in ranges] or [np.zeros(0, dtype=np.int64)]))
    for a, b in ranges:
        cell[a:b] = np.searchsorted(keys, _keys(terms, sizes, rows[a:b]))
    return keys, cell
