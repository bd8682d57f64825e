"""Calibration tests of the SKCE estimators (Widmann et al. 2019, sec. 6, app. G-H); null:
canonical calibration; all right-tailed.

* Distribution-free bounds (Lemma 2, Theorems H.2-H.4), ``B = 2 sup kappa = 2``: unbiased
  ``p <= exp(-floor(n/2) (T/B)^2 / 2)`` for ``T > 0``; biased ``p <= exp(-max(0, sqrt(n T /
  B) - 1)^2 / 2)``.
* Linear asymptotic test (Lemma 3): ``z = sqrt(floor(n/2)) SKCE_ul / sd(h_{2i-1,2i})``,
  ``p = 1 - Phi(z)``, the sd dividing by ``floor(n/2)`` (CalibrationTests.jl
  ``AsymptoticBlockSKCETest``).
* Quadratic asymptotic test (Theorem G.2), the bootstrap of Arcones & Gine (1992) as
  CalibrationTests.jl ``AsymptoticSKCETest``: ``T = n/(n-1) SKCE_uq - SKCE_b``; with
  bootstrap counts ``C``, ``T* = (C^T H C - C . diag H) / (n (n-1)) - 2 C^T H 1 / n^2``;
  p-value ``(1 + #{T* >= T}) / (1 + B)`` (CalibrationTests.jl: ``#{T* >= T} / B``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.metrics.skce import QuadraticTerms
from calaudit.numerics.distributions import norm_sf
from calaudit.numerics.kernels import Gram
from calaudit.numerics.pairwise import kernel_forms_and_matmul
from calaudit.scale import task_ranges

#: ``B = 2 sup kappa`` for the bounded kernels of :mod:`calaudit.metrics.skce`.
UNIFORM_BOUND = 2.0


def bound_pvalue_unbiased(estimate: float, n: int, bound: float = UNIFORM_BOUND, *,
                          convention: str = "one-sided") -> float:
    """Hoeffding bound ``exp(-floor(n/2) (T/B)^2 / 2)`` for ``SKCE_uq`` or ``SKCE_ul``.

    The bound holds for ``T > 0``; for ``T <= 0`` the right-tail p-value is bounded only
    by 1, which is what ``convention="one-sided"`` (default) returns.
    ``convention="calibrationtests"`` applies the formula to negative estimates too, as
    CalibrationTests.jl ``DistributionFreeSKCETest`` does (used for conformance only).
    """
    if convention == "one-sided" and estimate <= 0:
        return 1.0
    return math.exp(-(n // 2) * estimate * estimate / (2.0 * bound * bound))


def bound_pvalue_biased(estimate: float, n: int, bound: float = UNIFORM_BOUND) -> float:
    """McDiarmid bound ``exp(-max(0, sqrt(n T / B) - 1)^2 / 2)`` for ``SKCE_b``."""
    s = max(0.0, math.sqrt(max(n * estimate / bound, 0.0)) - 1.0)
    return math.exp(-s * s / 2.0)


def smallest_bound_pvalue(n: int, estimator: str, bound: float = UNIFORM_BOUND) -> float:
    """The smallest p-value a bound test can give at ``n`` (estimate ``= B``, its largest
    value since ``|h_ij| <= B``); above alpha the test is INCONCLUSIVE."""
    if estimator == "b":
        return bound_pvalue_biased(bound, n, bound)
    return bound_pvalue_unbiased(bound, n, bound)


@dataclass(frozen=True)
class LinearTest:
    """Asymptotic test of ``SKCE_ul`` (or of a block estimator)."""

    estimate: float
    stderr: float
    z: float
    p_value: float
    n_terms: int


@dataclass(frozen=True)
class LinearTerms:
    """A linear estimator's terms (``SKCE_ul``'s pairs, ``SKCE_block``'s blocks) as their
    count, mean and sum of squared deviations ``m2``: each fixed range's (``per_range``
    terms, :func:`calaudit.scale.task_ranges`) from its terms, the ranges combined in
    range order (Chan, Golub & LeVeque 1979: ``delta = mean_b - mean_a``, ``m2 = m2_a +
    m2_b + delta^2 k_a k_b / k``), so a row source's tasks send three numbers, not their
    terms."""

    count: int
    mean: float
    m2: float

    @classmethod
    def of(cls, terms: NDArray[np.float64], per_range: int) -> LinearTerms:
        """The summary of ``terms`` (all of them in memory)."""
        parts = (range_terms(terms[a:b]) for a, b in task_ranges(terms.size, per_range))
        return combine_terms(parts)


def range_terms(terms: NDArray[np.float64]) -> dict[str, NDArray]:
    """One range's count, mean and sum of squared deviations."""
    k = terms.size
    mean = float(terms.sum()) / k if k else 0.0
    return {"summary": np.array([k, mean, float(np.sum((terms - mean) ** 2))])}


def combine_terms(parts: Any) -> LinearTerms:
    """The :class:`LinearTerms` of the ranges' summaries, combined in range order."""
    count, mean, m2 = 0, 0.0, 0.0
    for part in parts:
        k, part_mean, part_m2 = part["summary"]
        if not k:
            continue
        if not count:
            count, mean, m2 = int(k), float(part_mean), float(part_m2)
            continue
        total = count + int(k)
        delta = float(part_mean) - mean
        mean += delta * k / total
        m2 += float(part_m2) + delta * delta * count * k / total
        count = total
    return LinearTerms(count, mean if count else math.nan, m2)


def linear_asymptotic_test(terms: LinearTerms) -> LinearTest:
    """``z = mean / (sd / sqrt(k))`` with ``sd`` dividing by ``k`` (k = number of terms),
    ``p = 1 - Phi(z)``. ``z`` is NaN when all terms are equal (``sd = 0``)."""
    k = terms.count
    estimate = terms.mean
    sd = math.sqrt(terms.m2 / k)
    stderr = sd / math.sqrt(k)
    if stderr == 0.0:
        return LinearTest(estimate, stderr, math.nan, math.nan, k)
    z = estimate / stderr
    return LinearTest(estimate, stderr, z, float(norm_sf(z)), k)


def quadratic_statistic(terms: QuadraticTerms) -> float:
    """``n/(n-1) SKCE_uq - SKCE_b = (alpha sum_{i!=j} h_ij - sum_i h_ii) / n^2`` with
    ``alpha = (2n - 1)/(n - 1)^2`` (CalibrationTests.jl ``estimate_statistic``)."""
    n = terms.n
    alpha = (2 * n - 1) / (n - 1) ** 2
    return (alpha * terms.off_diagonal - float(terms.diagonal.sum())) / (n * n)


@dataclass(frozen=True)
class CountForms:
    """Count-weighted sums of ``H`` for a batch of bootstrap resamples (arrays (q,))."""

    quadratic: NDArray[np.float64]   # C^T H C (diagonal included)
    diagonal: NDArray[np.float64]    # C . diag H
    linear: NDArray[np.float64]      # C^T H 1
    squared: NDArray[np.float64]     # (C o C) . diag H
    ties: NDArray[np.float64]        # sum_i C_i^2
    n: int

    @property
    def unbiased(self) -> NDArray[np.float64]:
        """``SKCE_uq`` of each resample (pairs of distinct draws)."""
        return (self.quadratic - self.diagonal) / (self.n * (self.n - 1))

    @property
    def unbiased_untied(self) -> NDArray[np.float64]:
        """``SKCE_uq`` over pairs of draws of *different* rows,
        ``sum_{i != j} C_i C_j h_ij / sum_{i != j} C_i C_j``: the resample's U-statistic
        without the ``h_ii`` terms that repeated draws would add (used for intervals); NaN
        for a resample that drew a single row ``n`` times."""
        pairs = self.n * self.n - self.ties
        out = np.full(pairs.shape, np.nan)
        np.divide(self.quadratic - self.squared, pairs, out=out, where=pairs > 0)
        return out

    @property
    def biased(self) -> NDArray[np.float64]:
        """``SKCE_b`` of each resample."""
        return self.quadratic / (self.n * self.n)

    @property
    def arcones_gine(self) -> NDArray[np.float64]:
        """Bootstrap replicates ``T*`` of :func:`quadratic_statistic`."""
        return self.unbiased - 2.0 * self.linear / (self.n * self.n)


#: Precision of the bootstrap's count-weighted products ``H C``. Counts are small integers
#: (exact in float32); rounding ``H`` to float32 changes the replicates ``T*`` by about
#: ``1e-11`` on CIFAR-10 (n = 10,000), against a null standard deviation of ``4e-6``, and
#: halves the cost of the dominant GEMM. Estimates and observed statistics stay float64.
BOOTSTRAP_GEMM_DTYPE = np.float32


def count_forms(gram: Gram, terms: QuadraticTerms, counts: NDArray[np.float64],
                quadratic: NDArray[np.float64] | None = None) -> CountForms:
    """The count forms of one batch (``quadratic`` = ``C^T H C`` when already computed)."""
    if quadratic is None:
        quadratic, _ = kernel_forms_and_matmul(gram, counts, exclude_diagonal=False,
                                               dtype=BOOTSTRAP_GEMM_DTYPE)
    squared = counts * counts
    return CountForms(quadratic, counts.T @ terms.diagonal, counts.T @ terms.row_sums,
                      squared.T @ terms.diagonal, squared.sum(axis=0), terms.n)


def bootstrap_pass(gram: Gram, counts: NDArray[np.float64]
                   ) -> tuple[QuadraticTerms, CountForms]:
    """The quadratic terms (``H 1``, ``diag H``) and a first batch's count forms in one
    engine pass."""
    quadratic, row_sums = kernel_forms_and_matmul(gram, counts, np.ones((gram.n, 1)),
                                                  exclude_diagonal=False,
                                                  dtype=BOOTSTRAP_GEMM_DTYPE,
                                                  matmul_dtype=np.float64)
    terms = QuadraticTerms(row_sums[:, 0], gram.diagonal())
    return terms, count_forms(gram, terms, counts, quadratic)

