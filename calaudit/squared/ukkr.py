"""``h_ukkr`` (Gruber & Bach, eq. 32): two-step kernel ridge regression.

A kernel ridge regression of the residuals on the inputs, ``phi(x) = R^T (K + c I)^-1
k(x)`` with ``c = lambda n``, plugged into the inner product:
``h_ukkr(x, x') = <phi(x), phi(x')>``. With the (possibly truncated) spectrum
``K ~ U diag(s) U^T`` of :class:`calaudit.squared.kkr.KernelFold`,

    (K + c I)^-1 = U diag(1 / (s + c)) U^T + (I - U U^T) / c,

so ``phi(x) = G^T (a / (s + c)) + w / c`` with ``a = U^T k(x)``, ``G = U^T R`` and
``w = R^T k(x) - G^T a``: O(n' r q) per ridge constant once the projections are known.

Weighted rows: ``sum_j w_j ||r_j - phi(x_j)||^2 + c ||phi||^2`` with ``c = lambda W``, i.e.
``phi(x) = R^T W^1/2 (K_w + c I)^-1 W^1/2 k(x)``, the same formula on the spectrum of
``K_w = W^1/2 K W^1/2``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calaudit.squared.fitting import EvalSet, Settings
from calaudit.squared.grids import regularisation
from calaudit.squared.kkr import KernelFold
from calaudit.squared.risk import mean_diagonal, pairwise_risk


class UkkrPath:
    """``h_ukkr`` fitted on one training fold for every ridge scale of the grid."""

    def __init__(self, fold: KernelFold, grid: tuple[float, ...], settings: Settings) -> None:
        self.fold = fold
        self.grid = grid
        self.ridges = [regularisation("ukkr", s, fold.size, settings.ukkr_lambda_exponent,
                                      fold.total) for s in grid]

    def features(self, evalset: EvalSet, index: int) -> NDArray[np.float64]:
        """``phi(x_i)`` for every row of ``evalset``."""
        a, w = self.fold.projections(evalset)
        c = self.ridges[index]
        return (a / (self.fold.values + c)) @ self.fold.coeffs + w / c

    def risks(self, evalset: EvalSet) -> NDArray[np.float64]:
        problem = evalset.problem
        return np.array([pairwise_risk(problem.residuals, self.features(evalset, i),
                                       weights=problem.weights)
                         for i in range(len(self.grid))])

    def estimate(self, evalset: EvalSet, index: int) -> float:
        return mean_diagonal(self.features(evalset, index), weights=evalset.problem.weights)
