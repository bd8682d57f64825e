"""Squared kernel calibration error (SKCE) estimators, Widmann et al. (2019), sec. 5.

Matrix-valued kernel ``k(p, q) = kappa(p, q) I_m`` with a scalar kernel ``kappa`` on the
probability simplex; residuals ``r_i = e_{y_i} - p_i``; terms
``h_ij = kappa(p_i, p_j) <r_i, r_j>`` (Table 1 of the paper):

* ``SKCE_b  = n^-2 sum_{i,j} h_ij`` (biased, >= 0),
* ``SKCE_uq = (n (n - 1))^-1 sum_{i != j} h_ij`` (unbiased, quadratic),
* ``SKCE_ul = floor(n/2)^-1 sum_i h_{2i-1, 2i}`` (unbiased, linear; consecutive rows in
  input order, no shuffling, as CalibrationErrors.jl),
* block estimator with block size ``b``: the mean over the ``floor(n / b)`` consecutive
  blocks of each block's unbiased quadratic estimate; an incomplete last block is dropped
  (CalibrationErrors.jl ``SKCE(k; blocksize=b)``); ``b = 2`` is ``SKCE_ul``.

Binary data are two-class probability vectors (``TV([p, 1-p], [q, 1-q]) = |p - q|``).
Kernels ``kappa = exp(-gamma d)``, bounded by 1 (so ``|h_ij| <= 2``): ``exponential`` (``d``
= total variation, the default), ``gaussian`` (squared Euclidean), ``laplacian`` (L1).
The bandwidth ``1 / gamma`` defaults to the median of ``d(p_i, p_j)`` over the full n x n
matrix, diagonal included (CalibrationPaper ``median_TV_kernel``); on weighted rows
(docs/weights.md; the estimates: :mod:`calaudit.inference.weighted_skce_test`) the median
over ordered pairs counted ``w_i w_j`` times (for frequency weights the repeated rows'
median), exact up to :data:`MAX_MEDIAN_ROWS` rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit.metrics.inputs import accepts_1d, residuals_of
from calaudit.numerics.bandwidth import (
    median_distance,
    weighted_median_distance,
    weighted_nonzero_median,
)
from calaudit.numerics.grams import ResidualGram, cached, within_block_kernels
from calaudit.numerics.kernels import StationaryKernel
from calaudit.numerics.pairwise import kernel_matmul

#: Kernel names and the distance each one exponentiates.
KERNEL_DISTANCES = {"exponential": "tv", "gaussian": "sqeuclidean", "laplacian": "l1"}

#: Rows drawn for the median heuristic when n exceeds the exact limit.
MEDIAN_SUBSAMPLE = 5_000
#: Most rows for the exact weighted median of the pairwise distances (n^2 sorted values).
MAX_MEDIAN_ROWS = 4096


@dataclass(frozen=True)
class KernelChoice:
    """The prediction kernel and where its bandwidth came from (``source``): ``option``,
    ``median`` (full matrix), ``median_subsample`` (a random subsample's, above the exact
    limit), ``median_nonzero`` (the median was 0: the non-zero distances') or
    ``degenerate`` (all predictions equal: 1)."""

    name: str
    bandwidth: float
    source: str

    @property
    def gamma(self) -> float:
        return 1.0 / self.bandwidth

    @property
    def kernel(self) -> StationaryKernel:
        return StationaryKernel(self.gamma, KERNEL_DISTANCES[self.name])

    def to_params(self) -> dict[str, object]:
        return {"kernel": self.name, "distance": KERNEL_DISTANCES[self.name],
                "bandwidth": self.bandwidth, "gamma": self.gamma,
                "bandwidth_source": self.source}


def choose_kernel(y_proba: NDArray[np.float64], name: str = "exponential",
                  bandwidth: float | None = None, *, exact_max_n: int = 20_000,
                  rng: np.random.Generator | None = None) -> KernelChoice:
    """The kernel ``name`` with the given bandwidth or the median heuristic: exact over the
    full n x n matrix (diagonal zeros included) up to ``exact_max_n`` rows, above over
    ``min(MEDIAN_SUBSAMPLE, exact_max_n)`` rows drawn with ``rng``."""
    if name not in KERNEL_DISTANCES:
        raise ValueError(f"unknown kernel {name!r}; choose from {', '.join(KERNEL_DISTANCES)}")
    if bandwidth is not None:
        return KernelChoice(name, float(bandwidth), "option")
    distance = KERNEL_DISTANCES[name]
    rows, source = y_proba, "median"
    if y_proba.shape[0] > exact_max_n:
        rng = rng if rng is not None else np.random.default_rng(0)
        size = min(MEDIAN_SUBSAMPLE, exact_max_n)
        pick = np.sort(rng.choice(y_proba.shape[0], size, replace=False))
        rows, source = y_proba[pick], "median_subsample"
    median = median_distance(rows, distance)
    if median > 0:
        return KernelChoice(name, median, source)
    return _nonzero_median(name, rows, distance)


def _nonzero_median(name: str, rows: NDArray[np.float64], distance: str) -> KernelChoice:
    """Fallback when at least half of the distances are 0 (many tied predictions): the
    median of the positive distances, each distinct row counted as often as it occurs."""
    distinct, counts = np.unique(rows, axis=0, return_counts=True)
    if distinct.shape[0] < 2:
        return KernelChoice(name, 1.0, "degenerate")
    return KernelChoice(name, weighted_nonzero_median(distinct, counts.astype(np.float64),
                                                      distance), "median_nonzero")


def weighted_kernel(y_proba: NDArray[np.float64], weights: NDArray[np.float64], name: str,
                    bandwidth: float | None, frequency: bool) -> KernelChoice | None:
    """The kernel with the given bandwidth or the weighted median heuristic (None when
    the median cannot be computed exactly: more than :data:`MAX_MEDIAN_ROWS` rows)."""
    if bandwidth is not None:
        return KernelChoice(name, float(bandwidth), "option")
    if y_proba.shape[0] > MAX_MEDIAN_ROWS:
        return None
    distance = KERNEL_DISTANCES[name]
    median = weighted_median_distance(y_proba, weights, distance, frequency)
    if median > 0:
        return KernelChoice(name, median, "weighted_median")
    nonzero = weighted_nonzero_median(y_proba, weights, distance)
    return KernelChoice(name, nonzero if nonzero else 1.0,
                        "weighted_median_nonzero" if nonzero else "degenerate")


class SkceEstimators:
    """``SKCE_b = n^-2 sum_{i,j} h_ij`` and ``SKCE_uq = (n(n-1))^-1 sum_{i != j} h_ij``
    from a subclass's ``total`` (``sum_{i,j} h_ij``) and ``diagonal`` (``h_ii``)."""

    total: float
    diagonal: NDArray[np.float64]

    @property
    def n(self) -> int:
        return int(self.diagonal.size)

    @property
    def off_diagonal(self) -> float:
        """``sum_{i != j} h_ij``."""
        return self.total - float(self.diagonal.sum())

    @property
    def biased(self) -> float:
        return self.total / self.n ** 2

    @property
    def unbiased(self) -> float:
        return self.off_diagonal / (self.n * (self.n - 1))


@dataclass(frozen=True)
class QuadraticTerms(SkceEstimators):
    """``row_sums[i] = sum_j h_ij`` (diagonal included) and ``diagonal[i] = h_ii``."""

    row_sums: NDArray[np.float64]
    diagonal: NDArray[np.float64]

    @property
    def total(self) -> float:  # type: ignore[override]
        """``sum_{i,j} h_ij``."""
        return float(self.row_sums.sum())


def residual_gram(kernel: StationaryKernel, y_proba: NDArray[np.float64],
                  residuals: NDArray[np.float64]) -> ResidualGram:
    """The lazy matrix ``H_ij = kappa(p_i, p_j) <r_i, r_j>`` (held densely when small)."""
    return cached(ResidualGram(kernel.on(y_proba), residuals))


def quadratic_terms(gram) -> QuadraticTerms:
    """One engine pass: ``H @ 1`` and the diagonal of ``H``."""
    return QuadraticTerms(kernel_matmul(gram, np.ones(gram.n)), gram.diagonal())


def block_terms(kernel: StationaryKernel, y_proba: NDArray[np.float64],
                residuals: NDArray[np.float64], blocksize: int,
                max_entries: int = 1 << 20) -> NDArray[np.float64]:
    """``(b (b - 1))^-1 sum_{i != j in block} h_ij`` of each complete block of ``b =
    blocksize`` consecutive rows (``b = 2``: the pair terms of ``SKCE_ul``)."""
    if blocksize < 2:
        raise ValueError("blocksize must be at least 2")
    n_blocks = y_proba.shape[0] // blocksize
    out = np.empty(n_blocks)
    chunk = max(1, max_entries // (blocksize * blocksize))
    for first in range(0, n_blocks, chunk):
        stop = min(first + chunk, n_blocks)
        k = within_block_kernels(kernel, y_proba, blocksize, first, stop)
        r = residuals[first * blocksize: stop * blocksize].reshape(stop - first, blocksize, -1)
        h = k * np.einsum("bik,bjk->bij", r, r)
        total = h.sum(axis=(1, 2)) - np.einsum("bii->b", h)
        out[first:stop] = total / (blocksize * (blocksize - 1))
    return out


@accepts_1d
def skce_biased(y_true: NDArray[np.int64], y_proba: NDArray[np.float64],
                kernel: StationaryKernel) -> float:
    """``SKCE_b = n^-2 sum_{i,j} h_ij``.

    >>> import numpy as np
    >>> from calaudit.numerics.kernels import gaussian
    >>> p = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> round(skce_biased(np.array([1, 0]), p, gaussian(0.5)), 6)  # 1 - exp(-1)
    0.632121
    """
    return quadratic_terms(residual_gram(kernel, y_proba, residuals_of(y_true, y_proba))).biased


@accepts_1d
def skce_unbiased(y_true: NDArray[np.int64], y_proba: NDArray[np.float64],
                  kernel: StationaryKernel) -> float:
    """``SKCE_uq = (n (n-1))^-1 sum_{i != j} h_ij``."""
    return quadratic_terms(residual_gram(kernel, y_proba, residuals_of(y_true, y_proba))).unbiased


@accepts_1d
def skce_linear(y_true: NDArray[np.int64], y_proba: NDArray[np.float64],
                kernel: StationaryKernel) -> float:
    """``SKCE_ul = floor(n/2)^-1 sum_i h_{2i-1, 2i}``."""
    return skce_block(y_true, y_proba, kernel, blocksize=2)


@accepts_1d
def skce_block(y_true: NDArray[np.int64], y_proba: NDArray[np.float64],
               kernel: StationaryKernel, blocksize: int) -> float:
    """Mean of the within-block unbiased estimates over complete blocks."""
    return float(block_terms(kernel, y_proba, residuals_of(y_true, y_proba), blocksize).mean())
