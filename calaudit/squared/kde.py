"""``h_kde`` (Gruber & Bach, eq. 25): Nadaraya-Watson with the Dirichlet kernel.

``g(x) = sum_j w_j k_b(x; x_j) o_j / sum_j w_j k_b(x; x_j)`` over the training fold
(``w_j = 1`` unweighted), ``k_b(x; x_j) = Dir(x; x_j / b + 1)`` (Popordanoska et al.
2022); a score ``x`` is embedded as ``(x, 1 - x)``. ``phi(x) = g(x) - x`` and
``h_kde(x, x') = <phi(x), phi(x')>``. In log space, ``log k_b(x; x_j) = (1/b) <x_j, log x>
- log B(x_j / b + 1)``, ``log 0`` clipped at the smallest normal double (the exact limit,
never a NaN); weights below ``e^-100`` of the largest dropped (``LOG_WEIGHT_FLOOR``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.special import gammaln

from calaudit.squared.fitting import EvalSet, row_tiles
from calaudit.squared.risk import mean_diagonal, pairwise_risk
from calaudit.squared.targets import Problem

_TINY = np.finfo(np.float64).tiny
#: Entries of one evaluation-by-training block: small enough to stay in cache while it
#: is reused for every bandwidth.
KDE_BLOCK_ENTRIES = 1 << 20
#: Weights below ``e^-100`` times the largest are dropped (set to 0) without calling
#: ``exp``: they change a fitted mean by less than ``n e^-100`` (absolute), far below
#: double precision, and at small bandwidths they are most of the matrix.
LOG_WEIGHT_FLOOR = -100.0


def on_simplex(points: NDArray[np.float64], simplex: bool) -> NDArray[np.float64]:
    """Probability vectors as they are; a score ``x`` as ``(x, 1 - x)``."""
    return points if simplex else np.hstack([points, 1.0 - points])


def log_normalisers(z_train: NDArray[np.float64], bandwidth: float) -> NDArray[np.float64]:
    """``log B(alpha_j) = sum_k lgamma(alpha_jk) - lgamma(sum_k alpha_jk)``,
    ``alpha_j = z_j / b + 1``."""
    alpha = z_train / bandwidth + 1.0
    return gammaln(alpha).sum(axis=1) - gammaln(alpha.sum(axis=1))


class KdePath:
    """``h_kde`` fitted on one training fold for every bandwidth of the grid."""

    def __init__(self, train: Problem, grid: tuple[float, ...]) -> None:
        self.simplex = train.simplex
        # group the training rows by their outcome (a class, or 0 / 1): the weighted sums
        # become per-group sums of contiguous columns
        values, group = np.unique(np.round(train.outcomes, 12), axis=0, return_inverse=True)
        order = np.argsort(group.reshape(-1), kind="stable")
        self.z_train = on_simplex(train.points, train.simplex)[order]
        self.row_weights = None if train.weights is None else train.weights.weights[order]
        self.values = values
        self.starts = np.searchsorted(group.reshape(-1)[order], np.arange(values.shape[0]))
        self.grid = grid
        self.normalisers = [log_normalisers(self.z_train, b) for b in grid]

    def features(self, points: NDArray[np.float64],
                 indices: list[int]) -> list[NDArray[np.float64]]:
        """``phi(x_i)`` for every evaluation row, one array per grid index."""
        log_z = np.log(np.maximum(on_simplex(points, self.simplex), _TINY))
        out = [np.empty((points.shape[0], self.values.shape[1])) for _ in indices]
        n_train = self.z_train.shape[0]
        for rows in row_tiles(points.shape[0], n_train, KDE_BLOCK_ENTRIES):
            base = log_z[rows] @ self.z_train.T
            logits = np.empty_like(base)
            keep = np.empty(base.shape, dtype=bool)
            for slot, index in enumerate(indices):
                np.multiply(base, 1.0 / self.grid[index], out=logits)
                logits -= self.normalisers[index]
                logits -= logits.max(axis=1, keepdims=True)
                np.greater(logits, LOG_WEIGHT_FLOOR, out=keep)
                np.exp(logits, out=logits, where=keep)
                np.maximum(logits, 0.0, out=logits)
                if self.row_weights is not None:
                    logits *= self.row_weights
                groups = np.add.reduceat(logits, self.starts, axis=1)
                fitted = (groups @ self.values) / groups.sum(axis=1, keepdims=True)
                out[slot][rows] = fitted - points[rows]
        return out

    def risks(self, evalset: EvalSet) -> NDArray[np.float64]:
        problem = evalset.problem
        phis = self.features(problem.points, list(range(len(self.grid))))
        return np.array([pairwise_risk(problem.residuals, phi, weights=problem.weights)
                         for phi in phis])

    def estimate(self, evalset: EvalSet, index: int) -> float:
        return mean_diagonal(self.features(evalset.problem.points, [index])[0],
                             weights=evalset.problem.weights)
