"""The calibration estimation risk, eq. 20 of Gruber & Bach, without an n x n matrix.

``R(h) = (n(n-1))^-1 sum_{i != j} (<r_i, r_j> - h(x_i, x_j))^2`` (unbiased for eq. 17).
Every estimator here is factorised, ``h(x, x') = phi(x)^T S phi(x')`` (``S`` identity
unless given; KKR: :mod:`calaudit.squared.kkr`). With ``T = R R^T``, ``H = Phi S Phi^T``,
``W = Phi^T R``, ``P = Phi^T Phi``: ``sum T_ij^2 = ||R^T R||_F^2``, ``sum T_ij H_ij =
tr(W^T S W)``, ``sum H_ij^2 = tr(S P S P)``, diagonals removed with ``T_ii = ||r_i||^2`` and
``H_ii = phi_i^T S phi_i``. Cost O(n q^2 + q^3).

Weighted rows (:class:`RowWeights`, docs/weights.md): row ``i`` is ``t_i`` units of weight
``a_i = w_i / t_i``; the U-statistic over pairs of distinct units is

    R_w(h) = (sum_{i,j} w_i w_j f_ij - sum_i w_i a_i f_ii) / (W^2 - sum_i w_i a_i),
    f_ij = (<r_i, r_j> - h(x_i, x_j))^2,  W = sum_i w_i,

computed as above with ``sqrt(w_i) r_i`` and ``sqrt(w_i) phi_i``; eq. 21's estimate is
``sum_i w_i h(x_i, x_i) / W``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class RowWeights:
    """Row weights ``w`` and the units ``t`` each row stands for (module docstring)."""

    weights: NDArray[np.float64]
    units: NDArray[np.float64]

    def take(self, rows: NDArray[np.intp]) -> RowWeights:
        return RowWeights(self.weights[rows], self.units[rows])

    @property
    def total(self) -> float:
        """``W = sum_i w_i``."""
        return float(self.weights.sum())

    @property
    def own_pairs(self) -> NDArray[np.float64]:
        """``w_i a_i``: the weight of the pairs of a unit with itself in row ``i``."""
        safe = np.where(self.units > 0, self.units, 1.0)
        return np.where(self.units > 0, self.weights * self.weights / safe, 0.0)

    @property
    def effective_size(self) -> float:
        """``W^2 / sum_i w_i a_i``: ``W`` for frequency weights, Kish's size for design
        weights, ``n`` unweighted."""
        return self.total ** 2 / float(self.own_pairs.sum())


class RiskTerms:
    """The parts of eq. 20 that do not depend on ``S`` (one evaluation set)."""

    def __init__(self, residuals: NDArray[np.float64], features: NDArray[np.float64],
                 weights: RowWeights | None = None) -> None:
        r = np.asarray(residuals, dtype=np.float64)
        r = r[:, None] if r.ndim == 1 else r
        phi = np.asarray(features, dtype=np.float64)
        phi = phi[:, None] if phi.ndim == 1 else phi
        if r.shape[0] < 2 or r.shape[0] != phi.shape[0]:
            raise ValueError("the risk needs at least two rows and one feature row per row")
        self.n = r.shape[0]
        self.features = phi
        self.t_diag = np.einsum("ij,ij->i", r, r)
        if weights is None:
            self.own, self.pairs = None, float(self.n * (self.n - 1))
            self.t_offdiag = float(np.sum((r.T @ r) ** 2) - self.t_diag @ self.t_diag)
        else:
            root = np.sqrt(weights.weights)[:, None]
            self.own = weights.own_pairs
            self.pairs = weights.total ** 2 - float(self.own.sum())
            r, phi = r * root, phi * root
            self.t_offdiag = float(np.sum((r.T @ r) ** 2) - (self.own * self.t_diag) @ self.t_diag)
        self.cross = phi.T @ r
        self.gram = phi.T @ phi

    def diagonal(self, metric: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
        """``H_ii = phi_i^T S phi_i``."""
        left = self.features if metric is None else self.features @ metric
        return np.einsum("ij,ij->i", left, self.features)

    def risk(self, metric: NDArray[np.float64] | None = None) -> float:
        """Eq. 20 for ``h(x, x') = phi(x)^T S phi(x')`` with ``S = metric``."""
        if metric is None:
            th_all = float(np.sum(self.cross * self.cross))
            hh_all = float(np.sum(self.gram * self.gram))
        else:
            th_all = float(np.sum(self.cross * (metric @ self.cross)))
            sp = metric @ self.gram
            hh_all = float(np.sum(sp * sp.T))
        h_diag = self.diagonal(metric)
        if self.own is None:
            th = th_all - float(self.t_diag @ h_diag)
            hh = hh_all - float(h_diag @ h_diag)
            return (self.t_offdiag - 2.0 * th + hh) / (self.n * (self.n - 1))
        own_h = self.own * h_diag
        th = th_all - float(self.t_diag @ own_h)
        hh = hh_all - float(h_diag @ own_h)
        return (self.t_offdiag - 2.0 * th + hh) / self.pairs


def pairwise_risk(residuals: NDArray[np.float64], features: NDArray[np.float64],
                  metric: NDArray[np.float64] | None = None,
                  weights: RowWeights | None = None) -> float:
    """Eq. 20 for ``h(x, x') = phi(x)^T S phi(x')``; ``features`` holds ``phi(x_i)``;
    ``weights``: the weighted U-statistic ``R_w`` of the module docstring."""
    return RiskTerms(residuals, features, weights).risk(metric)


def mean_diagonal(features: NDArray[np.float64],
                  metric: NDArray[np.float64] | None = None,
                  weights: RowWeights | None = None) -> float:
    """``n^-1 sum_i h(x_i, x_i)``: the calibration estimate of eq. 21 on one set
    (``sum_i w_i h(x_i, x_i) / W`` with ``weights``)."""
    phi = np.asarray(features, dtype=np.float64)
    phi = phi[:, None] if phi.ndim == 1 else phi
    left = phi if metric is None else phi @ metric
    diagonal = np.einsum("ij,ij->i", left, phi)
    if weights is None:
        return float(np.mean(diagonal))
    return float(weights.weights @ diagonal / weights.total)
