"""Consistency tests of kernel calibration statistics through random Fourier features.

The statistic is the unbiased U-statistic of the *feature kernel*
``k_D(a, b) = phi(a) . phi(b)`` (:mod:`calaudit.numerics.features`), with residuals
``r_i = e_{y_i} - p_i`` (binary: a scalar),

    ``T_D = (|Phi^T R|_F^2 - sum_i |r_i|^2) / (n (n - 1)) = sum_{i != j} k_D(i, j) <r_i, r_j>
    / (n (n - 1))``

(``|phi_i| = 1``). Its null: the consistency test's label redraws ``y*_i ~ Cat(p_i)``
(Broecker & Smith 2007); given the frequencies ``T_D`` is a fixed function of the labels,
so the Monte-Carlo p-value is exact-conditional whatever ``D``. All resamples go through
one exact float32 GEMM per row block (:mod:`calaudit.inference.feature_passes`).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.inference.feature_passes import (
    bootstrap_shared,
    label_partial,
    label_rows,
    resample_partial,
    resample_statistics,
    shared_labels,
    statistics,
)
from calaudit.inference.method import MethodChoice
from calaudit.inference.skce_tests import CountForms
from calaudit.metrics.skce import KERNEL_DISTANCES, KernelChoice, SkceEstimators
from calaudit.numerics.block_draws import block_totals
from calaudit.numerics.features import (
    CHUNK_ENTRIES,
    FourierFeatures,
    feature_products,
    u_statistic_sums,
)
from calaudit.numerics.kernels import Gram, StationaryKernel
from calaudit.numerics.pairwise import as_columns, kernel_quadratic_forms
from calaudit.numerics.resampling import monte_carlo_pvalue
from calaudit.scale import (
    ROW_BLOCK,
    TASK_ROWS,
    ArrayRows,
    BlockTable,
    column_of,
    stream_seed,
    task_ranges,
)


@dataclass(frozen=True)
class FeatureTestResult:
    """``T_D``, its resampled null and the p-value."""

    statistic: float
    null_distribution: NDArray[np.float64]
    p_value: float
    n_features: int

    @classmethod
    def of(cls, values: NDArray[np.float64], n_features: int) -> FeatureTestResult:
        """The test of the observed ``values[0]`` against the redraws ``values[1:]``."""
        statistic, null = float(values[0]), values[1:]
        return cls(statistic, null, monte_carlo_pvalue(statistic, null), n_features)


def _rows_of(x: Any) -> Any:
    """The kernel's rows ``x`` as a row source column: float64, or kept as it is when it
    builds the rows a task reads (:class:`calaudit.local.kernel.ScaledRows`)."""
    column = column_of(x)
    return column if not isinstance(column, np.ndarray) else \
        np.asarray(column, dtype=np.float64)


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


#: Rows per block of the label check in :func:`observed_labels` (bounded temporaries).
LABEL_CHECK_ROWS = 1 << 18


def observed_labels(r: NDArray[np.float64], proba: NDArray[np.float64], scale: float = 1.0
                    ) -> tuple[NDArray[np.uint8], NDArray[np.float64], int]:
    """``(indicators, probability columns, label matrices)`` of label residuals
    ``r = scale (e_y - p)`` ((n,) binary with ``proba`` the positive-class probabilities,
    or (n, m)): the labels are ``r / scale + p``, checked block by block."""
    p = np.asarray(proba, dtype=np.float64)
    p = p[:, None] if p.ndim == 1 else p
    rr = np.asarray(r, dtype=np.float64).reshape(p.shape[0], -1)
    if rr.shape != p.shape:
        raise ValueError("residuals are not label residuals e_y - p of the probabilities")
    y = np.empty(p.shape, np.uint8)
    for start in range(0, p.shape[0], LABEL_CHECK_ROWS):
        stop = start + LABEL_CHECK_ROWS
        part, pp = rr[start:stop] / scale, p[start:stop]
        labels = np.rint(part + pp)
        if np.any(np.abs(part - (labels - pp)) > 1e-6) or np.any((labels != 0) & (labels != 1)):
            raise ValueError("residuals are not label residuals e_y - p of the probabilities")
        y[start:stop] = labels
    return y, p, 1 if p.shape[1] == 1 else p.shape[1]


def label_inputs(features: FourierFeatures, x: NDArray[np.float64], r: NDArray[np.float64],
                 proba: NDArray[np.float64], scale: float, seed: int, stream: str,
                 n_resamples: int) -> tuple[dict[str, NDArray], dict[str, Any]]:
    """``(columns, shared)`` of :func:`calaudit.inference.feature_passes.label_partial`."""
    observed, columns, labels = observed_labels(r, proba, scale)
    rows = label_rows(_rows_of(x), columns, observed)
    return rows, shared_labels(features, labels, seed, stream, n_resamples)


def reduce_rows(partial: Any, n: int, task_rows: int, rows: Any,
                shared: dict[str, Any]) -> dict[str, NDArray]:
    """``scale.map_sum`` of ``partial`` over ``task_ranges(n, task_rows)`` on ``rows``."""
    return scale.map_sum(partial, task_ranges(n, task_rows), {**shared, "rows": rows})


def reduce_columns(partial: Any, n: int, task_rows: int,
                   columns: dict[str, NDArray], shared: dict[str, Any]) -> dict[str, NDArray]:
    """:func:`reduce_rows` of the in-memory ``columns`` (placed by ``scale.resident``)."""
    with scale.resident(ArrayRows(columns)) as rows:
        return reduce_rows(partial, n, task_rows, rows, shared)


def feature_consistency_test(features: FourierFeatures, x: NDArray[np.float64],
                             r: NDArray[np.float64], proba: NDArray[np.float64],
                             rng: np.random.Generator, n_resamples: int, *,
                             residual_scale: float = 1.0, stream: str = "consistency",
                             task_rows: int = TASK_ROWS
                             ) -> FeatureTestResult:
    """Consistency test of ``T_D``: labels redrawn from ``proba`` ((n,) positive-class
    probabilities or (n, m)), predictions and covariates fixed. ``r`` are the observed
    label residuals times ``residual_scale`` (``sqrt(2)`` for a two-class SKCE through the
    scalar ``y - p_1``). Redraws from the streams ``(seed, stream, block)``, ``seed`` drawn
    from ``rng``."""
    n = np.asarray(r).shape[0]
    columns, shared = label_inputs(features, x, r, proba, residual_scale, stream_seed(rng),
                                   stream, n_resamples)
    total = reduce_columns(label_partial, n, task_rows, columns, shared)
    return FeatureTestResult.of(statistics(total, n, residual_scale), features.n_features)


def feature_bootstrap_test(features: FourierFeatures, x: NDArray[np.float64],
                           r: NDArray[np.float64], rng: np.random.Generator,
                           n_resamples: int, *, stream: str = "bootstrap",
                           task_rows: int = TASK_ROWS,
                           rows: Any = None) -> FeatureTestResult:
    """Residual bootstrap test of ``T_D`` (KLCE Algorithm 1): residuals drawn with
    replacement from all ``n`` observed residuals (:func:`calaudit.inference.
    feature_passes.resample_partial`). ``rows``: a placed row source with ``x`` as column
    ``"x"``, else ``x`` is placed here."""
    rr = np.asarray(r, dtype=np.float64)
    n = rr.shape[0]
    shared = {"features": features, "seed": stream_seed(rng), "stream": stream,
              "n_resamples": int(n_resamples)}
    with contextlib.ExitStack() as stack:
        if rows is None:
            rows = stack.enter_context(scale.resident(ArrayRows({"x": _rows_of(x)})))
        shared["r"] = stack.enter_context(scale.resident(rr.reshape(n, -1)))
        total = reduce_rows(resample_partial, n, task_rows, rows, shared)
    return FeatureTestResult.of(resample_statistics(total, n), features.n_features)


def approximation_error(features: FourierFeatures, x: NDArray[np.float64],
                        r: NDArray[np.float64], exact: Gram,
                        residual_scale: float = 1.0) -> dict:
    """``T_D`` against the exact U-statistic on the rows ``x`` (``exact`` their exact Gram),
    and the RMS and largest difference between the feature and exact kernels."""
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
    """Sums of the feature-kernel SKCE terms ``h_ij = k_D(i, j) <r_i, r_j>``: ``total =
    sum_{i,j} h_ij = |Phi^T R|^2`` and ``diagonal = [sum_i h_ii]`` over ``rows`` rows."""

    total: float
    diagonal: NDArray[np.float64]
    rows: int = 0

    @property
    def n(self) -> int:
        return self.rows or int(self.diagonal.size)


@dataclass(frozen=True)
class FeaturePass:
    """One pass's terms, bootstrap forms and kernel terms, and consistency test (or None)."""

    terms: FeatureTerms
    forms: CountForms | None
    consistency: FeatureTestResult | None
    boot_terms: FeatureTerms | None = None


def feature_skce_pass(features: FourierFeatures, x: NDArray[np.float64],
                      r: NDArray[np.float64], proba: NDArray[np.float64],
                      consistency_rng: np.random.Generator | None, n_consistency: int,
                      boot_rng: np.random.Generator | None, n_boot: int, *,
                      residual_scale: float = 1.0,
                      task_rows: int = TASK_ROWS) -> FeaturePass:
    """SKCE terms, bootstrap count forms and consistency null of the feature kernel from
    one exact pass (:func:`calaudit.inference.feature_passes.label_partial`): ``sum_{i,j}
    h_ij = |Phi^T R|^2``; the consistency null as :func:`feature_consistency_test` (stream
    ``skce_consistency``); bootstrap counts ``C`` (stream ``skce_bootstrap``) with
    ``P_b = Psi^T c_b``: ``C^T H C = |P_b|^2``, ``C^T H 1 = <Psi^T 1, P_b>`` and the other
    :class:`~calaudit.inference.skce_tests.CountForms`, the observed terms of the same
    rounded kernel in ``boot_terms``."""
    n = np.asarray(r).shape[0]
    b_cons = n_consistency if consistency_rng is not None else 0
    seed = stream_seed(consistency_rng) if consistency_rng is not None else 0
    columns, shared = label_inputs(features, x, r, proba, residual_scale, seed,
                                   "skce_consistency", b_cons)
    if boot_rng is not None and n_boot:
        boot_seed = stream_seed(boot_rng)
        columns["residuals"] = np.asarray(r, dtype=np.float64).reshape(n, -1)
        totals = BlockTable(block_totals(boot_seed, "skce_bootstrap", n, n_boot),
                            ROW_BLOCK, n)  # on Dask each row block's entries only
        shared.update(bootstrap_shared(features, columns["residuals"], totals, boot_seed,
                                       "skce_bootstrap"))
    total = reduce_columns(label_partial, n, task_rows, columns, shared)
    return finish_pass(features, total, n, residual_scale, b_cons)


def finish_pass(features: FourierFeatures, total: dict[str, NDArray], n: int,
                residual_scale: float, b_cons: int) -> FeaturePass:
    """The :class:`FeaturePass` of :func:`label_partial`'s summed partials."""
    lead = residual_scale * (total["G"][:, :, 0] - total["v"].sum(axis=2))
    diagonal = residual_scale ** 2 * (total["wy"][:, 0].sum() + total["c0"].sum())
    terms = FeatureTerms(float(np.sum(lead * lead)), np.array([float(diagonal)]), n)
    consistency = None
    if b_cons:
        consistency = FeatureTestResult.of(statistics(total, n, residual_scale),
                                           features.n_features)
    forms, boot_terms = None, None
    if "P" in total:
        part = total["P"][:, :, 1:]
        ones = total["P"][:, :, 0]
        forms = CountForms(np.einsum("kdb,kdb->b", part, part), total["bd"][:, 1:].sum(axis=0),
                           np.einsum("kd,kdb->b", ones, part), total["bsq"].sum(axis=0),
                           total["ties"], n)
        boot_terms = FeatureTerms(float(np.sum(ones * ones)),
                                  np.array([float(total["bd"][:, 0].sum())]), n)
    return FeaturePass(terms, forms, consistency, boot_terms)


def feature_map(choice: KernelChoice, y_proba: NDArray[np.float64], n_features: int,
                seed: int) -> tuple[FourierFeatures, NDArray[np.float64]]:
    """The random Fourier map of the prediction kernel ``choice`` (``n_features``
    frequencies drawn from ``seed``) and its inputs: ``y_proba``, or ``p_1`` alone for two
    classes (:data:`SkceFeatures.BINARY`)."""
    distance, factor, x = KERNEL_DISTANCES[choice.name], 1.0, y_proba
    if y_proba.shape[1] == 2:
        (distance, factor), x = SkceFeatures.BINARY[distance], y_proba[:, 1:2]
    return FourierFeatures.draw(distance, factor * choice.gamma, x.shape[1], n_features,
                                seed), np.ascontiguousarray(x, dtype=np.float64)


#: Rows of the subsample on which a features run compares its SKCE_uq with the exact one.
APPROXIMATION_ROWS = 2000


@dataclass(frozen=True)
class SkceFeatures:
    """The SKCE through random Fourier features of the prediction kernel. Two classes go
    through the scalar residual ``sqrt(2) (y - p_1)`` and the kernel on ``p_1`` alone
    (:data:`BINARY`: ``TV = |p_1 - q_1|``, ``|p - q|^2 = 2 (p_1 - q_1)^2``, ``|p - q|_1 =
    2 |p_1 - q_1|``)."""

    features: FourierFeatures
    x: np.ndarray
    full: np.ndarray
    r: np.ndarray
    proba: np.ndarray
    scale: float

    #: Two classes: the kernel on ``p_1`` equal to ``kernel(gamma)`` on ``(1 - p_1, p_1)``,
    #: as (distance, factor of gamma).
    BINARY = {"tv": ("l1", 1.0), "sqeuclidean": ("sqeuclidean", 2.0), "l1": ("l1", 2.0)}

    @classmethod
    def build(cls, choice: KernelChoice, computation: MethodChoice,
              y_proba: NDArray[np.float64], residuals: NDArray[np.float64]) -> SkceFeatures:
        full = np.asarray(y_proba, dtype=np.float64)
        features, x = feature_map(choice, full, computation.n_features,
                                  computation.frequency_seed)
        if full.shape[1] == 2:
            scale = math.sqrt(2.0)
            return cls(features, x, full, scale * residuals[:, 1], full[:, 1].copy(), scale)
        return cls(features, x, full, residuals, full, 1.0)

    def one_pass(self, consistency_rng: np.random.Generator | None,
                 boot_rng: np.random.Generator | None, n_resamples: int) -> FeaturePass:
        """Terms, bootstrap forms and consistency null (:func:`feature_skce_pass`)."""
        return feature_skce_pass(self.features, self.x, self.r, self.proba,
                                 consistency_rng, n_resamples, boot_rng, n_resamples,
                                 residual_scale=self.scale)

    def approximation(self, kernel: StationaryKernel, rng: np.random.Generator) -> dict:
        """Feature vs exact ``SKCE_uq`` on :data:`APPROXIMATION_ROWS` seeded rows."""
        n = self.x.shape[0]
        rows = (np.arange(n) if n <= APPROXIMATION_ROWS
                else np.sort(rng.choice(n, APPROXIMATION_ROWS, replace=False)))
        return approximation_error(self.features, self.x[rows], self.r[rows],
                                   kernel.on(self.full[rows]))
