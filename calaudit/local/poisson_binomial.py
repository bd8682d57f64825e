"""Group calibration test: is the number of events consistent with the predictions?

Null: ``y_i ~ Bernoulli(p_i)`` independently, so ``S = sum_i y_i`` is Poisson-binomial.
Two-sided p-value ``min(1, 2 min(P(S <= s), P(S >= s)))``.

* ``n <= EXACT_MAX_ROWS``: exact, by the recursion ``P_i(k) = P_{i-1}(k) (1 - p_i) +
  P_{i-1}(k - 1) p_i``;
* larger groups: the refined normal approximation (RNA, Volkova 1996; Hong 2013):
  ``P(S <= k) ~ G((k + 0.5 - mu) / sigma)``, ``G(x) = Phi(x) + gamma (1 - x^2) phi(x) / 6``,
  ``mu = sum p``, ``sigma^2 = sum p (1 - p)``, ``gamma = sum p (1 - p)(1 - 2p) / sigma^3``,
  clipped to [0, 1].
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from calaudit.numerics.distributions import norm_cdf, norm_pdf

EXACT_MAX_ROWS = 3000


def _moments(p: NDArray[np.float64]) -> tuple[float, float, float]:
    """``sum p``, ``sum p (1 - p)`` and ``sum p (1 - p)(1 - 2p)`` (numpy's pairwise
    sums)."""
    variance = np.add.reduce(p * (1.0 - p))
    third = np.add.reduce(p * (1.0 - p) * (1.0 - 2.0 * p))
    return float(np.sum(p)), float(variance), float(third)


def _rna_cdf(k: float, p: NDArray[np.float64]) -> float:
    """Refined normal approximation of ``P(S <= k)``."""
    return rna_cdf(k, *_moments(p))


def rna_cdf(k: float, mean: float, variance: float, third: float,
            correction: float = 0.5) -> float:
    """The refined normal approximation ``G((k + correction - mean) / sigma)`` of
    ``P(S <= k)`` for a sum ``S`` with this mean, variance and third cumulant
    (``correction``: 0.5 for an integer sum, 0 for a sum that is not on a lattice)."""
    if variance <= 0:
        return 1.0 if k >= mean - 1e-9 else 0.0
    sigma = math.sqrt(variance)
    gamma = third / sigma ** 3
    x = (k + correction - mean) / sigma
    value = norm_cdf(x) + gamma * (1.0 - x * x) * norm_pdf(x) / 6.0
    return float(min(1.0, max(0.0, value)))


def poisson_binomial_pmf(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """``P(S = k)`` for ``k = 0..n`` by the exact recursion over the rows."""
    p = np.asarray(p, dtype=np.float64)
    pmf = np.zeros(p.size + 1)
    pmf[0] = 1.0
    for i, q in enumerate(p):
        pmf[1:i + 2] = pmf[1:i + 2] * (1.0 - q) + pmf[:i + 1] * q
        pmf[0] *= 1.0 - q
    return pmf


def tails(events: int, p: NDArray[np.float64], counts: NDArray | None = None
          ) -> tuple[float, float, str]:
    """``(P(S <= events), P(S >= events), method)``; ``counts``: row ``i`` stands for
    ``counts[i]`` rows with prediction ``p_i`` (the law of the repeated rows, exact up to
    ``EXACT_MAX_ROWS`` of them, its moments weighted by the counts above)."""
    p = np.asarray(p, dtype=np.float64)
    if counts is not None:
        c = np.asarray(counts, dtype=np.float64)
        if c.sum() <= EXACT_MAX_ROWS:
            return tails(events, np.repeat(p, c.astype(np.int64)))
        moments = (float(np.dot(c, p)), float(np.dot(c, p * (1.0 - p))),
                   float(np.dot(c, p * (1.0 - p) * (1.0 - 2.0 * p))))
        return (rna_cdf(events, *moments), 1.0 - rna_cdf(events - 1, *moments),
                "refined normal approximation")
    if p.size <= EXACT_MAX_ROWS:
        pmf = poisson_binomial_pmf(p)
        return (float(min(1.0, pmf[:events + 1].sum())), float(min(1.0, pmf[events:].sum())),
                "exact")
    return _rna_cdf(events, p), 1.0 - _rna_cdf(events - 1, p), "refined normal approximation"


def group_test(events: int, p: NDArray[np.float64], counts: NDArray | None = None
               ) -> tuple[float, str]:
    """Two-sided p-value of ``events`` under Poisson-binomial(``p``) (each row ``counts``
    times, :func:`tails`) and the method name."""
    lower, upper, method = tails(events, p, counts)
    return float(min(1.0, 2.0 * min(lower, upper))), method


def moment_test(events: int, mean: float, variance: float, third: float
                ) -> tuple[float, str]:
    """:func:`group_test` of a group known by its cumulant sums ``sum p``,
    ``sum p (1 - p)`` and ``sum p (1 - p)(1 - 2 p)`` (more than ``EXACT_MAX_ROWS`` rows):
    the refined normal approximation."""
    lower = rna_cdf(events, mean, variance, third)
    upper = 1.0 - rna_cdf(events - 1, mean, variance, third)
    return float(min(1.0, 2.0 * min(lower, upper))), "refined normal approximation"
