"""The score members' rows and sums, reduced range by range (the random-feature path of
the local aggregate test, :mod:`calaudit.local.aggregate_test`).

A row source gives, for a range, the columns the aggregate reads: ``proba`` (the view's
probability columns: binary ``p_1`` as (n, 1), multi-class the (n, m) rows, one class
one-vs-rest ``p_c`` as (n, 1)), ``r`` (its residual: ``y - p_1``, ``e_y - p``,
``1{y = c} - p_c``), ``codes`` (the level columns of ``H``, each covariate's codes
shifted by the levels of the covariates before it, int32) and ``top`` (``argmax p``).
In memory: :func:`memory_rows`; a dataset whose tasks read their own rows:
:class:`ScoreRows`, each column computed in the task row by row from the range's ``y``,
``proba`` and covariates (a numeric covariate's bands from its level's ``edges``,
:func:`calaudit.local.groups.band_codes`; a categorical one's codes), the in-memory
columns' bits.

:func:`score_pass` is one reduction of :func:`score_partial`: per range, the sums
:class:`calaudit.local.score_members.ScoreMembers` is built from (the information
matrices ``H^T W H``, the per-level sums of ``p`` and ``p p^T``, the intercept's
information), the observed level sums ``H^T r`` and the expected ``H^T p``, each computed
on the range's rows as the in-memory members compute them on every row, added in range
order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from calaudit import scale
from calaudit.local.groups import band_codes
from calaudit.local.klce import residuals
from calaudit.local.levels import level_reads
from calaudit.local.score_members import ScoreMembers, outer_sums
from calaudit.scale import ArrayRows, DerivedRows


def offsets_of(sizes: Sequence[int]) -> NDArray[np.int64]:
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def level_codes(codes: Sequence[NDArray[np.integer]], sizes: Sequence[int]
                ) -> tuple[NDArray[np.int32], int]:
    """Per-row level columns of ``H`` ((n, d), covariate ``c``'s codes shifted by the
    levels of the covariates before it) and the number of level columns."""
    offsets = offsets_of(sizes)
    out = np.empty((len(codes[0]), len(codes)), dtype=np.int32)
    for k, column in enumerate(codes):
        out[:, k] = np.asarray(column, dtype=np.int64) + offsets[k]
    return out, int(offsets[-1])


def memory_rows(r: NDArray[np.float64], proba: NDArray[np.float64],
                codes: NDArray[np.int32]) -> ArrayRows:
    """The columns of the module docstring of rows held in memory (``proba``: ``p`` (n,)
    of a binary view or the (n, m) rows; ``codes``: :func:`level_codes`)."""
    p = np.asarray(proba, dtype=np.float64)
    columns = {"proba": p.reshape(p.shape[0], -1), "r": np.asarray(r, dtype=np.float64),
               "codes": codes}
    if p.ndim == 2:
        columns["top"] = np.argmax(p, axis=1)
    return ArrayRows(columns)


@dataclass(frozen=True)
class ScoreRows(DerivedRows):
    """The columns of the module docstring computed in each task from a dataset's rows
    (``source``: ``y``, ``proba`` and the covariates' ``columns``); ``view``: ``None``
    (binary ``p_1`` or the multi-class rows) or a class (one-vs-rest)."""

    source: Any
    columns: tuple[str, ...]
    edges: tuple[NDArray[np.float64] | None, ...]
    sizes: tuple[int, ...]
    view: int | None = None

    def read(self, start: int, stop: int, names: Any) -> dict[str, NDArray]:
        part = self.source.read(start, stop, ["y", "proba", *self.columns])
        y, proba = part["y"], part["proba"]
        binary = proba.shape[1] == 2
        out: dict[str, Any] = {}
        if self.view is not None:
            p = proba[:, self.view].copy()
            out["r"] = lambda: (y == self.view).astype(np.float64) - p
        else:
            p = proba[:, 1].copy() if binary else proba
            out["r"] = lambda: residuals(y, proba)
        out["proba"] = lambda: p.reshape(p.shape[0], -1)
        out["top"] = lambda: np.argmax(proba, axis=1)
        out["codes"] = lambda: level_codes(
            [np.asarray(part[column], dtype=np.int32) if edges is None
             else band_codes(np.asarray(part[column], dtype=np.float64), edges)
             for column, edges in zip(self.columns, self.edges, strict=True)],
            self.sizes)[0]
        return {name: out[name]() for name in names}


def score_rows(data: Any, levels: Sequence[Any], view: int | None = None) -> ScoreRows | None:
    """The :class:`ScoreRows` of ``data`` when its rows are read by their tasks (else
    None: the rows are in memory)."""
    source = getattr(data, "rows", None)
    if not getattr(source, "reads_own_rows", False):
        return None
    return ScoreRows(source, *level_reads(data, levels),
                     tuple(len(lv.labels) for lv in levels), view)


def range_matrix(codes: NDArray[np.int32], n_levels: int) -> sparse.csr_matrix:
    """``H`` of the rows whose level columns are ``codes`` (as
    :func:`calaudit.local.score_members.level_matrix`)."""
    n, d = codes.shape
    return sparse.csr_matrix((np.ones(n * d), (np.repeat(np.arange(n), d),
                                               codes.astype(np.int64).ravel())),
                             shape=(n, n_levels))


def _information(h: sparse.csr_matrix, weight: NDArray[np.float64]) -> NDArray[np.float64]:
    return (h.T @ sparse.diags(weight) @ h).toarray()


def score_partial(start: int, stop: int, *, rows: Any, n_levels: int, labels: int,
                  joint: bool) -> dict[str, NDArray]:
    """The sums of the rows ``[start, stop)`` (module docstring): binary (``labels = 1``)
    ``info`` (L, L), ``overall`` (1,), ``observed`` (L, 1), ``expected`` (L, 1);
    multi-class ``psum`` (m,), ``outer_total`` (m, m), ``diag`` (L, m) (also the
    expected sums), ``outer`` (L, m, m), ``observed`` (L, m, 1) and, with ``joint``,
    ``top_info`` (L, L), ``top_weight`` (1,), ``top_observed`` (L, 1), ``top_expected``
    (L,)."""
    part = rows.read(start, stop, ["proba", "r", "codes"] + (
        ["top"] if joint and labels > 1 else []))
    h = range_matrix(part["codes"], n_levels)
    proba, r = part["proba"], part["r"]
    n = proba.shape[0]
    if labels == 1:
        p = proba[:, 0]
        weight = p * (1.0 - p)
        return {"info": _information(h, weight), "overall": np.array([weight.sum()]),
                "observed": np.asarray(h.T @ r.reshape(n, 1)),
                "expected": np.asarray(h.T @ proba)}
    m = labels
    ones = np.ones(n)
    out = {"psum": (ones[:, None] * proba).sum(axis=0),
           "outer_total": outer_sums(sparse.csr_matrix(ones[:, None]), proba, m)[0],
           "diag": np.asarray(h.T @ proba), "outer": outer_sums(h, proba, m),
           "observed": np.asarray(h.T @ r.reshape(n, m)).reshape(-1, m, 1)}
    if joint:
        top = part["top"]
        confidence = proba[np.arange(n), top]
        weight = ones * confidence * (1.0 - confidence)
        out.update(top_info=_information(h, weight), top_weight=np.array([weight.sum()]),
                   top_observed=np.asarray(h.T @ r[np.arange(n), top].reshape(n, 1)),
                   top_expected=np.asarray(h.T @ confidence))
    return out


@dataclass(frozen=True)
class ScorePass:
    """The score members and the level sums of the observed residuals (``observed``,
    ``top_observed``) and of the predictions (``expected``, ``top_expected``) of a
    view."""

    members: ScoreMembers
    observed: NDArray[np.float64]
    expected: NDArray[np.float64]
    top_observed: NDArray[np.float64] | None
    top_expected: NDArray[np.float64] | None

    @property
    def joint_top(self) -> bool:
        return self.top_observed is not None


def score_pass(rows: Any, names: Sequence[str], sizes: Sequence[int], labels: int
               ) -> ScorePass:
    """The :class:`ScorePass` of the row source ``rows`` (``labels``: 1 for a binary or
    one-vs-rest view, else the number of classes), from one reduction of
    :func:`score_partial` over :func:`calaudit.scale.task_ranges`."""
    n_levels = int(offsets_of(sizes)[-1])
    joint = len(names) > 1 and labels > 1
    sums = scale.map_sum(score_partial, scale.task_ranges(rows.n),
                         {"rows": rows, "n_levels": n_levels, "labels": labels,
                          "joint": joint})
    members = ScoreMembers.from_sums(names, sizes, sums, labels)
    if labels == 1:
        return ScorePass(members, sums["observed"], sums["expected"], None, None)
    return ScorePass(members, sums["observed"], sums["diag"],
                     sums.get("top_observed"), sums.get("top_expected"))


__all__ = ["ScorePass", "ScoreRows", "level_codes", "memory_rows", "range_matrix",
           "score_partial", "score_pass", "score_rows"]
