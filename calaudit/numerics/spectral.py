"""Eigendecomposition ``K = Q diag(lambda) Q^T`` of a kernel matrix (Gruber & Bach, eq. 29).

* ``exact``: :func:`numpy.linalg.eigh` of ``K``, negative eigenvalues clipped to 0.
* ``low_rank``: pivoted Cholesky ``K ~ L^T L`` (Harbrecht, Peters & Schneider 2012) until
  every diagonal entry of the residual is at most ``tolerance``, then the eigendecomposition
  of ``L L^T``; O(n r^2). The eigenvalues left out are bounded by ``residual_trace``.

``evaluate(a, b)`` gives the kernel block; the kernel must be stationary (``k(x, x) = 1``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

KernelBlock = Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]]


@dataclass(frozen=True)
class KernelSpectrum:
    """``K ~ vectors @ diag(values) @ vectors.T`` (orthonormal ``vectors``, n x r);
    ``residual_trace`` bounds the eigenvalues left out (0 when exact)."""

    vectors: NDArray[np.float64]
    values: NDArray[np.float64]
    method: str
    residual_trace: float

    @property
    def rank(self) -> int:
        return int(self.values.shape[0])


def exact_spectrum(evaluate: KernelBlock, points: NDArray[np.float64],
                   weights: NDArray[np.float64] | None = None) -> KernelSpectrum:
    """All eigenpairs of the dense kernel matrix (eigenvalues clipped at 0)."""
    matrix = evaluate(points, points)
    if weights is not None:
        root = np.sqrt(weights)
        matrix *= np.outer(root, root)
    values, vectors = np.linalg.eigh(matrix)
    return KernelSpectrum(vectors, np.maximum(values, 0.0), "exact", 0.0)


def _cholesky_block(columns: NDArray[np.float64], local: NDArray[np.intp],
                    diagonal: NDArray[np.float64], tolerance: float) -> list[NDArray[np.float64]]:
    """Greedy pivoted Cholesky among candidate pivots (``columns`` (n x b) their residual
    kernel columns, ``local`` their rows, ``diagonal`` their residual diagonal): the new
    factor rows."""
    diagonal = diagonal.copy()
    rows: list[NDArray[np.float64]] = []
    for _ in range(columns.shape[1]):
        j = int(np.argmax(diagonal))
        if diagonal[j] <= tolerance:
            break
        column = columns[:, j].copy()
        for row in rows:
            column -= row * row[local[j]]
        column /= np.sqrt(diagonal[j])
        rows.append(column)
        diagonal -= column[local] ** 2
        diagonal[j] = 0.0
    return rows


def pivoted_cholesky(evaluate: KernelBlock, points: NDArray[np.float64], *, tolerance: float,
                     max_rank: int, block: int = 64, weights: NDArray[np.float64] | None = None
                    ) -> tuple[NDArray[np.float64], float]:
    """Rows ``L`` (r x n) with ``K ~ L^T L`` and the residual's trace (of ``W^1/2 (K - L^T
    L) W^1/2`` with ``weights``), by blocks of ``block`` candidates (largest residual
    diagonal) until it is at most ``tolerance`` or ``max_rank`` rows exist."""
    n = points.shape[0]
    limit = min(max_rank, n)
    factor = np.empty((min(limit, 4 * block), n))
    residual = np.ones(n)
    rank = 0
    while rank < limit and residual.max() > tolerance:
        size = min(block, limit - rank, n)
        candidates = np.argpartition(-residual, size - 1)[:size]
        candidates = candidates[residual[candidates] > tolerance]
        columns = evaluate(points, points[candidates])
        if rank:
            columns -= factor[:rank].T @ factor[:rank, candidates]
        new = _cholesky_block(columns, candidates, residual[candidates], tolerance)
        if not new:
            break
        new = new[: limit - rank]
        if rank + len(new) > factor.shape[0]:  # grow geometrically: memory O(n r)
            grown = np.empty((min(limit, 2 * factor.shape[0] + len(new)), n))
            grown[:rank] = factor[:rank]
            factor = grown
        factor[rank:rank + len(new)] = new
        for row in new:
            residual -= row * row
        rank += len(new)
        residual[candidates[residual[candidates] < 0]] = 0.0
    residual = np.clip(residual, 0.0, None)
    return factor[:rank], float(residual.sum() if weights is None else residual @ weights)


def low_rank_spectrum(evaluate: KernelBlock, points: NDArray[np.float64], *, tolerance: float,
                      max_rank: int, weights: NDArray[np.float64] | None = None) -> KernelSpectrum:
    """Leading eigenpairs of ``K ~ L^T L`` from ``L L^T = V diag(w) V^T``: eigenvalues ``w``,
    eigenvectors ``L^T V diag(w)^(-1/2)``; ``w <= r eps max(w)`` dropped."""
    rows, residual_trace = pivoted_cholesky(evaluate, points, tolerance=tolerance,
                                            max_rank=max_rank, weights=weights)
    if weights is not None:
        rows = rows * np.sqrt(weights)
    values, small = np.linalg.eigh(rows @ rows.T)
    top = values.max() if values.size else 0.0
    keep = values > max(rows.shape[0], 1) * np.finfo(np.float64).eps * top
    values, small = values[keep][::-1], small[:, keep][:, ::-1]
    vectors = (rows.T @ small) / np.sqrt(values)
    return KernelSpectrum(vectors, values, "low_rank", residual_trace)


def kernel_spectrum(evaluate: KernelBlock, points: NDArray[np.float64], *, method: str = "low_rank",
                    tolerance: float = 1e-10, max_rank: int = 4000,
                    weights: NDArray[np.float64] | None = None) -> KernelSpectrum:
    """Eigendecomposition of ``K_ij = k(x_i, x_j)`` (``exact`` or ``low_rank``: pivoted
    Cholesky to ``tolerance``, at most ``max_rank`` pivots); with ``weights`` that of
    ``W^1/2 K W^1/2``."""
    matrix = np.asarray(points, dtype=np.float64)
    matrix = matrix[:, None] if matrix.ndim == 1 else matrix
    if method == "exact":
        return exact_spectrum(evaluate, matrix, weights)
    if method == "low_rank":
        return low_rank_spectrum(evaluate, matrix, tolerance=tolerance, max_rank=max_rank,
                                 weights=weights)
    raise ValueError(f"unknown spectrum method {method!r}")
