"""When a global test cannot mean anything: the INCONCLUSIVE rules, in one place.

A test is INCONCLUSIVE (never PASS) when, for this data, it could not reject at level
``alpha`` whatever the labels, or when its approximation has no footing:

* every test: fewer than ``MIN_ROWS`` (10) rows;
* distribution-free bounds: the smallest p-value the bound can produce at this ``n``
  (estimate at its maximum ``B``) exceeds ``alpha`` (with ``alpha = 0.05`` this needs
  ``n >= 12``);
* resampling tests (quadratic asymptotic, consistency): the smallest Monte-Carlo p-value
  ``1 / (B + 1)`` exceeds ``alpha``;
* linear asymptotic (normal approximation of a mean of ``floor(n/2)`` pair terms): fewer
  than ``MIN_PAIRS`` (50) pairs, or all pair terms equal (no variance);
* quadratic asymptotic (bootstrap of a degenerate U-statistic, asymptotic in n): fewer than
  ``MIN_ROWS_ASYMPTOTIC`` (50) rows;
* Spiegelhalter (normal approximation): fewer than ``MIN_EXPECTED`` (5) expected events or
  expected non-events, or zero variance (every prediction 0, 1/2 or 1);
* Hosmer-Lemeshow: fewer than 3 groups (df < 1), or an expected count below 1 in some
  cell, or more than 20% of the cells with expected counts below 5 (the usual validity
  rule for the chi-square approximation).

Each function returns ``None`` when the test may run, else the reason (the test's message).
"""

from __future__ import annotations

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
