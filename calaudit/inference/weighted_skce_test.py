"""The SKCE on weighted rows as a statistic of unit counts, and its consistency test
(docs/weights.md).

Row ``i`` holds ``d_i`` units (frequency weights, ``f_i = 1``) or one (design weights,
``f_i = d_i``); ``C_ik`` counts its units of label ``k``, each weighing ``f_i a_ik``
(``a_i0 = 1 / r_i`` for sampled negatives, else 1). With ``R_i = f_i sum_k C_ik a_ik (e_k -
p_i)``, ``A = sum_i f_i sum_k C_ik a_ik`` and ``S2 = sum_i f_i^2 sum_k C_ik a_ik^2``:
``SKCE_b = sum_{i,j} kappa_ij <R_i, R_j> / A^2`` and ``SKCE_uq = (sum_{i,j} kappa_ij <R_i,
R_j> - sum_units weight^2 ||e_y - p||^2) / (A^2 - S2)``, the U-statistic over pairs of
distinct units. The consistency test redraws the counts from the null law
(:func:`exact_null`; the test: :func:`calaudit.inference.weighted_skce_features.
weighted_skce`).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from calaudit.data.weights import SampleWeights
from calaudit.inference import applicability as rules
from calaudit.numerics.pairwise import kernel_quadratic_forms
from calaudit.numerics.resampling import categorical_draws

#: Redraws per engine pass.
BATCH = 100


def unit_weights(weights: SampleWeights, m: int) -> tuple[NDArray, NDArray]:
    """``f`` (n,) and ``a`` (n, m) of the module docstring."""
    factor = weights.unit_split()[1]
    per_class = np.ones((factor.size, m))
    if weights.negative_rate is not None:
        per_class[:, 0] = 1.0 / weights.negative_rate
    return factor, per_class


def null_law(weights: SampleWeights, y_proba: NDArray[np.float64]) -> NDArray[np.float64]:
    """(n, m) class probabilities of a sampled unit under the null."""
    if weights.negative_rate is None:
        return y_proba
    q = weights.null_positive_rate(y_proba[:, 1])
    return np.column_stack([1.0 - q, q])


def statistics(kernel_gram, y_proba: NDArray[np.float64], counts: NDArray[np.float64],
               factor: NDArray, per_class: NDArray) -> tuple[NDArray, NDArray]:
    """``(SKCE_b, SKCE_uq)`` for count arrays ``counts`` (n, m, q)."""
    weighted = counts * per_class[:, :, None]                         # C a
    mass = weighted.sum(axis=1)                                        # (n, q)
    residual = factor[:, None, None] * (weighted - mass[:, None, :] * y_proba[:, :, None])
    off = kernel_quadratic_forms(kernel_gram, residual, exclude_diagonal=True)
    own = (residual * residual).sum(axis=1).sum(axis=0)                # sum_i ||R_i||^2
    norms = 1.0 - 2.0 * y_proba + (y_proba * y_proba).sum(axis=1, keepdims=True)
    squares = (factor[:, None, None] ** 2 * counts * per_class[:, :, None] ** 2)
    units = (squares * norms[:, :, None]).sum(axis=(0, 1))
    total_weight = (factor[:, None] * mass).sum(axis=0)
    square_sum = squares.sum(axis=(0, 1))
    full = off + own
    with np.errstate(invalid="ignore", divide="ignore"):  # fewer than two units: NaN
        return full / total_weight ** 2, (full - units) / (total_weight ** 2 - square_sum)


def observed_counts(y_true: NDArray[np.int64], weights: SampleWeights, m: int
                    ) -> NDArray[np.float64]:
    """(n, m, 1) counts of the observed labels: ``d_i`` units (frequency) or one."""
    counts = np.zeros((y_true.size, m, 1))
    units = weights.unit_split()[0]
    counts[np.arange(y_true.size), y_true, 0] = units
    return counts


def redrawn_counts(rng: np.random.Generator, law: NDArray[np.float64],
                   weights: SampleWeights, q: int) -> NDArray[np.float64]:
    """(n, m, q) counts redrawn from ``law``: one unit per row (design weights), else
    ``Multinomial(d_i, law_i)`` (frequency weights)."""
    n, m = law.shape
    counts = np.zeros((n, m, q))
    if weights.kind != "frequency":
        labels = categorical_draws(rng, law, q)
        counts[np.arange(n)[:, None], labels, np.arange(q)[None, :]] = 1.0
        return counts
    units = weights.design.astype(np.int64)
    if m == 2:
        events = rng.binomial(units[:, None], law[:, 1, None], size=(n, q))
        counts[:, 1] = events
        counts[:, 0] = units[:, None] - events
        return counts
    for i in range(n):
        counts[i] = rng.multinomial(units[i], law[i], size=q).T
    return counts


def weighted_skce_values(kernel_gram, y_true: NDArray[np.int64],
                         y_proba: NDArray[np.float64], weights: SampleWeights
                         ) -> tuple[float, float]:
    """``(SKCE_b, SKCE_uq)`` of the observed weighted rows."""
    factor, per_class = unit_weights(weights, y_proba.shape[1])
    biased, unbiased = statistics(kernel_gram, y_proba,
                                  observed_counts(y_true, weights, y_proba.shape[1]),
                                  factor, per_class)
    return float(biased[0]), float(unbiased[0])


def consistency_reason(n: int, weights: SampleWeights, observed: float, n_resamples: int,
                       alpha: float) -> str | None:
    """Why the weighted consistency test is INCONCLUSIVE (None: it runs): besides the
    rules of every test, too few units (frequency) or rows of positive weight, or an
    undefined ``SKCE_uq``."""
    units = (float(weights.design.sum()) if weights.kind == "frequency"
             else int(np.count_nonzero(weights.design)))
    return (rules.too_few_rows(n)
            or (f"only {units:g} units of positive weight; at least {rules.MIN_ROWS} are "
                "needed for any global test" if units < rules.MIN_ROWS else None)
            or (None if math.isfinite(observed) else
                "the weighted SKCE_uq is undefined on these weights")
            or rules.resampling_cannot_reject(n_resamples, alpha))


def exact_null(kernel_gram, y_proba: NDArray[np.float64], weights: SampleWeights,
               n_resamples: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """``SKCE_uq`` of ``n_resamples`` redraws of the unit counts from the null law,
    :data:`BATCH` per engine pass."""
    factor, per_class = unit_weights(weights, y_proba.shape[1])
    law = null_law(weights, y_proba)
    return np.concatenate([
        statistics(kernel_gram, y_proba, redrawn_counts(
            rng, law, weights, min(BATCH, n_resamples - start)), factor, per_class)[1]
        for start in range(0, n_resamples, BATCH)])
