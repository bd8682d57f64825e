"""Gate logic: thresholds, the INCONCLUSIVE rule, the verdict and the exit code."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calaudit.audit.config import AuditConfig, GateConfig, ThresholdConfig
from calaudit.audit.gate import (
    ExitCode,
    apply_data_rule,
    data_rule,
    exit_code,
    grade_metrics,
    result_checks,
    threshold_status,
    verdict,
)
from calaudit.audit.runner import count_events, run_audit
from calaudit.audit.stages import StageOutput
from calaudit.data.dataset import CalibrationData
from calaudit.exceptions import ConfigError
from calaudit.results import MetricResult, Status, TestResult

S = Status


@pytest.mark.parametrize("value, threshold, expected", [
    (0.02, ThresholdConfig("ece", warn=0.03, fail=0.05), S.PASS),
    (0.03, ThresholdConfig("ece", warn=0.03, fail=0.05), S.PASS),     # equal: good side
    (0.04, ThresholdConfig("ece", warn=0.03, fail=0.05), S.WARN),
    (0.05, ThresholdConfig("ece", warn=0.03, fail=0.05), S.WARN),
    (0.051, ThresholdConfig("ece", warn=0.03, fail=0.05), S.FAIL),
    (0.051, ThresholdConfig("ece", fail=0.05), S.FAIL),
    (0.04, ThresholdConfig("ece", fail=0.05), S.PASS),
    (0.9, ThresholdConfig("ece", warn=0.05), S.WARN),                 # warn only: never FAIL
    (0.7, ThresholdConfig("auc", warn=0.8, fail=0.6, better="higher"), S.WARN),
    (0.5, ThresholdConfig("auc", warn=0.8, fail=0.6, better="higher"), S.FAIL),
    (0.85, ThresholdConfig("auc", warn=0.8, fail=0.6, better="higher"), S.PASS),
    (0.9, ThresholdConfig("brier_resolution", fail=0.1), S.PASS),      # registry: higher
    (1.15, ThresholdConfig("calibration_slope", warn=0.1, fail=0.2), S.WARN),  # |1.15 - 1|
    (0.75, ThresholdConfig("calibration_slope", warn=0.1, fail=0.2), S.FAIL),
    (0.95, ThresholdConfig("calibration_slope", warn=0.1, fail=0.2), S.PASS),
    (0.12, ThresholdConfig("x", warn=0.05, target=0.1), S.PASS),
    (float("nan"), ThresholdConfig("ece", fail=0.05), S.ERROR),
    (None, ThresholdConfig("ece", fail=0.05), S.ERROR),
    (3, ThresholdConfig("count", fail=2.5, better="lower"), S.FAIL),                   # int values
])
def test_threshold_status(value, threshold, expected):
    status, message = threshold_status(value, threshold)
    assert status is expected
    assert message


def test_threshold_message_names_level():
    assert threshold_status(0.06, ThresholdConfig("ece", warn=0.03, fail=0.05))[1] == (
        "ece = 0.06 > 0.05 (fail level)")
    assert threshold_status(0.5, ThresholdConfig("auc", fail=0.6, better="higher"))[1] == (
        "auc = 0.5 < 0.6 (fail level)")


@pytest.mark.parametrize("kwargs, message", [
    ({"warn": 0.1, "fail": 0.05}, r"warn \(0.1\) must be below fail"),
    ({"warn": 0.5, "fail": 0.6, "better": "higher"}, "must be above fail"),
    ({"better": "sideways"}, "better must be one of"),
    ({"target": 1.0, "better": "lower"}, "either target or better"),
    ({"fail": float("inf")}, "finite number"),
    ({"tolerance": -1.0}, "tolerance must be >= 0"),
    ({"warn": -0.1, "target": 1.0}, "must be >= 0"),
])
def test_threshold_validation(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        ThresholdConfig("ece", **kwargs)


def test_duplicate_thresholds_are_refused():
    with pytest.raises(ConfigError, match="more than one entry for ece"):
        AuditConfig(thresholds=(ThresholdConfig("ece", fail=0.1), ThresholdConfig("ece")))


def test_grade_metrics_sets_status_and_reports_unmatched():
    metrics = (MetricResult("ece", 0.06), MetricResult("mce", 0.2), MetricResult("brier", 0.1))
    thresholds = (ThresholdConfig("ece", warn=0.03, fail=0.05),
                  ThresholdConfig("brier", tolerance=0.01), ThresholdConfig("klce2", fail=0.1))
    graded, unmatched = grade_metrics(metrics, thresholds)
    assert [m.status for m in graded] == [S.FAIL, None, None]   # tolerance only: not graded
    assert graded[0].threshold == {"warn": 0.03, "fail": 0.05, "better": "lower", "target": None}
    assert graded[0].to_dict()["status"] == "FAIL"
    assert "status" not in graded[1].to_dict()
    assert unmatched == ({"metric": "klce2", "status": "SKIPPED",
                          "message": "threshold on 'klce2', which this audit did not "
                                     "compute: computed only with covariates (--covariates)"},)


def test_data_rule_turns_pass_into_inconclusive_only():
    rule = data_rule(30, 4, GateConfig(min_rows=50, min_events=5))
    assert not rule["enough_data"]
    assert rule["message"] == ("30 rows < gate.min_rows = 50; 4 events < gate.min_events = 5: "
                               "too little data to report PASS")
    metrics = (MetricResult("ece", 0.01, status=S.PASS, message="ok"),
               MetricResult("mce", 0.9, status=S.FAIL), MetricResult("brier", 0.2))
    tests = (TestResult("t1", 1.0, 0.1, 0.5, "m", status=S.PASS),
             TestResult("t2", 1.0, 0.1, 0.001, "m", status=S.FAIL))
    new_metrics, new_tests = apply_data_rule(metrics, tests, rule)
    assert [m.status for m in new_metrics] == [S.INCONCLUSIVE, S.FAIL, None]
    assert new_metrics[0].message.startswith("ok; 30 rows")
    assert [t.status for t in new_tests] == [S.INCONCLUSIVE, S.FAIL]
    assert apply_data_rule(metrics, tests, data_rule(100, 10, GateConfig())) == (metrics, tests)


def test_count_events_binary_and_multiclass():
    binary = CalibrationData.from_arrays(np.array([0, 1, 1, 1]), np.array([0.2, 0.6, 0.7, 0.9]))
    assert count_events(binary) == 1
    proba = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.6, 0.2, 0.2]])
    multi = CalibrationData.from_arrays(np.array([0, 1, 0, 0]), proba)
    assert count_events(multi) == 1  # 3 top-label hits, 1 miss


@pytest.mark.parametrize("statuses, fail_on, expected_verdict, expected_code", [
    ([], ("FAIL", "ERROR"), S.NO_CHECKS, 0),
    (["PASS", "PASS"], ("FAIL", "ERROR"), S.PASS, 0),
    (["PASS", "WARN"], ("FAIL", "ERROR"), S.WARN, 0),
    (["PASS", "WARN"], ("FAIL", "WARN"), S.FAIL, 1),
    (["INCONCLUSIVE", "WARN"], ("FAIL", "ERROR"), S.WARN, 0),
    (["INCONCLUSIVE"], ("FAIL", "INCONCLUSIVE"), S.FAIL, 1),
    (["ERROR"], ("FAIL",), S.ERROR, 0),
    (["ERROR"], ("FAIL", "ERROR"), S.FAIL, 1),
    (["SKIPPED", "PASS"], ("FAIL", "ERROR"), S.PASS, 0),
])
def test_verdict_and_exit_code(statuses, fail_on, expected_verdict, expected_code):
    assert verdict(statuses, fail_on) is expected_verdict
    assert exit_code(statuses, fail_on) == expected_code
    assert exit_code(statuses, fail_on, exit_zero=True) == ExitCode.OK


def test_exit_code_values_are_the_contract():
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 130, 143]


# ------------------------------------------------------------------ through the runner

class FakeStage:
    """A stage with fixed metrics and tests, to exercise the gate without statistics."""

    name = "fake"

    def __init__(self, metrics=(), tests=()):
        self.metrics, self.tests = tuple(metrics), tuple(tests)

    def run(self, data, config, rng):
        return StageOutput(metrics=self.metrics, tests=self.tests)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.95, 400)
    return CalibrationData.from_arrays((rng.uniform(size=400) < p).astype(int), p)


def test_runner_verdict_counts_metric_statuses(data):
    stage = FakeStage(metrics=[MetricResult("ece", 0.08)],
                      tests=[TestResult("skce_consistency", 1.0, 0.1, 0.5, "m")])
    config = AuditConfig(thresholds=(ThresholdConfig("ece", warn=0.03, fail=0.05),))
    result = run_audit(data, config, stages=(stage,))
    assert result.verdict is S.FAIL
    payload = result.to_dict()
    assert payload["metrics"][0]["status"] == "FAIL"
    assert payload["gate"]["failing"] == [{"kind": "metric", "id": "ece", "status": "FAIL"}]
    assert payload["gate"]["counts"] == {"PASS": 1, "FAIL": 1}
    assert verdict([c.status for c in result_checks(payload)], config.fail_on) is result.verdict


def test_runner_tests_gate_at_alpha_after_adjustment(data):
    tests = [TestResult("a", 1.0, 0.1, 0.03, "m"), TestResult("b", 1.0, 0.1, 0.5, "m")]
    # custom tests, every one gating and adjusted together (scope "battery")
    result = run_audit(data, AuditConfig(alpha=0.05, multiple_testing_scope="battery"),
                       stages=(FakeStage(tests=tests),))
    # Holm: 0.03 * 2 = 0.06 > 0.05, so not rejected after adjustment.
    assert [t.status for t in result.tests] == [S.PASS, S.PASS]
    assert math.isclose(result.tests[0].p_value_adjusted, 0.06)
    result = run_audit(data, AuditConfig(alpha=0.05, multiple_testing="none",
                                         multiple_testing_scope="battery"),
                       stages=(FakeStage(tests=tests),))
    assert [t.status for t in result.tests] == [S.FAIL, S.PASS]
    # default scope: the family's first (custom) test is its primary, alone in Holm
    result = run_audit(data, AuditConfig(alpha=0.05), stages=(FakeStage(tests=tests),))
    assert [t.role for t in result.tests] == ["primary", "diagnostic"]


def test_runner_inconclusive_rule_with_few_rows():
    small = CalibrationData.from_arrays(np.array([0, 1] * 10), np.full(20, 0.5))
    stage = FakeStage(metrics=[MetricResult("ece", 0.01)],
                      tests=[TestResult("t", 1.0, 0.1, 0.9, "m")])
    config = AuditConfig(thresholds=(ThresholdConfig("ece", fail=0.05),))
    result = run_audit(small, config, stages=(stage,))
    assert result.metrics[0].status is S.INCONCLUSIVE
    assert result.tests[0].status is S.INCONCLUSIVE
    assert result.verdict is S.INCONCLUSIVE
    assert result.gate["data_rule"]["enough_data"] is False
    lenient = AuditConfig(thresholds=config.thresholds, gate=GateConfig(min_rows=10, min_events=2))
    assert run_audit(small, lenient, stages=(stage,)).verdict is S.PASS


def test_runner_unmatched_threshold_is_a_skipped_check(data):
    config = AuditConfig(thresholds=(ThresholdConfig("klce2", fail=0.01),))
    result = run_audit(data, config, stages=(FakeStage(metrics=[MetricResult("ece", 0.01)]),))
    assert result.verdict is S.PASS
    checks = result_checks(result.to_dict())
    assert [(c.kind, c.id, c.status) for c in checks] == [("threshold", "klce2", "SKIPPED")]
