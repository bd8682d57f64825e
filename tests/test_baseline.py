"""Baseline comparisons: regressions, directions, tolerances, mismatches, transitions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from calaudit.audit.config import AuditConfig, BaselineConfig, ThresholdConfig
from calaudit.audit.gate import baseline_checks
from calaudit.audit.gate.baseline import compare_results, config_differences, read_result
from calaudit.audit.runner import run_audit
from calaudit.audit.stages import StageOutput
from calaudit.data.dataset import CalibrationData
from calaudit.exceptions import InputError
from calaudit.results import MetricResult, Status, TestResult


def metric(id, value, ci=None, status=None, **params):
    out = {"id": id, "value": value, "ci": ci, "params": params}
    if status:
        out["status"] = status
    return out


def result(*metrics, tests=(), config=None, classes=("0", "1")):
    return {"schema_version": 1, "calaudit_version": "0.1.0", "created_at": "2026-01-01T00:00:00Z",
            "config": config or {"alpha": 0.05}, "data": {"classes": list(classes)},
            "inputs": {}, "verdict": "PASS", "metrics": list(metrics), "tests": list(tests)}


def compare(old, new, **config):
    return compare_results(old, new, AuditConfig(**config))


def by_label(section):
    return {e["label"]: e for e in section["metrics"]}


def test_lower_is_better_regression_and_tolerance():
    old = result(metric("ece", 0.02), metric("mce", 0.10), metric("brier", 0.20))
    new = result(metric("ece", 0.035), metric("mce", 0.105), metric("brier", 0.15))
    section = compare(old, new)
    entries = by_label(section)
    assert entries["ece"]["status"] == "FAIL"
    assert entries["ece"]["worse_by"] == pytest.approx(0.015)
    assert entries["ece"]["message"] == "regression: worse by 0.015 > tolerance 0.01"
    assert entries["mce"]["status"] == "PASS"
    assert "within tolerance" in entries["mce"]["message"]
    assert entries["brier"]["status"] == "PASS" and entries["brier"]["message"] == "better by 0.05"
    assert section["regressions"] == 1 and section["status"] == "FAIL"


def test_tolerance_boundary_is_not_a_regression():
    section = compare(result(metric("ece", 0.25)), result(metric("ece", 0.26)),
                      baseline=BaselineConfig(tolerance=0.01))
    assert by_label(section)["ece"]["status"] == "PASS"


def test_relative_and_per_metric_tolerance():
    old, new = result(metric("ece", 0.2)), result(metric("ece", 0.23))
    assert by_label(compare(old, new))["ece"]["status"] == "FAIL"
    relaxed = compare(old, new, baseline=BaselineConfig(tolerance=0.01,
                                                        relative_tolerance=0.2))
    assert by_label(relaxed)["ece"]["tolerance"] == pytest.approx(0.04)
    assert by_label(relaxed)["ece"]["status"] == "PASS"
    per_metric = compare(old, new, thresholds=(ThresholdConfig("ece", tolerance=0.05),))
    assert by_label(per_metric)["ece"]["status"] == "PASS"
    strict = compare(old, result(metric("ece", 0.2001)),
                     thresholds=(ThresholdConfig("ece", tolerance=0.0),))
    assert by_label(strict)["ece"]["status"] == "FAIL"


def test_higher_and_target_directions():
    old = result(metric("brier_resolution", 0.05), metric("calibration_slope", 1.02),
                 metric("auc", 0.80))
    new = result(metric("brier_resolution", 0.03), metric("calibration_slope", 0.95),
                 metric("auc", 0.70))
    entries = by_label(compare(old, new, baseline=BaselineConfig(tolerance=0.01),
                               thresholds=(ThresholdConfig("auc", better="higher"),)))
    assert entries["brier_resolution"]["status"] == "FAIL"       # higher is better: dropped
    assert entries["calibration_slope"]["worse_by"] == pytest.approx(0.03)  # |.95-1| - |1.02-1|
    assert entries["calibration_slope"]["status"] == "FAIL"
    assert entries["auc"]["status"] == "FAIL" and entries["auc"]["better"] == "higher"


def test_metrics_without_direction_are_informational_not_checks():
    section = compare(result(metric("weird", 1.0), metric("brier_uncertainty", 0.2)),
                      result(metric("weird", 2.0), metric("brier_uncertainty", 0.25)))
    assert section["metrics"] == []
    assert [e["id"] for e in section["informational"]] == ["weird", "brier_uncertainty"]
    assert baseline_checks(section) == []


def test_ci_separation_rule():
    old = result(metric("ece", 0.02, ci=[0.01, 0.04]))
    overlapping = result(metric("ece", 0.035, ci=[0.025, 0.05]))
    separated = result(metric("ece", 0.06, ci=[0.05, 0.07]))
    rule = BaselineConfig(require_ci_separation=True)
    assert by_label(compare(old, overlapping, baseline=rule))["ece"]["status"] == "PASS"
    assert by_label(compare(old, overlapping))["ece"]["status"] == "FAIL"
    assert by_label(compare(old, separated, baseline=rule))["ece"]["status"] == "FAIL"


def test_settings_mismatch_refuses_or_warns():
    old = result(metric("ece", 0.02, n_bins=15, bins_used=12, bandwidth=0.31))
    new = result(metric("ece", 0.02, n_bins=10, bins_used=9, bandwidth=0.29))
    entry = by_label(compare(old, new))["ece"]
    assert entry["status"] == "ERROR"
    assert entry["message"] == "not compared: settings differ: n_bins 15 -> 10"
    warned = by_label(compare(old, new, baseline=BaselineConfig(on_mismatch="warn")))["ece"]
    assert warned["status"] == "WARN"
    same = result(metric("ece", 0.05, n_bins=15, bins_used=3, bandwidth=0.5))
    assert by_label(compare(old, same))["ece"]["status"] == "FAIL"  # compared: worse by 0.03
    ignore = BaselineConfig(ignore_params=("bins_used", "n_bins"))
    assert by_label(compare(old, new, baseline=ignore))["ece"]["status"] == "PASS"


def test_different_classes_are_an_input_error():
    old = result(metric("ece", 0.02), classes=("no", "yes"))
    new = result(metric("ece", 0.02), classes=("0", "1"))
    with pytest.raises(InputError, match="classes differ"):
        compare(old, new)


def test_missing_metrics_and_non_finite_values():
    old = result(metric("ece", 0.02), metric("mce", 0.1), metric("brier", None))
    new = result(metric("ece", None), metric("brier", 0.2), metric("skce_uq", 0.001))
    entries = by_label(compare(old, new))
    assert entries["ece"]["status"] == "ERROR"
    assert entries["mce"] == {**entries["mce"], "status": "SKIPPED",
                              "message": "not in the new result"}
    assert entries["skce_uq"]["message"] == "not in the baseline"
    assert entries["brier"]["status"] == "SKIPPED"


def test_repeated_ids_pair_by_settings():
    old = result(metric("ece", 0.02, notion="top-label"), metric("ece", 0.03, notion="classwise"))
    new = result(metric("ece", 0.05, notion="classwise"), metric("ece", 0.02, notion="top-label"))
    entries = by_label(compare(old, new))
    assert entries["ece[notion=classwise]"]["status"] == "FAIL"
    assert entries["ece[notion=top-label]"]["status"] == "PASS"


def test_check_transitions():
    tests_old = [{"id": "t1", "status": "PASS"}, {"id": "t2", "status": "FAIL"},
                 {"id": "t3", "status": "FAIL"}]
    tests_new = [{"id": "t1", "status": "FAIL"}, {"id": "t2", "status": "PASS"},
                 {"id": "t3", "status": "FAIL"}, {"id": "t4", "status": "ERROR"}]
    old = result(metric("ece", 0.02, status="PASS"), tests=tests_old)
    new = result(metric("ece", 0.02, status="WARN"), tests=tests_new)
    checks = compare(old, new)["checks"]
    assert [(c["id"], c["status"], c["message"]) for c in checks] == [
        ("t1", "FAIL", "newly failing: PASS -> FAIL"),
        ("t2", "PASS", "fixed: FAIL -> PASS"),
        ("t4", "FAIL", "newly failing: not in the baseline, ERROR"),
    ]
    # WARN in fail-on: the metric's WARN is newly failing too
    checks = compare(old, new, fail_on=("FAIL", "WARN"))["checks"]
    assert ("ece", "FAIL") in [(c["id"], c["status"]) for c in checks]


def test_config_differences_leave_out_gate_settings():
    old = {"alpha": 0.05, "binning": {"n_bins": 15}, "fail_on": ["FAIL"], "thresholds": []}
    new = {"alpha": 0.05, "binning": {"n_bins": 10}, "fail_on": ["WARN"],
           "thresholds": [{"metric": "ece"}]}
    assert config_differences(old, new) == [{"key": "binning.n_bins", "old": 15, "new": 10}]


def test_read_result_refuses_what_is_not_a_result(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        read_result(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(InputError, match="not valid JSON"):
        read_result(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text('{"a": 1}')
    with pytest.raises(InputError, match="not a calaudit JSON result"):
        read_result(tmp_path / "other.json")
    (tmp_path / "future.json").write_text(json.dumps({**result(), "schema_version": 99}))
    with pytest.raises(InputError, match="newer than this calaudit"):
        read_result(tmp_path / "future.json")
    (tmp_path / "ok.json").write_text(json.dumps(result(metric("ece", 0.1))))
    loaded = read_result(tmp_path / "ok.json")
    assert loaded.path.endswith("ok.json") and len(loaded.sha256) == 64


class FixedStage:
    name = "fixed"

    def __init__(self, value):
        self.value = value

    def run(self, data, config, rng):
        return StageOutput(metrics=(MetricResult("ece", self.value, {"n_bins": 15}),),
                           tests=(TestResult("t", 1.0, 0.1, 0.5, "m"),))


def test_runner_attaches_baseline_and_counts_regressions_in_the_verdict(tmp_path):
    rng = np.random.default_rng(1)
    p = rng.uniform(0.1, 0.9, 300)
    data = CalibrationData.from_arrays((rng.uniform(size=300) < p).astype(int), p)
    released = run_audit(data, AuditConfig(), stages=(FixedStage(0.02),)).to_dict()
    path = tmp_path / "released.json"
    path.write_text(json.dumps(released))
    candidate = run_audit(data, AuditConfig(), stages=(FixedStage(0.05),),
                          baseline=read_result(path))
    assert candidate.verdict is Status.FAIL
    section = candidate.to_dict()["baseline"]
    assert section["path"] == str(path) and section["regressions"] == 1
    assert candidate.gate["failing"] == [{"kind": "baseline", "id": "ece", "status": "FAIL"}]
    same = run_audit(data, AuditConfig(), stages=(FixedStage(0.02),), baseline=released)
    assert same.verdict is Status.PASS
    assert "baseline" not in run_audit(data, AuditConfig(), stages=(FixedStage(0.02),)).to_dict()
