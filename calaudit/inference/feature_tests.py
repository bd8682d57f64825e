"""Consistency tests of kernel calibration statistics through random Fourier features.

The statistic is the unbiased U-statistic of the *feature kernel*
``k_D(a, b) = phi(a) . phi(b)`` (:mod:`calaudit.numerics.features`), with residuals
``r_i = e_{y_i} - p_i`` (binary: a scalar),

    ``T_D = (|Phi^T R|_F^2 - sum_i |r_i|^2) / (n (n - 1)) = sum_{i != j} k_D(i, j) <r_i, r_j>
    / (n (n - 1))``

(``|phi_i| = 1``). Its null distribution comes from the same label redraws as the exact
consistency tests: predictions and covariates fixed, ``y*_i ~ Cat(p_i)`` (Broecker & Smith
2007; design notes 3). Given the frequencies, ``T_D`` is a fixed function of the labels, so
the Monte-Carlo p-value ``(1 + #{T*_b >= T_D}) / (1 + B)`` is exact-conditional whatever
``D``: the level is exact and only the power depends on ``D``.

All resamples go through one GEMM per row chunk, ``Phi_c^T [r_c | R*_c]`` (D x (1 + B) per
class): time O(n D m B), memory O(chunk (D + m B) + D m B), never n x n and never n x B.
The uniforms of the label draws are taken row chunk by row chunk in C order, the same
stream as one ``rng.random((n, B))``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit.inference.skce_tests import CountForms
from calaudit.local.klce import as_columns
from calaudit.local.resampling import bootstrap_sampler, label_sampler
from calaudit.metrics.skce import QuadraticTerms
from calaudit.numerics.chunked_bootstrap import ChunkedCounts
from calaudit.numerics.features import (
    CHUNK_ENTRIES,
    FourierFeatures,
    feature_products,
    row_chunks,
    u_statistic_sums,
)
from calaudit.numerics.kernels import Gram
from calaudit.numerics.pairwise import kernel_quadratic_forms
from calaudit.numerics.resampling import monte_carlo_pvalue


@dataclass(frozen=True)
class FeatureTestResult:
    """``T_D``, its resampled null and the p-value."""

    statistic: float
    null_distribution: NDArray[np.float64]
    p_value: float
    n_features: int


def _layout(r: NDArray[np.float64]) -> int:
    return 1 if r.ndim == 1 else int(r.shape[1])


def feature_statistic(features: FourierFeatures, x: NDArray[np.float64],
                      r: NDArray[np.float64], entries: int = CHUNK_ENTRIES) -> float:
    """``T_D`` of the residuals ``r`` ((n,) or (n, m)) at the rows ``x``."""
    n, classes = r.shape[0], _layout(r)
    flat = np.asarray(r, dtype=np.float64).reshape(n, classes)

    def fill(start: int, stop: int, out: NDArray[np.float64]) -> None:
        out[:] = flat[start:stop]

    products, squares = feature_products(features, x, fill, classes, entries)
    return float(u_statistic_sums(products, squares, classes)[0]) / (n * (n - 1))


#: ``draw(rng, start, stop, out)`` writes the resampled residual columns of rows
#: ``[start, stop)`` into ``out`` ((rows, B) or (rows, m, B)); chunks come in row order.
RowDraw = Callable[[np.random.Generator, int, int, NDArray[np.float64]], None]


def label_draw(proba: NDArray[np.float64]) -> RowDraw:
    """Consistency redraws ``e_{y*} - p`` with ``y*_i ~ Cat(p_i)`` (binary: ``y* - p_1``),
    through :func:`calaudit.local.resampling.label_sampler`."""
    proba = np.asarray(proba, dtype=np.float64)

    def draw(rng: np.random.Generator, start: int, stop: int, out: NDArray[np.float64]
             ) -> None:
        label_sampler(proba[start:stop])(rng, out)
    return draw


def bootstrap_draw(r: NDArray[np.float64]) -> RowDraw:
    """Residuals drawn with replacement from all ``n`` observed residuals (KLCE
    Algorithm 1), through :func:`calaudit.local.resampling.bootstrap_sampler`."""
    sampler = bootstrap_sampler(np.asarray(r, dtype=np.float64))

    def draw(rng: np.random.Generator, start: int, stop: int, out: NDArray[np.float64]
             ) -> None:
        sampler(rng, out)
    return draw


def feature_resampling_test(features: FourierFeatures, x: NDArray[np.float64],
                            r: NDArray[np.float64], draw: RowDraw,
                            rng: np.random.Generator, n_resamples: int, *,
                            residual_scale: float = 1.0,
                            entries: int = CHUNK_ENTRIES) -> FeatureTestResult:
    """``T_D`` of the observed residuals ``r`` ((n,) or (n, m)) and of ``n_resamples``
    resampled residual vectors from ``draw``, multiplied by ``residual_scale`` (e.g.
    ``sqrt(2)`` when a two-class SKCE is computed through the scalar ``y - p_1``, since
    ``<e_y - p, e_y' - p'> = 2 (y - p_1)(y' - p'_1)``; ``r`` must then be scaled alike).
    The observed residuals ride along as column 0 of each chunk."""
    n, classes = r.shape[0], _layout(r)
    q = n_resamples + 1
    observed = np.asarray(r, dtype=np.float64).reshape(n, classes)

    def fill(start: int, stop: int, out: NDArray[np.float64]) -> None:
        view = out.reshape(stop - start, classes, q)
        view[:, :, 0] = observed[start:stop]
        sampled = view[:, :, 1:] if classes > 1 else view[:, 0, 1:]
        draw(rng, start, stop, sampled)
        if residual_scale != 1.0:
            sampled *= residual_scale

    products, squares = feature_products(features, x, fill, classes * q, entries)
    sums = u_statistic_sums(products, squares, classes) / (n * (n - 1))
    statistic, null = float(sums[0]), sums[1:]
    return FeatureTestResult(statistic, null, monte_carlo_pvalue(statistic, null),
                             features.n_features)


def feature_consistency_test(features: FourierFeatures, x: NDArray[np.float64],
                             r: NDArray[np.float64], proba: NDArray[np.float64],
                             rng: np.random.Generator, n_resamples: int, *,
                             residual_scale: float = 1.0,
                             entries: int = CHUNK_ENTRIES) -> FeatureTestResult:
    """Consistency test of ``T_D``: labels redrawn from ``proba`` ((n,) positive-class
    probabilities or (n, m) rows), predictions and covariates fixed
    (:func:`feature_resampling_test`)."""
    return feature_resampling_test(features, x, r, label_draw(proba), rng, n_resamples,
                                   residual_scale=residual_scale, entries=entries)


def approximation_error(features: FourierFeatures, x: NDArray[np.float64],
                        r: NDArray[np.float64], exact: Gram,
                        residual_scale: float = 1.0) -> dict:
    """``T_D`` against the exact U-statistic on the same rows (a subsample: ``exact`` is
    the exact kernel's Gram of the rows ``x``), and the root-mean-square and largest
    difference between the feature kernel and the exact kernel over those pairs."""
    rows = x.shape[0]
    rr = np.asarray(r, dtype=np.float64) * residual_scale
    exact_value = float(kernel_quadratic_forms(exact, as_columns(rr))[0]) / (rows * (rows - 1))
    feature_value = feature_statistic(features, x, rr)
    dense = exact.block(slice(0, rows), slice(0, rows))
    diff = features.kernel_matrix(x, x) - dense
    return {"subsample_rows": int(rows), "exact": exact_value, "features": feature_value,
            "difference": feature_value - exact_value,
            "kernel_rms_error": float(np.sqrt(np.mean(diff * diff))),
            "kernel_max_error": float(np.max(np.abs(diff)))}


def feature_terms(features: FourierFeatures, x: NDArray[np.float64],
                  r: NDArray[np.float64], entries: int = CHUNK_ENTRIES) -> QuadraticTerms:
    """The SKCE terms of the feature kernel: row sums ``sum_j k_D(i, j) <r_i, r_j> =
    <r_i, A^T phi_i>`` with ``A = Phi^T R`` (two passes) and the diagonal ``|r_i|^2``
    (``k_D(i, i) = 1``); every quadratic SKCE estimate follows (``QuadraticTerms``)."""
    n, classes = r.shape[0], _layout(r)
    flat = np.asarray(r, dtype=np.float64).reshape(n, classes)

    def fill(start: int, stop: int, out: NDArray[np.float64]) -> None:
        out[:] = flat[start:stop]

    products, _ = feature_products(features, x, fill, classes, entries)
    row_sums = np.empty(n)
    for start, stop in row_chunks(n, features.n_features + classes, entries):
        smoothed = features.transform(x[start:stop]) @ products
        row_sums[start:stop] = np.einsum("ij,ij->i", smoothed, flat[start:stop])
    return QuadraticTerms(row_sums, np.einsum("ij,ij->i", flat, flat))


def feature_count_forms(features: FourierFeatures, x: NDArray[np.float64],
                        r: NDArray[np.float64], terms: QuadraticTerms,
                        rng: np.random.Generator, n_resamples: int,
                        entries: int = CHUNK_ENTRIES) -> CountForms:
    """Bootstrap count forms (:class:`calaudit.inference.skce_tests.CountForms`) of the
    feature kernel: ``C^T H C = sum_k |Phi^T (c o r_k)|^2`` in one GEMM per row chunk,
    the multinomial counts drawn chunk by chunk (:mod:`calaudit.numerics.chunked_bootstrap`,
    never n x B)."""
    n, classes = r.shape[0], _layout(r)
    flat = np.asarray(r, dtype=np.float64).reshape(n, classes)
    counts = ChunkedCounts(rng, n, n_resamples)
    acc = {key: np.zeros(n_resamples) for key in ("diagonal", "linear", "squared", "ties")}

    def fill(start: int, stop: int, out: NDArray[np.float64]) -> None:
        c = counts.next(stop - start)
        view = out.reshape(stop - start, classes, n_resamples)
        np.multiply(flat[start:stop, :, None], c[:, None, :], out=view)
        c2 = c * c
        acc["diagonal"] += c.T @ terms.diagonal[start:stop]
        acc["linear"] += c.T @ terms.row_sums[start:stop]
        acc["squared"] += c2.T @ terms.diagonal[start:stop]
        acc["ties"] += c2.sum(axis=0)

    products, squares = feature_products(features, x, fill, classes * n_resamples, entries)
    quadratic = u_statistic_sums(products, squares, classes) + squares.reshape(
        classes, -1).sum(axis=0)
    return CountForms(quadratic, acc["diagonal"], acc["linear"], acc["squared"], acc["ties"],
                      n)
