"""After an alarm: is a logistic recalibration enough, or is a refit due?

1. :func:`drift_start`: the start window ``j`` whose e-process term
   ``pi_j sum_k rho_k prod_{w=j..W} e_w(lambda_k)`` is largest begins the recent windows.
2. Fit ``logit q = a + b logit p`` (Cox 1958) on them but the last third (a single window
   is split in half); with a covariate also ``logit q = a_g + b logit p``, kept when its
   likelihood-ratio test (chi-square, ``G - 1`` df) rejects at ``alpha``.
3. Check on the held-out windows: the e-process restarted on ``q`` stays below
   ``1/alpha`` and the ``1 - alpha`` Wald intervals of CITL and slope of ``q`` (each group's,
   Bonferroni) contain 0 and 1.

``recalibrate`` when every check passes, ``refit`` when one fails, ``inconclusive`` when
the fit fails or the held-out rows have fewer than ``min_events`` (non-)events."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import special
from scipy.special import logsumexp

from calaudit.monitoring.eprocess import (
    LAMBDAS,
    EProcess,
    advance,
    combined_log_value,
    family_log_values,
    log_start_weight,
    psi,
)
from calaudit.monitoring.fits import Estimate, citl_fit, logit, newton_fit, slope_fit
from calaudit.numerics.distributions import chi2_sf

MIN_EVENTS = 10


@dataclass(frozen=True)
class Advice:
    """The verdict and its reason; the recalibration (``intercept``, ``slope``,
    ``group_intercepts``); the windows fitted and checked; the checks' CITL, slope and
    restarted e-process maximum."""

    verdict: str
    reason: str
    intercept: float = float("nan")
    slope: float = float("nan")
    covariate: str | None = None
    group_intercepts: tuple[tuple[str, float], ...] = ()
    fit_windows: tuple[int, ...] = ()
    check_windows: tuple[int, ...] = ()
    check_citl: Estimate = Estimate.missing()
    check_slope: Estimate = Estimate.missing()
    check_e_value: float = float("nan")
    group_names: tuple[str, ...] = ()

    def apply(self, p: NDArray[np.float64],
              codes: NDArray[np.int64] | None = None) -> NDArray[np.float64]:
        """The recalibrated probabilities ``expit(a (or a_g) + b logit p)``."""
        if self.group_intercepts:
            a = np.array([v for _, v in self.group_intercepts])[codes]
        else:
            a = self.intercept
        return special.expit(a + self.slope * logit(p))


def drift_start(s: NDArray[np.float64], v: NDArray[np.float64], n_groups: int) -> int:
    """The 1-based start window of the largest term of the e-process after the windows
    whose bet sums are ``s`` and ``v`` (windows x directions)."""
    tail_s = np.cumsum(s[::-1], axis=0)[::-1]
    tail_v = np.cumsum(v[::-1], axis=0)[::-1]
    log_terms = LAMBDAS * tail_s[..., None] - psi(LAMBDAS) * tail_v[..., None]
    directions = logsumexp(log_terms, axis=-1) - np.log(LAMBDAS.size)
    combined = combined_log_value(family_log_values(directions, n_groups))
    starts = np.arange(1, s.shape[0] + 1)
    return int(starts[np.argmax(combined + [log_start_weight(j) for j in starts])])


def advise(p: NDArray[np.float64], y: NDArray[np.float64], window: NDArray[np.int64], *,
           covariate: tuple[str, Sequence[str], NDArray[np.int64]] | None = None,
           alpha: float = 0.05, holdout: int | None = None,
           min_events: int = MIN_EVENTS) -> Advice:
    """The advice of the module docstring from the recent rows (``p``, ``y``, their
    window numbers ``window``, in time order; ``covariate``: name, levels, codes)."""
    fit_rows, check_rows, fit_w, check_w = _split(window, holdout)
    codes = covariate[2] if covariate else None
    model = _recalibration(p[fit_rows], y[fit_rows],
                           None if codes is None else codes[fit_rows],
                           covariate, alpha)
    if model is None:
        return Advice("inconclusive", "the recalibration could not be fitted on windows "
                      f"{_span(fit_w)} (too few events, or one class only).",
                      fit_windows=fit_w, check_windows=check_w)
    a, b, by_group = model
    base = Advice("", "", a, b, covariate[0] if covariate else None, by_group, fit_w,
                  check_w, group_names=tuple(covariate[1]) if covariate else ())
    yc = y[check_rows]
    if min(np.sum(yc), yc.size - np.sum(yc)) < min_events:
        return _with(base, "inconclusive", f"the held-out windows {_span(check_w)} have "
                     f"fewer than {min_events} events or non-events to check it on.")
    q = base.apply(p[check_rows], None if codes is None else codes[check_rows])
    return _check(base, q, yc, window[check_rows],
                  None if codes is None else codes[check_rows],
                  len(covariate[1]) if covariate else 0, alpha)


def _split(window: NDArray[np.int64], holdout: int | None
           ) -> tuple[NDArray, NDArray, tuple[int, ...], tuple[int, ...]]:
    numbers = tuple(int(w) for w in np.unique(window))
    if len(numbers) == 1:
        half = window.size // 2
        rows = np.arange(window.size)
        return rows[:half], rows[half:], numbers, numbers
    held = min(len(numbers) - 1, holdout or max(1, len(numbers) // 3))
    fit_w, check_w = numbers[:-held], numbers[-held:]
    check = np.isin(window, check_w)
    return np.flatnonzero(~check), np.flatnonzero(check), fit_w, check_w


def _recalibration(p: NDArray[np.float64], y: NDArray[np.float64],
                   codes: NDArray[np.int64] | None, covariate, alpha: float):
    """``(a, b, group_intercepts)``: the common fit, or per-group intercepts when their
    likelihood-ratio test rejects; None when the common fit fails."""
    common = slope_fit(p, y)
    if not common.converged:
        return None
    a, b = float(common.coef[0]), float(common.coef[1])
    if codes is None or len(covariate[1]) < 2:
        return a, b, ()
    levels = covariate[1]
    design = np.column_stack([(codes == g).astype(np.float64) for g in range(len(levels))]
                             + [logit(p)])
    present = design[:, :-1].any(axis=0)
    if not present.all():
        return a, b, ()
    grouped = newton_fit(design, y)
    if not grouped.converged:
        return a, b, ()
    statistic = 2.0 * (_loglik(design @ grouped.coef, y) -
                       _loglik(a + b * logit(p), y))
    if chi2_sf(float(statistic), len(levels) - 1) >= alpha:
        return a, b, ()
    intercepts = tuple((str(name), float(grouped.coef[g])) for g, name in enumerate(levels))
    return float("nan"), float(grouped.coef[-1]), intercepts


def _loglik(eta: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    return float(np.sum(y * eta - np.logaddexp(0.0, eta)))


def _check(base: Advice, q: NDArray[np.float64], y: NDArray[np.float64],
           window: NDArray[np.int64], codes: NDArray[np.int64] | None, n_groups: int,
           alpha: float) -> Advice:
    state = EProcess(n_groups)
    for w in np.unique(window):
        rows = window == w
        state, _ = advance(state, q[rows], y[rows],
                           [] if codes is None else [codes[rows]], alpha)
    citl = citl_fit(q, y).estimate(0, 1.0 - alpha)
    slope = slope_fit(q, y).estimate(1, 1.0 - alpha)
    done = Advice(**{**base.__dict__, "check_citl": citl, "check_slope": slope,
                     "check_e_value": float(np.exp(state.max_log_value))})
    held = _span(base.check_windows)
    failed = _group_failure(q, y, codes, n_groups, alpha, base.group_names)
    if state.alarm_window:
        return _with(done, "refit", f"the e-process restarted on the recalibrated "
                     f"predictions reaches {np.exp(state.max_log_value):.3g} >= 1/alpha "
                     f"in the held-out windows {held}.")
    for name, est, ideal in (("calibration-in-the-large", citl, 0.0),
                             ("calibration slope", slope, 1.0)):
        if not est.low <= ideal <= est.high:
            return _with(done, "refit", f"after recalibration the {name} in the held-out "
                         f"windows {held} is {est.value:.3g} ({100 * (1 - alpha):g} % CI "
                         f"{est.low:.3g} to {est.high:.3g}), not {ideal:g}.")
    if failed:
        return _with(done, "refit", f"after recalibration {failed} in the held-out "
                     f"windows {held}.")
    how = "with one intercept per group" if base.group_intercepts else "intercept and slope"
    return _with(done, "recalibrate", f"a logistic recalibration ({how}) fitted on windows "
                 f"{_span(base.fit_windows)} removes the drift in the held-out windows "
                 f"{held}.")


def _group_failure(q: NDArray[np.float64], y: NDArray[np.float64],
                   codes: NDArray[np.int64] | None, n_groups: int, alpha: float,
                   names: tuple[str, ...]) -> str:
    """The first group whose recalibrated CITL or slope interval (level ``1 - alpha /
    (2 G)``, Bonferroni over groups and the two checks) misses 0 or 1, described; ``''``
    when none does (groups with fewer than ``MIN_EVENTS`` events or non-events are
    skipped)."""
    level = 1.0 - alpha / (2 * max(n_groups, 1))
    for g in range(n_groups if codes is not None else 0):
        rows = codes == g
        events = float(np.sum(y[rows]))
        if min(events, np.count_nonzero(rows) - events) < MIN_EVENTS:
            continue
        for what, est, ideal in (("calibration-in-the-large",
                                  citl_fit(q[rows], y[rows]).estimate(0, level), 0.0),
                                 ("calibration slope",
                                  slope_fit(q[rows], y[rows]).estimate(1, level), 1.0)):
            if not est.low <= ideal <= est.high:
                return (f"the {what} of group {names[g]} is {est.value:.3g} "
                        f"(CI {est.low:.3g} to {est.high:.3g}), not {ideal:g},")
    return ""


def _with(advice: Advice, verdict: str, reason: str) -> Advice:
    return Advice(**{**advice.__dict__, "verdict": verdict, "reason": reason})


def _span(numbers: Sequence[int]) -> str:
    return f"{numbers[0]}" if len(numbers) == 1 or numbers[0] == numbers[-1] else \
        f"{numbers[0]}-{numbers[-1]}"
