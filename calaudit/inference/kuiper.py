"""Kuiper's test of calibration: the range of the cumulative calibration residuals.

Arrieta-Ibarra, Gujral, Tannenbaum & Tygert, JMLR 23 (2022), sec. 2. With scores ``s``
ascending (ties in row order) and outcomes ``y`` (binary: the label against ``p_1``;
otherwise top-label), ``C_k = (1 / n) sum_{j <= k} (y_j - s_j)``, ``C_0 = 0``, and ``K =
max_k C_k - min_k C_k``; the reported statistic is ``K / sigma``, ``sigma = sqrt(sum_j s_j
(1 - s_j)) / n``. Consistency-resampling p-value: ``y*_j ~ Bernoulli(s_j)``,
``p = (1 + #{K* >= K}) / (1 + B)``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from calaudit import registry
from calaudit.metrics.ece import default_notion, scores_and_outcomes
from calaudit.numerics.resampling import monte_carlo_pvalue
from calaudit.results import TestResult

#: Entries of one batch of redrawn outcome columns (n x columns).
BATCH_ENTRIES = 4_000_000
METHOD = ("consistency resampling: outcomes redrawn from the scores, "
          "p = (1 + #{K* >= K}) / (1 + B)")


def kuiper_ranges(residuals: NDArray[np.float64]) -> NDArray[np.float64]:
    """``max_k C_k - min_k C_k`` (with ``C_0 = 0``) of each column of sorted residuals
    (n,) or (n, q), ``C_k`` the cumulative sums divided by n."""
    cumulative = np.cumsum(residuals, axis=0) / residuals.shape[0]
    return np.maximum(cumulative.max(axis=0), 0.0) - np.minimum(cumulative.min(axis=0), 0.0)


def kuiper_test(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *,
                n_resamples: int = 1000, rng: np.random.Generator) -> TestResult:
    """Kuiper's test of "the model is calibrated" (module docstring); ``y_proba`` (n, m)."""
    notion = default_notion(y_proba.shape[1])
    scores, outcomes = scores_and_outcomes(y_true, y_proba, notion)
    order = np.argsort(scores, kind="stable")
    s, y = scores[order], outcomes[order]
    observed = float(kuiper_ranges(y - s))
    sigma = math.sqrt(float(np.sum(s * (1.0 - s)))) / s.size
    step = max(1, BATCH_ENTRIES // max(s.size, 1))
    null = np.concatenate([
        kuiper_ranges((rng.random((s.size, q)) < s[:, None]) - s[:, None])
        for q in (min(step, n_resamples - done) for done in range(0, n_resamples, step))])
    statistic = observed / sigma if sigma > 0 else math.nan
    params = {"notion": notion, "sigma": sigma, "statistic": "K / sigma",
              "estimate": "K = max_k C_k - min_k C_k"}
    return TestResult("kuiper", statistic, observed, monte_carlo_pvalue(observed, null),
                      METHOD, n_resamples=n_resamples, params=params, null_distribution=null,
                      title=registry.title("kuiper", notion))
