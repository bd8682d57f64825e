"""The INCONCLUSIVE rules of the global tests: a test that could not reject at ``alpha``
whatever the labels, or whose approximation has no footing, is INCONCLUSIVE (never PASS).
Each function returns ``None`` when the test may run, else the reason.

Rules: fewer than ``MIN_ROWS`` rows; a bound whose smallest p-value exceeds ``alpha``;
resampling with ``1 / (B + 1) > alpha``; the linear z-test with fewer than ``MIN_PAIRS``
pairs; the quadratic asymptotic test with fewer than ``MIN_ROWS_ASYMPTOTIC`` rows;
Spiegelhalter with fewer than ``MIN_EXPECTED`` expected events or non-events.
"""

from __future__ import annotations

import math

from numpy.typing import NDArray

from calaudit.numerics.resampling import monte_carlo_pvalue
from calaudit.results import Status, TestResult

MIN_ROWS = 10
MIN_PAIRS = 50
MIN_ROWS_ASYMPTOTIC = 50
MIN_EXPECTED = 5.0


def too_few_rows(n: int) -> str | None:
    if n < MIN_ROWS:
        return f"only {n} rows; at least {MIN_ROWS} are needed for any global test"
    return None


def bound_cannot_reject(smallest_p: float, alpha: float) -> str | None:
    if smallest_p > alpha:
        return (f"at this sample size the distribution-free bound cannot fall below "
                f"{smallest_p:.3g} > alpha = {alpha}: no data could reject")
    return None


def resampling_cannot_reject(n_resamples: int, alpha: float) -> str | None:
    if 1.0 / (n_resamples + 1) > alpha:
        return (f"with {n_resamples} resamples the smallest p-value is "
                f"1/{n_resamples + 1} > alpha = {alpha}; use more resamples")
    return None


def too_few_pairs(n_pairs: int) -> str | None:
    if n_pairs < MIN_PAIRS:
        return (f"only {n_pairs} pairs; the normal approximation of the linear estimator "
                f"needs at least {MIN_PAIRS} (n >= {2 * MIN_PAIRS})")
    return None


def too_few_for_asymptotics(n: int) -> str | None:
    if n < MIN_ROWS_ASYMPTOTIC:
        return (f"only {n} rows; the bootstrap approximation of the degenerate U-statistic "
                f"needs at least {MIN_ROWS_ASYMPTOTIC}")
    return None


def too_few_expected(events: float, non_events: float) -> str | None:
    if min(events, non_events) < MIN_EXPECTED:
        return (f"expected events {events:.3g} / non-events {non_events:.3g}: fewer than "
                f"{MIN_EXPECTED:g}, the normal approximation is unreliable")
    return None


def monte_carlo_result(test_id: str, observed: float, replicates: NDArray | None,
                       reason: str | None, method: str, params: dict, title: str
                       ) -> TestResult:
    """The result of a Monte-Carlo test: INCONCLUSIVE with ``reason`` (no replicates),
    else the p-value of ``observed`` among its ``replicates`` under the null."""
    if reason:
        return TestResult(test_id, math.nan, observed, math.nan, method, params=params,
                          status=Status.INCONCLUSIVE, message=reason, title=title)
    return TestResult(test_id, observed, observed, monte_carlo_pvalue(observed, replicates),
                      method, n_resamples=len(replicates), params=params,
                      null_distribution=replicates, title=title)
