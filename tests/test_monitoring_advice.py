"""Recalibrate or refit (calaudit.monitoring.advice) on drifts with a known answer."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from calaudit.monitoring.advice import advise, drift_start
from calaudit.monitoring.monitor import MonitorConfig, start, update

LEVELS = ("0", "1", "2", "3")


def stream(truth, seed=0, windows=12, rows=3000):
    """``truth(logit, window, group) -> probability``; drift from window 7 on."""
    rng = np.random.default_rng(seed)
    logit = rng.normal(-1.0, 1.0, windows * rows)
    window = np.repeat(np.arange(1, windows + 1), rows)
    group = rng.integers(0, 4, logit.size)
    q = truth(logit, window, group)
    y = (rng.uniform(size=q.size) < q).astype(float)
    return special.expit(logit), y, window, group


def recent_advice(p, y, window, group, with_groups=True):
    cfg = MonitorConfig(window=int(np.sum(window == 1)), groups=(("g", LEVELS),), n_boot=2)
    state = update(start(cfg), p, y.astype(int), covariates={"g": group.astype(str)})
    s = np.array([r.s for r in state.history])
    v = np.array([r.v for r in state.history])
    first = drift_start(s, v, len(LEVELS))
    rows = window >= first
    covariate = ("g", LEVELS, group[rows]) if with_groups else None
    return state, first, advise(p[rows], y[rows], window[rows], covariate=covariate)


def test_stable_shift_is_recalibrated():
    p, y, window, group = stream(lambda z, w, g: special.expit(z + 0.4 * (w >= 7)))
    state, first, advice = recent_advice(p, y, window, group)
    assert state.eprocess.alarm_window >= 7 and first == 7
    assert advice.verdict == "recalibrate", advice.reason
    assert advice.intercept == pytest.approx(0.4, abs=0.1)
    assert advice.slope == pytest.approx(1.0, abs=0.1)
    assert advice.fit_windows == (7, 8, 9, 10) and advice.check_windows == (11, 12)


def test_drift_that_keeps_growing_needs_a_refit():
    p, y, window, group = stream(
        lambda z, w, g: special.expit(z + 0.25 * np.maximum(w - 6, 0)))
    _, _, advice = recent_advice(p, y, window, group)
    assert advice.verdict == "refit"
    assert "held-out windows" in advice.reason


def test_one_group_drifting_is_recalibrated_by_group():
    p, y, window, group = stream(
        lambda z, w, g: special.expit(z + 0.6 * ((w >= 7) & (g == 2))))
    _, _, advice = recent_advice(p, y, window, group)
    assert advice.verdict == "recalibrate", advice.reason
    intercepts = dict(advice.group_intercepts)
    assert intercepts["2"] == pytest.approx(0.6, abs=0.15)
    assert "one intercept per group" in advice.reason
    q = advice.apply(np.array([0.5, 0.5]), np.array([2, 0]))
    assert q[0] == pytest.approx(special.expit(intercepts["2"]))


def test_slopes_drifting_apart_by_group_need_a_refit():
    p, y, window, group = stream(lambda z, w, g: special.expit(
        np.where(w >= 7, np.where(g < 2, 1.6, 0.6), 1.0) * (z + 1) - 1))
    _, _, advice = recent_advice(p, y, window, group)
    assert advice.verdict == "refit"
    assert "group" in advice.reason


def test_too_few_events_is_inconclusive():
    rng = np.random.default_rng(3)
    p = np.full(200, 0.01)
    y = (rng.uniform(size=200) < 0.05).astype(float)
    advice = advise(p, y, np.repeat([1, 2], 100))
    assert advice.verdict == "inconclusive"
