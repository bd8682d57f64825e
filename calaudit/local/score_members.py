"""Score statistics of the logistic recalibration model: the parametric members of the
local aggregate test.

Model (binary): ``logit P(y = 1 | p, x) = logit p + beta_0 + h(x)^T beta`` with ``h(x)``
the 0/1 indicators of the covariate levels of the group table. A member tests ``beta = 0``
with the intercept ``beta_0`` as a nuisance. With ``r = y - p`` and ``W = diag(p (1 - p))``
the score of ``(beta_0, beta)`` at 0 is ``U = H^T r``, its information ``I = H^T W H``, and
Rao's score statistic for ``beta`` given ``beta_0`` is

    ``S = U^T I^+ U - (1^T r)^2 / (1^T W 1)``,   asymptotically chi-square with
    ``rank(I) - 1`` degrees of freedom

(Rao 1948; Cox 1958's recalibration model with covariate terms). Multi-class: the vector
residual ``r_i = e_{y_i} - p_i``, ``S = sum_l U_l^T C_l^+ U_l - U^T C^+ U`` with
``C_l = sum_{i in l} (diag p_i - p_i p_i^T)`` and ``U``, ``C`` their totals (``m - 1``
degrees of freedom per level, less ``m - 1``), and the joint member on the top-label
residual ``1{y = argmax p} - max p``.

Members: one per covariate and, with two or more covariates, one for all together. Each is
a function of the level sums ``H^T r`` only, so :class:`ScoreMembers` evaluates the
statistics of many redrawn residual columns at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

#: Entries of the per-row outer products summed at a time (multi-class information).
CHUNK_ENTRIES = 4_000_000
#: Relative size below which an eigenvalue of the information matrix counts as zero.
RANK_TOLERANCE = 1e-10


def level_matrix(codes: Sequence[NDArray[np.integer]], sizes: Sequence[int]
                 ) -> sparse.csr_matrix:
    """``H`` (n x sum(sizes)): row ``i`` has a 1 in the column of its level of every
    covariate (covariate ``c``'s levels at columns ``offset_c + code``)."""
    n = len(codes[0]) if codes else 0
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    columns = np.column_stack([np.asarray(c, dtype=np.int64) + offsets[k]
                               for k, c in enumerate(codes)]) if codes else np.zeros((n, 0))
    rows = np.repeat(np.arange(n), len(codes))
    data = np.ones(rows.size)
    return sparse.csr_matrix((data, (rows, columns.ravel())), shape=(n, int(offsets[-1])))


def pseudo_inverse(matrix: NDArray[np.float64]) -> tuple[NDArray[np.float64], int]:
    """Moore-Penrose inverse of a symmetric positive semi-definite matrix and its rank
    (eigenvalues below :data:`RANK_TOLERANCE` times the largest count as zero)."""
    values, vectors = np.linalg.eigh(matrix)
    top = float(values.max()) if values.size else 0.0
    keep = values > RANK_TOLERANCE * max(top, 0.0)
    if not keep.any():
        return np.zeros_like(matrix), 0
    return (vectors[:, keep] / values[keep]) @ vectors[:, keep].T, int(keep.sum())


@dataclass(frozen=True)
class Member:
    """One score statistic: its name, the level columns it uses, its information's
    pseudo-inverse (per class block for vector residuals), the pseudo-inverse of the
    intercept's information (``overall``), the columns whose sums add up to the total
    residual and its degrees of freedom."""

    name: str
    columns: NDArray[np.intp]
    inverse: NDArray[np.float64]
    df: int
    view: str
    overall: NDArray[np.float64]
    total_columns: NDArray[np.intp]


@dataclass(frozen=True)
class ScoreMembers:
    """The parametric members of the local aggregate test (module docstring). ``levels`` is
    ``H`` (n x L); ``classes`` is 1 (binary residual ``y - p_1``) or the number of classes
    ``m``; ``top`` the columns of the top-label residual (multi-class, the joint member)."""

    levels: sparse.csr_matrix | None
    members: tuple[Member, ...]
    top: NDArray[np.intp] | None

    @classmethod
    def of_levels(cls, levels: Sequence[Any], proba: NDArray[np.float64],
                  variance: NDArray[np.float64] | None = None) -> ScoreMembers:
        """:meth:`build` on the group table's covariate ``levels``
        (:class:`calaudit.local.groups.Levels`: ``name``, ``codes``, ``labels``)."""
        return cls.build([lv.name for lv in levels], [lv.codes for lv in levels],
                         [len(lv.labels) for lv in levels], proba, variance)

    @classmethod
    def build(cls, names: Sequence[str], codes: Sequence[NDArray[np.integer]],
              sizes: Sequence[int], proba: NDArray[np.float64],
              variance: NDArray[np.float64] | None = None) -> ScoreMembers:
        """Members of covariates ``names`` with per-row level ``codes`` (``sizes`` levels
        each); ``proba`` is ``p_1`` (n,) for a binary model or the (n, m) probabilities.
        ``variance`` (weighted rows, :mod:`calaudit.local.weighted_local`): binary, the null
        variance of each row's weighted residual sum ``R_i`` (instead of ``p (1 - p)``);
        multi-class, the factor ``a_i`` of its covariance ``a_i (diag p_i - p_i p_i^T)``."""
        h = level_matrix(codes, sizes)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
        members: list[Member] = []
        top = None
        first = np.arange(offsets[0], offsets[1]) if len(names) else np.arange(0)
        if proba.ndim == 1:
            weight = proba * (1.0 - proba) if variance is None else variance
            info = (h.T @ sparse.diags(weight) @ h).toarray()
            overall = _scalar_inverse(float(weight.sum()))
            for k, name in enumerate(names):
                cols = np.arange(offsets[k], offsets[k + 1])
                members.append(_diagonal_member(name, cols, np.diag(info)[cols], overall))
            if len(names) > 1:
                members.append(_joint_member(info, overall, first, "binary"))
            return cls(h, tuple(members), None)
        m = proba.shape[1]
        scale = np.ones(proba.shape[0]) if variance is None else variance
        total = np.diag((scale[:, None] * proba).sum(axis=0)) - outer_sums(
            sparse.csr_matrix(scale[:, None]), proba, m)[0]
        overall, total_rank = pseudo_inverse(total)
        scaled = h if variance is None else sparse.csr_matrix(sparse.diags(scale) @ h)
        for k, name in enumerate(names):
            cols = np.arange(offsets[k], offsets[k + 1])
            members.append(_vector_member(name, cols, scaled[:, cols], proba, m, overall,
                                          total_rank))
        if len(names) > 1:
            top = np.argmax(proba, axis=1)
            confidence = proba[np.arange(proba.shape[0]), top]
            weight = scale * confidence * (1.0 - confidence)
            info = (h.T @ sparse.diags(weight) @ h).toarray()
            members.append(_joint_member(info, _scalar_inverse(float(weight.sum())), first,
                                         "top-label"))
        return cls(h, tuple(members), top)

    @classmethod
    def from_sums(cls, names: Sequence[str], sizes: Sequence[int], sums: dict[str, Any],
                  labels: int) -> ScoreMembers:
        """The members of :meth:`build` (unweighted rows) from the rows' sums
        (:func:`calaudit.local.score_rows.score_partial`, added over the rows; ``labels``:
        1 for a binary view, else the classes), without ``H`` (``levels`` and ``top``
        are None: the level sums of residuals come from the rows' reductions)."""
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
        first = np.arange(offsets[0], offsets[1]) if len(names) else np.arange(0)
        members: list[Member] = []
        if labels == 1:
            info = sums["info"]
            overall = _scalar_inverse(float(sums["overall"][0]))
            for k, name in enumerate(names):
                cols = np.arange(offsets[k], offsets[k + 1])
                members.append(_diagonal_member(name, cols, np.diag(info)[cols], overall))
            if len(names) > 1:
                members.append(_joint_member(info, overall, first, "binary"))
            return cls(None, tuple(members), None)
        overall, total_rank = pseudo_inverse(np.diag(sums["psum"]) - sums["outer_total"])
        for k, name in enumerate(names):
            cols = np.arange(offsets[k], offsets[k + 1])
            members.append(_vector_member_of(name, cols, sums["diag"][cols],
                                             sums["outer"][cols], overall, total_rank))
        if len(names) > 1:
            members.append(_joint_member(
                sums["top_info"], _scalar_inverse(float(sums["top_weight"][0])), first,
                "top-label"))
        return cls(None, tuple(members), None)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(member.name for member in self.members)

    def level_sums(self, residuals: NDArray[np.float64]) -> NDArray[np.float64]:
        """``H^T R`` of residual columns: (L, B) for (n, B) scalar columns, (L, m, B) for
        (n, m, B) vector columns."""
        if residuals.ndim == 2:
            return np.asarray(self.levels.T @ residuals)
        n, m, b = residuals.shape
        return np.asarray(self.levels.T @ residuals.reshape(n, m * b)).reshape(-1, m, b)

    def top_sums(self, residuals: NDArray[np.float64]) -> NDArray[np.float64] | None:
        """``H^T`` of the top-label residuals ``(e_y - p)_{argmax p}`` of (n, m, B) vector
        columns ((L, B); ``None`` for a binary model or without a joint member)."""
        if self.top is None:
            return None
        picked = residuals[np.arange(residuals.shape[0]), self.top, :]
        return np.asarray(self.levels.T @ picked)

    def statistics(self, sums: NDArray[np.float64], top: NDArray[np.float64] | None = None
                   ) -> NDArray[np.float64]:
        """Every member's ``S`` of every column: (members, B) from :meth:`level_sums`
        (and :meth:`top_sums` for a multi-class joint member)."""
        out = np.empty((len(self.members), sums.shape[-1]))
        for k, member in enumerate(self.members):
            source = top if member.view == "top-label" else sums
            u = source[member.columns]
            total = source[member.total_columns].sum(axis=0)
            if member.view == "vector":  # block-diagonal over the levels
                full = np.einsum("lib,lij,ljb->b", u, member.inverse, u)
                out[k] = full - np.einsum("ib,ij,jb->b", total, member.overall, total)
            else:
                full = np.einsum("lb,lk,kb->b", u, member.inverse, u)
                out[k] = full - member.overall[0, 0] * total * total
        return np.maximum(out, 0.0)

    def degrees_of_freedom(self) -> NDArray[np.float64]:
        return np.array([member.df for member in self.members], dtype=np.float64)


def _scalar_inverse(information: float) -> NDArray[np.float64]:
    return np.array([[1.0 / information if information > 0 else 0.0]])


def _diagonal_member(name: str, columns: NDArray[np.intp], information: NDArray[np.float64],
                     overall: NDArray[np.float64]) -> Member:
    """One covariate, binary: the levels partition the rows, so ``I`` is diagonal."""
    positive = information > RANK_TOLERANCE * max(float(information.max(initial=0.0)), 0.0)
    inverse = np.diag(np.where(positive, 1.0 / np.where(positive, information, 1.0), 0.0))
    return Member(name, columns, inverse, max(int(positive.sum()) - 1, 0), "binary",
                  overall, columns)


def _joint_member(information: NDArray[np.float64], overall: NDArray[np.float64],
                  first: NDArray[np.intp], view: str) -> Member:
    """Every covariate's levels together (binary or top-label residual)."""
    inverse, rank = pseudo_inverse(information)
    return Member("all covariates", np.arange(information.shape[0]), inverse,
                  max(rank - 1, 0), view, overall, first)


def outer_sums(h: sparse.csr_matrix, proba: NDArray[np.float64], m: int
                ) -> NDArray[np.float64]:
    """``sum_{i in l} p_i p_i^T`` per column ``l`` of ``h``, a row chunk at a time."""
    outer = np.zeros((h.shape[1], m * m))
    step = max(1, CHUNK_ENTRIES // (m * m))
    for start in range(0, proba.shape[0], step):
        chunk = proba[start:start + step]
        outer += h[start:start + step].T @ np.einsum("ij,ik->ijk", chunk, chunk
                                                     ).reshape(-1, m * m)
    return outer.reshape(-1, m, m)


def _vector_member(name: str, columns: NDArray[np.intp], h: sparse.csr_matrix,
                   proba: NDArray[np.float64], m: int, overall: NDArray[np.float64],
                   overall_rank: int) -> Member:
    """One covariate, multi-class: per level ``C_l = sum_i diag(p_i) - p_i p_i^T``."""
    return _vector_member_of(name, columns, np.asarray(h.T @ proba), outer_sums(h, proba, m),
                             overall, overall_rank)


def _vector_member_of(name: str, columns: NDArray[np.intp], diag: NDArray[np.float64],
                      outer: NDArray[np.float64], overall: NDArray[np.float64],
                      overall_rank: int) -> Member:
    """:func:`_vector_member` from its levels' sums ``diag`` (levels, m: ``sum_i p_ik``)
    and ``outer`` (levels, m, m: ``sum_i p_i p_i^T``)."""
    inverses = np.empty_like(outer)
    df = 0
    for level in range(outer.shape[0]):
        inverses[level], rank = pseudo_inverse(np.diag(diag[level]) - outer[level])
        df += rank
    return Member(name, columns, inverses, max(df - overall_rank, 0), "vector", overall,
                  columns)
