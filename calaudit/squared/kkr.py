"""``h_kkr`` (Gruber & Bach, eq. 28-31): Kronecker kernel ridge regression.

Through the eigendecomposition ``K = Q diag(lambda) Q^T`` of the training kernel (eq. 29):

    h(x, x') = k(x)^T Q (L ⊙ Q^T R R^T Q) Q^T k(x'),   L_ij = 1 / (lambda_i lambda_j + c),

``R`` the training residuals, ``k(x)`` the kernel vector to the training rows, ``c = lambda
n^2``. With the spectrum truncated to its leading pairs ``U, s`` (:mod:`calaudit.numerics.
spectral`) this splits exactly into

    h(x, x') = a^T C a' + (a^T G w' + w^T G^T a' + w^T w') / c,

``a = U^T k(x)``, ``G = U^T R``, ``C = G G^T ⊙ [1 / (s_i s_j + c)]``, ``w = R^T k(x) - G^T
a``: in the factorised form of :mod:`calaudit.squared.risk`, features ``(a, w)`` and metric
``S = [[C, G / c], [G^T / c, I / c]]`` (full spectrum: ``w = 0``, eq. 29 itself). The exact
spectrum costs 16 n^2 bytes per fold; near the ridge floor (``c < 1e-12 lambda_max^2``) the
exact and truncated spectra differ by rounding (``validation/squared_spectrum_check.txt``).

Weighted rows (docs/weights.md): ``K_w = W^1/2 K W^1/2``, ``W^1/2 R``, ``W^1/2 k(x)`` and
``c = lambda W^2`` (``lambda = n_e^a s`` with the effective size ``n_e``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.spatial.distance import cdist

from calaudit.numerics.spectral import kernel_spectrum
from calaudit.squared.fitting import EvalSet, Settings, row_tiles
from calaudit.squared.grids import regularisation
from calaudit.squared.risk import RiskTerms, mean_diagonal
from calaudit.squared.targets import Problem


class GaussianBlock:
    """``exp(-gamma ||a_i - b_j||^2)`` between the rows of ``a`` and ``b``; distances by
    :func:`scipy.spatial.distance.cdist` (exact differences, compiled loop)."""

    def __init__(self, gamma: float) -> None:
        self.gamma = gamma

    def __call__(self, a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
        block = cdist(a, b, "sqeuclidean")
        block *= -self.gamma
        return np.exp(block, out=block)


class KernelFold:
    """The training kernel spectrum and evaluation-set projections of one fold, shared by
    ``kkr`` and ``ukkr`` (:meth:`retain` keeps one evaluation set's projections)."""

    def __init__(self, train: Problem, settings: Settings) -> None:
        self.kernel = GaussianBlock(settings.kernel_gamma)
        self.points: NDArray[np.float64] | None = train.points
        self.n = train.n
        weights = None if train.weights is None else train.weights.weights
        spectrum = kernel_spectrum(
            self.kernel, train.points, method=settings.spectrum,
            tolerance=settings.rank_tolerance, max_rank=settings.max_rank, weights=weights)
        self.values = spectrum.values
        if weights is None:
            self.size, self.total = float(self.n), None
            self.residuals: NDArray[np.float64] | None = train.residuals
            self.vectors: NDArray[np.float64] | None = spectrum.vectors
            self.coeffs = spectrum.vectors.T @ train.residuals
        else:  # the spectrum of K_w = W^1/2 K W^1/2: U -> W^1/2 U, R -> W R
            root = np.sqrt(weights)[:, None]
            self.size, self.total = train.weights.effective_size, train.weights.total
            self.residuals = train.residuals * weights[:, None]
            self.vectors = spectrum.vectors * root
            self.coeffs = spectrum.vectors.T @ (train.residuals * root)
        self.facts = {"spectrum": spectrum.method, "rank": spectrum.rank,
                      "residual_trace": spectrum.residual_trace}
        self._cache: dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]] = {}

    def projections(self, evalset: EvalSet) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``A = K_eval,train U`` (n' x r) and ``W = K_eval,train R - A G`` (n' x q),
        computed in row blocks and cached per evaluation set."""
        if evalset.key not in self._cache:
            if self.vectors is None or self.points is None or self.residuals is None:
                raise RuntimeError("the training fold was released; only "
                                   f"{sorted(self._cache)} can be evaluated")
            points = evalset.problem.points
            a = np.empty((points.shape[0], self.vectors.shape[1]))
            v = np.empty((points.shape[0], self.residuals.shape[1]))
            for rows in row_tiles(points.shape[0], self.n):
                block = self.kernel(points[rows], self.points)
                a[rows] = block @ self.vectors
                v[rows] = block @ self.residuals
            self._cache[evalset.key] = (a, v - a @ self.coeffs)
        return self._cache[evalset.key]

    def retain(self, evalset: EvalSet) -> None:
        """Keep what evaluating on ``evalset`` needs and release the training data."""
        kept = self.projections(evalset)
        self._cache = {evalset.key: kept}
        self.vectors = self.points = self.residuals = None


class KkrPath:
    """``h_kkr`` fitted on one training fold for every ridge scale of the grid."""

    def __init__(self, fold: KernelFold, grid: tuple[float, ...], settings: Settings) -> None:
        self.fold = fold
        self.grid = grid
        self.ridges = [regularisation("kkr", s, fold.size, settings.kkr_lambda_exponent,
                                      fold.total) for s in grid]
        self._products = np.outer(fold.values, fold.values)
        self._gg = fold.coeffs @ fold.coeffs.T

    def metric(self, index: int) -> NDArray[np.float64]:
        """``S = [[C, G / c], [G^T / c, I / c]]`` for the ridge constant ``c``."""
        c = self.ridges[index]
        g = self.fold.coeffs
        r, q = g.shape
        out = np.empty((r + q, r + q))
        out[:r, :r] = self._gg / (self._products + c)
        out[:r, r:] = g / c
        out[r:, :r] = g.T / c
        out[r:, r:] = np.eye(q) / c
        return out

    def _features(self, evalset: EvalSet) -> NDArray[np.float64]:
        a, w = self.fold.projections(evalset)
        return np.hstack([a, w])

    def risks(self, evalset: EvalSet) -> NDArray[np.float64]:
        problem = evalset.problem
        terms = RiskTerms(problem.residuals, self._features(evalset), problem.weights)
        return np.array([terms.risk(self.metric(i)) for i in range(len(self.grid))])

    def estimate(self, evalset: EvalSet, index: int) -> float:
        return mean_diagonal(self._features(evalset), self.metric(index),
                             evalset.problem.weights)
