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
from calaudit.metrics.skce import SkceEstimators
from calaudit.local.resampling import bootstrap_sampler, label_sampler
from calaudit.numerics.chunked_bootstrap import ChunkedCounts
from calaudit.numerics.features import (
    CHUNK_ENTRIES,
    FourierFeatures,
    feature_products,
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


@dataclass(frozen=True)
class FeatureTerms(SkceEstimators):
    """Sums of the feature-kernel SKCE terms ``h_ij = k_D(i, j) <r_i, r_j>``:
    ``total = sum_{i,j} h_ij = |Phi^T R|^2`` and the diagonal ``h_ii = |phi_i|^2 |r_i|^2``
    (``|phi_i|^2 = 1`` up to the rounding of the feature map); the same estimator
    properties as :class:`calaudit.metrics.skce.QuadraticTerms`."""

    total: float
    diagonal: NDArray[np.float64]


@dataclass(frozen=True)
class FeaturePass:
    """What one pass over the rows gave: the terms, the bootstrap count forms (or
    ``None``) and the consistency test (or ``None``)."""

    terms: FeatureTerms
    forms: CountForms | None
    consistency: FeatureTestResult | None


def feature_skce_pass(features: FourierFeatures, x: NDArray[np.float64],
                      r: NDArray[np.float64], draw: RowDraw | None,
                      consistency_rng: np.random.Generator | None, n_consistency: int,
                      boot_rng: np.random.Generator | None, n_boot: int, *,
                      residual_scale: float = 1.0,
                      entries: int = CHUNK_ENTRIES) -> FeaturePass:
    """SKCE terms, bootstrap count forms and consistency null of the feature kernel from
    **one** pass (one ``Phi`` chunk and one GEMM per row chunk), columns ``[R | R* | C o R]``:

    * ``A = Phi^T R``: ``sum_{i,j} h_ij = |A|^2``;
    * consistency (``draw``, ``n_consistency`` columns per class): as
      :func:`feature_resampling_test`;
    * bootstrap counts ``C`` (multinomial, drawn chunk by chunk,
      :mod:`calaudit.numerics.chunked_bootstrap`), ``P_b = Phi^T (c_b o R)``:
      ``C^T H C = |P_b|^2``, ``C^T H 1 = <A, P_b>``, ``C . diag H = sum_i c_i |r_i|^2``,
      ``(C o C) . diag H`` and ``sum_i c_i^2`` (:class:`calaudit.inference.skce_tests.
      CountForms`, the Arcones-Gine replicates and the ``--ci`` intervals).
    """
    n, classes = r.shape[0], _layout(r)
    flat = np.asarray(r, dtype=np.float64).reshape(n, classes)
    q_cons = n_consistency if draw is not None else 0
    q_boot = n_boot if boot_rng is not None else 0
    per_class = 1 + q_cons + q_boot
    counts = ChunkedCounts(boot_rng, n, q_boot) if q_boot else None
    norms = np.empty(n)
    diag = np.einsum("ij,ij->i", flat, flat)
    acc = {key: np.zeros(q_boot) for key in ("diagonal", "squared", "ties")}

    def fill(start: int, stop: int, out: NDArray[np.float64]) -> None:
        diag[start:stop] *= norms[start:stop]
        view = out.reshape(stop - start, classes, per_class)
        rows = flat[start:stop]
        view[:, :, 0] = rows
        if q_cons:
            sampled = view[:, :, 1:1 + q_cons] if classes > 1 else view[:, 0, 1:1 + q_cons]
            draw(consistency_rng, start, stop, sampled)
            if residual_scale != 1.0:
                sampled *= residual_scale
        if q_boot:
            c = counts.next(stop - start)
            np.multiply(rows[:, :, None], c[:, None, :], out=view[:, :, 1 + q_cons:])
            c2 = c * c
            acc["diagonal"] += c.T @ diag[start:stop]
            acc["squared"] += c2.T @ diag[start:stop]
            acc["ties"] += c2.sum(axis=0)

    products, squares = feature_products(features, x, fill, classes * per_class, entries,
                                         norms=norms)
    products = products.reshape(-1, classes, per_class)
    lead = products[:, :, 0]
    terms = FeatureTerms(float(np.sum(lead * lead)), diag)
    consistency = None
    if q_cons:
        part = products[:, :, 1:1 + q_cons]
        sums = (np.einsum("dkb,dkb->b", part, part)
                - squares.reshape(classes, per_class)[:, 1:1 + q_cons].sum(axis=0))
        null = sums / (n * (n - 1))
        statistic = terms.unbiased
        consistency = FeatureTestResult(statistic, null, monte_carlo_pvalue(statistic, null),
                                        features.n_features)
    forms = None
    if q_boot:
        part = products[:, :, 1 + q_cons:]
        forms = CountForms(np.einsum("dkb,dkb->b", part, part), acc["diagonal"],
                           np.einsum("dk,dkb->b", lead, part), acc["squared"], acc["ties"], n)
    return FeaturePass(terms, forms, consistency)
