"""Eigendecomposition of a kernel matrix, exact or truncated at a tolerance.

Kernel ridge regression in Kronecker form (Gruber & Bach, eq. 29) needs the
eigendecomposition ``K = Q diag(lambda) Q^T`` of the training kernel matrix. Two ways:

* ``exact``: form ``K`` (n x n) and call LAPACK ``syevd`` (:func:`numpy.linalg.eigh`);
  O(n^3) time, O(n^2) memory. Negative eigenvalues (rounding) are clipped to 0, as the
  reference implementation does.
* ``low_rank``: pivoted (incomplete) Cholesky ``K ~ L^T L`` (Harbrecht, Peters &
  Schneider 2012), stopped when every diagonal entry of the residual ``K - L^T L`` is at
  most ``tolerance``, then the eigendecomposition of the r x r matrix ``L L^T``. Time O(n r^2) for rank r, memory O(n r);
  ``K`` is never formed. The eigenvalues left out are those of the residual, a positive
  semi-definite matrix whose trace (``residual_trace``) bounds them; they are treated as
  0, which is exact up to that bound. Smooth kernels on low-dimensional inputs (the
  Gaussian kernel on probability vectors) have fast-decaying spectra, so r << n.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit.numerics.kernels import StationaryKernel


@dataclass(frozen=True)
class KernelSpectrum:
    """``K ~ vectors @ diag(values) @ vectors.T`` with orthonormal ``vectors`` (n x r).

    ``residual_trace`` bounds the sum of the eigenvalues left out (0 when exact).
    """

    vectors: NDArray[np.float64]
    values: NDArray[np.float64]
    method: str
    residual_trace: float

    @property
    def rank(self) -> int:
        return int(self.values.shape[0])


def exact_spectrum(kernel: StationaryKernel, points: NDArray[np.float64]) -> KernelSpectrum:
    """All eigenpairs of the dense kernel matrix (eigenvalues clipped at 0)."""
    values, vectors = np.linalg.eigh(kernel.evaluate(points, points))
    return KernelSpectrum(vectors, np.maximum(values, 0.0), "exact", 0.0)


def pivoted_cholesky(
    kernel: StationaryKernel, points: NDArray[np.float64], *, tolerance: float, max_rank: int
) -> tuple[NDArray[np.float64], float]:
    """Rows ``L`` (r x n) with ``K ~ L^T L`` and the trace of the residual.

    Greedy: pivot on the largest residual diagonal entry, add the residual column of the
    pivot, stop when the largest residual diagonal entry is ``<= tolerance`` or at
    ``max_rank``. One kernel column per step; a stationary kernel has ``k(x, x) = 1``.
    """
    n = points.shape[0]
    limit = min(max_rank, n)
    rows = np.empty((limit, n))
    residual = np.ones(n)
    rank = 0
    while rank < limit:
        pivot = int(np.argmax(residual))
        if residual[pivot] <= tolerance:
            break
        column = kernel.evaluate(points, points[pivot:pivot + 1])[:, 0]
        if rank:
            column -= rows[:rank].T @ rows[:rank, pivot]
        column /= np.sqrt(residual[pivot])
        rows[rank] = column
        residual -= column * column
        residual[pivot] = 0.0
        rank += 1
    return rows[:rank], float(np.clip(residual, 0.0, None).sum())


def low_rank_spectrum(
    kernel: StationaryKernel, points: NDArray[np.float64], *, tolerance: float, max_rank: int
) -> KernelSpectrum:
    """Leading eigenpairs from a pivoted Cholesky factor ``K ~ L^T L``.

    The eigenpairs of the small matrix ``L L^T = V diag(w) V^T`` (r x r) give those of
    ``L^T L``: eigenvalues ``w`` and orthonormal eigenvectors ``L^T V diag(w)^(-1/2)``.
    Directions with ``w`` at rounding level (``<= r * eps * max(w)``) are dropped with the
    residual (their eigenvalue is treated as 0).
    """
    rows, residual_trace = pivoted_cholesky(kernel, points, tolerance=tolerance,
                                            max_rank=max_rank)
    values, small = np.linalg.eigh(rows @ rows.T)
    floor = max(rows.shape[0], 1) * np.finfo(np.float64).eps * (values.max() if values.size
                                                               else 0.0)
    keep = values > floor
    values, small = values[keep][::-1], small[:, keep][:, ::-1]
    vectors = (rows.T @ small) / np.sqrt(values)
    return KernelSpectrum(vectors, values, "low_rank", residual_trace)


def kernel_spectrum(
    kernel: StationaryKernel,
    points: NDArray[np.float64],
    *,
    method: str = "low_rank",
    tolerance: float = 1e-10,
    max_rank: int = 4000,
) -> KernelSpectrum:
    """Eigendecomposition of ``K_ij = kernel(x_i, x_j)``, ``method`` ``exact`` or
    ``low_rank`` (pivoted Cholesky to ``tolerance``, at most ``max_rank`` pivots)."""
    matrix = np.asarray(points, dtype=np.float64)
    matrix = matrix[:, None] if matrix.ndim == 1 else matrix
    if method == "exact":
        return exact_spectrum(kernel, matrix)
    if method == "low_rank":
        return low_rank_spectrum(kernel, matrix, tolerance=tolerance, max_rank=max_rank)
    raise ValueError(f"unknown spectrum method {method!r}")
