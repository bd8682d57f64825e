"""Score statistics of the logistic recalibration model: the parametric members of the
local aggregate test.

Model (binary): ``logit P(y = 1 | p, x) = logit p + h(x)^T beta`` with ``h(x)`` the 0/1
indicators of the covariate levels of the group table (categories; ``n_bands`` quantile
bands of a numeric covariate). Under the null ``beta = 0`` the score is
``U = H^T r`` (``r = y - p``) with Fisher information ``I = H^T W H``,
``W = diag(p (1 - p))``, and Rao's score statistic

    ``S = U^T I^+ U``,   asymptotically chi-square with ``rank(I)`` degrees of freedom

(Rao 1948; the score test of the recalibration model of Cox 1958 with covariate terms).
It depends on ``H`` only through its column space, so treatment and indicator coding
give the same ``S``. For one covariate the levels partition the rows, ``I`` is diagonal
and ``S = sum_l (sum_{i in l} r_i)^2 / sum_{i in l} p_i (1 - p_i)``: the chi-square of
the group residual sums. Multi-class: the vector residual ``r_i = e_{y_i} - p_i`` with
``Var r_i = diag(p_i) - p_i p_i^T``, so per level ``S_l = U_l^T C_l^+ U_l`` with
``C_l = sum_{i in l} (diag p_i - p_i p_i^T)`` (the multinomial score test; ``m - 1``
degrees of freedom per level), and the joint member on the top-label residual
``1{y = argmax p} - max p``.

Members: one per covariate (its levels alone) and, with two or more covariates, one for
all covariates together. Each is a function of the level sums ``H^T r`` only, so the
label redraws of the local test give every member's null from ``H^T R*`` (one sparse
product per batch of redraws): :class:`ScoreMembers` holds the fixed parts (the
information matrices) and evaluates the statistics of many residual columns at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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
    pseudo-inverse (in the coordinates of those columns, per class block for vector
    residuals) and its degrees of freedom."""

    name: str
    columns: NDArray[np.intp]
    inverse: NDArray[np.float64]
    df: int
    view: str


@dataclass(frozen=True)
class ScoreMembers:
    """The parametric members of the local aggregate test (module docstring).

    ``levels`` is ``H`` (n x L); ``classes`` is 1 (binary residual ``y - p_1``) or the
    number of classes ``m`` (vector residuals, (n, m)); ``top`` the columns of the
    top-label residual (multi-class: ``argmax p``, for the joint member).
    """

    levels: sparse.csr_matrix
    members: tuple[Member, ...]
    top: NDArray[np.intp] | None

    @classmethod
    def build(cls, names: Sequence[str], codes: Sequence[NDArray[np.integer]],
              sizes: Sequence[int], proba: NDArray[np.float64]) -> ScoreMembers:
        """Members of covariates ``names`` with per-row level ``codes`` (``sizes`` levels
        each); ``proba`` is ``p_1`` (n,) for a binary model or the (n, m) probabilities."""
        h = level_matrix(codes, sizes)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
        members: list[Member] = []
        top = None
        if proba.ndim == 1:
            weight = proba * (1.0 - proba)
            info = (h.T @ sparse.diags(weight) @ h).toarray()
            for k, name in enumerate(names):
                cols = np.arange(offsets[k], offsets[k + 1])
                members.append(_diagonal_member(name, cols, np.diag(info)[cols]))
            if len(names) > 1:
                inverse, rank = pseudo_inverse(info)
                members.append(Member("all covariates", np.arange(offsets[-1]), inverse,
                                      rank, "binary"))
            return cls(h, tuple(members), None)
        m = proba.shape[1]
        for k, name in enumerate(names):
            cols = np.arange(offsets[k], offsets[k + 1])
            members.append(_vector_member(name, cols, h[:, cols], proba, m))
        if len(names) > 1:
            top = np.argmax(proba, axis=1)
            confidence = proba[np.arange(proba.shape[0]), top]
            weight = confidence * (1.0 - confidence)
            info = (h.T @ sparse.diags(weight) @ h).toarray()
            inverse, rank = pseudo_inverse(info)
            members.append(Member("all covariates", np.arange(offsets[-1]), inverse, rank,
                                  "top-label"))
        return cls(h, tuple(members), top)

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
            if member.view == "top-label":
                u = top[member.columns]
                out[k] = np.einsum("lb,lk,kb->b", u, member.inverse, u)
            elif member.view == "binary":
                u = sums[member.columns]
                out[k] = np.einsum("lb,lk,kb->b", u, member.inverse, u)
            else:  # vector: block-diagonal over the levels, (levels, m, m) inverses
                u = sums[member.columns]
                out[k] = np.einsum("lib,lij,ljb->b", u, member.inverse, u)
        return out

    def degrees_of_freedom(self) -> NDArray[np.float64]:
        return np.array([member.df for member in self.members], dtype=np.float64)


def _diagonal_member(name: str, columns: NDArray[np.intp], information: NDArray[np.float64]
                     ) -> Member:
    """One covariate, binary: the levels partition the rows, so ``I`` is diagonal."""
    positive = information > RANK_TOLERANCE * max(float(information.max(initial=0.0)), 0.0)
    inverse = np.diag(np.where(positive, 1.0 / np.where(positive, information, 1.0), 0.0))
    return Member(name, columns, inverse, int(positive.sum()), "binary")


def _vector_member(name: str, columns: NDArray[np.intp], h: sparse.csr_matrix,
                   proba: NDArray[np.float64], m: int) -> Member:
    """One covariate, multi-class: per level ``C_l = sum_i diag(p_i) - p_i p_i^T``."""
    diag = np.asarray(h.T @ proba)  # (levels, m): sum_i p_ik
    outer = np.zeros((h.shape[1], m * m))
    step = max(1, CHUNK_ENTRIES // (m * m))
    for start in range(0, proba.shape[0], step):  # sum_i p_i p_i^T, a row chunk at a time
        chunk = proba[start:start + step]
        outer += h[start:start + step].T @ np.einsum("ij,ik->ijk", chunk, chunk
                                                     ).reshape(-1, m * m)
    outer = outer.reshape(-1, m, m)
    inverses = np.empty_like(outer)
    df = 0
    for level in range(outer.shape[0]):
        inverses[level], rank = pseudo_inverse(np.diag(diag[level]) - outer[level])
        df += rank
    return Member(name, columns, inverses, df, "vector")
