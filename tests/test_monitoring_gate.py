"""The e-process in the gate: its own share of alpha, its status is its alarm, and the
other primaries are graded at the rest (Bonferroni between the two)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from calaudit.audit.gate.decision import MONITOR_SHARE, grade_tests
from calaudit.audit.over_time import eprocess_test
from calaudit.monitoring import MonitorConfig, start, update
from calaudit.results import Status, TestResult


def monitored(shift: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    z = rng.normal(-1.0, 1.0, 20_000)
    y = (rng.uniform(size=z.size) < special.expit(z + shift)).astype(int)
    config = MonitorConfig(alpha=MONITOR_SHARE * 0.05, window="2000")
    return update(start(config), special.expit(z), y)


@pytest.mark.parametrize("shift", [0.0, 0.5])
def test_status_is_the_alarm_and_p_values_follow_it(shift):
    state = monitored(shift)
    test = eprocess_test(state, 0.05)
    alarm = state.alarm_window is not None
    assert alarm == (shift > 0)
    assert (test.status is Status.FAIL) == alarm
    assert (test.p_value_adjusted <= 0.05) == alarm
    assert test.p_value == pytest.approx(min(1.0, math.exp(-state.eprocess.max_log_value)))
    assert test.params["threshold"] == pytest.approx(1 / 0.025)


def test_other_primaries_get_the_rest_of_alpha():
    state = monitored(0.0)
    primary = TestResult("ece_consistency", 0.01, 0.01, 0.03, "m", n_resamples=999)
    graded = grade_tests([primary, eprocess_test(state, 0.05)], 0.05, "holm")
    ece, eproc = graded
    assert ece.alpha == pytest.approx(0.025)
    # p = 0.03 rejects at 0.05 alone, not at the 0.025 left beside the e-process
    assert ece.status is Status.PASS
    assert eproc.status is Status.PASS and eproc.role == "primary"
    alone = grade_tests([primary], 0.05, "holm")[0]
    assert alone.alpha == 0.05 and alone.status is Status.FAIL
