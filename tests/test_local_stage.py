"""The local-calibration stage end to end: statuses, JSON shape, determinism, edge cases."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calaudit.audit.config import AuditConfig, LocalConfig
from calaudit.audit.local_calibration import LocalCalibrationStage
from calaudit.audit.runner import run_audit as run_full_audit
from calaudit.data.dataset import CalibrationData
from calaudit.exceptions import ConfigError
from calaudit.results import Status, to_json

SAMPLE = Path(__file__).parent.parent / "sample_data"
ALL_TESTS = ("local_consistency", "klce_consistency", "klce_bootstrap", "klce_permutation")


def run_audit(data, config):
    """The local stage alone (the full battery's Holm adjustment is tested elsewhere)."""
    return run_full_audit(data, config, stages=(LocalCalibrationStage(),))


def credit(rows=None, covariates=("age", "race")):
    frame = pd.read_csv(SAMPLE / "credit_default.csv")
    frame = frame.iloc[:rows] if rows else frame
    return CalibrationData.from_arrays(frame["label"].to_numpy(), frame["prob"].to_numpy(),
                                       covariates={c: frame[c].to_numpy() for c in covariates})


def config(**local):
    local.setdefault("n_resamples", 60)
    local.setdefault("group_ci_resamples", 200)
    return AuditConfig(local=LocalConfig(**local))


@pytest.fixture(scope="module")
def small_result():
    return run_audit(credit(600), config(tests=ALL_TESTS, max_points=100, curve_points=9))


def test_local_test_flags_the_group_bias_that_global_calibration_hides():
    result = run_audit(credit(covariates=("race",)), config(n_resamples=99))
    test = result.test("local_consistency")
    assert test.status == Status.FAIL and test.p_value == pytest.approx(0.01)
    assert result.verdict == Status.FAIL
    by = {g["group"]: g for g in result.groups}
    assert by["race=A"]["bias"] > 0.03 and by["race=B"]["bias"] < -0.03
    assert by["race=A"]["status"] == "FAIL" and by["race=B"]["status"] == "FAIL"
    assert by["race=C"]["status"] == "PASS"
    assert result.local["lcb"]["top_groups"][0]["group"] in ("race=A", "race=B")


def test_json_shape_follows_the_schema(small_result):
    payload = json.loads(to_json(small_result))
    assert [t["id"] for t in payload["tests"]] == list(ALL_TESTS)
    klce = payload["local"]["klce"]
    for key in ("covariates", "encoding", "prob_kernel", "cov_kernel", "statistic", "tests",
                "hoeffding"):
        assert key in klce
    assert klce["tests"] == list(ALL_TESTS)
    assert set(klce["hoeffding"]) >= {"alpha", "threshold", "reject", "bound"}
    assert klce["prob_kernel"]["type"] == "gaussian" and klce["cov_kernel"]["source"] in (
        "median", "median per covariate")
    lcb = payload["local"]["lcb"]
    assert set(lcb["summary"]) >= {"mean", "mean_abs", "sd", "min", "max", "quantiles"}
    (curve,) = lcb["curves"]
    assert curve["covariate"] == "age" and curve["group_by"] == "race"
    assert {g["group"] for g in curve["groups"]} == {"A", "B", "C"}
    assert all(len(g["x"]) == len(g["lcb"]) == len(g["low"]) == len(g["high"]) == 9
               for g in curve["groups"])
    points = lcb["points"]
    assert len(points["lcb"]) == 100 and len(points["covariate_values"]["age"]) == 100
    assert set(points["group"]["race"]) <= {"A", "B", "C"}
    row = payload["groups"][0]
    for key in ("group", "kind", "covariates", "n", "events", "mean_prediction",
                "observed_rate", "bias", "bias_ci", "mean_lcb", "test", "p_value",
                "p_value_adjusted", "status", "message"):
        assert key in row
    assert payload["metrics"][-1]["id"] == "klce2"
    assert payload["config"]["local"]["tests"] == list(ALL_TESTS)


def test_statistics_agree_and_nulls_are_recorded(small_result):
    metric = small_result.metric("klce2").value
    for test_id in ("klce_consistency", "klce_bootstrap"):
        test = small_result.test(test_id)
        assert test.statistic == metric
        assert test.params["resample_dtype"] == "float32"
        assert test.null_distribution.shape == (60,)
        assert 1 / 61 <= test.p_value <= 1
    perm = small_result.test("klce_permutation")
    assert perm.params["normalisation"] == "(n - 1) / n * sum_{i,j} K_ij"
    assert perm.params["prob_kernel"]["kite_prob_kernel_width"] == 0.1
    assert perm.p_value >= 1 / 60


def test_same_seed_same_numbers_and_streams_are_independent():
    data = credit(400)
    a = run_audit(data, config(tests=ALL_TESTS))
    b = run_audit(data, config(tests=ALL_TESTS))
    assert np.array_equal(a.test("klce_consistency").null_distribution,
                          b.test("klce_consistency").null_distribution)
    assert a.groups == b.groups
    c = run_audit(data, config(tests=("local_consistency", "klce_consistency")))
    assert np.array_equal(a.test("klce_consistency").null_distribution,
                          c.test("klce_consistency").null_distribution)
    assert a.groups == c.groups
    d = run_audit(data, AuditConfig(seed=1, local=LocalConfig(n_resamples=60,
                                                               tests=ALL_TESTS)))
    assert not np.array_equal(a.test("klce_consistency").null_distribution,
                              d.test("klce_consistency").null_distribution)


def test_no_covariates_no_local_section():
    frame = pd.read_csv(SAMPLE / "credit_default.csv").iloc[:200]
    data = CalibrationData.from_arrays(frame["label"].to_numpy(), frame["prob"].to_numpy())
    result = run_audit(data, config())
    assert result.local == {} and result.groups == ()
    assert all(m.id != "klce2" for m in result.metrics)


def test_estimates_only_mode_runs_no_local_test():
    result = run_audit(credit(300), AuditConfig(run_tests=False))
    assert result.tests == () and result.local["klce"]["tests"] == []
    assert result.metric("klce2").value == pytest.approx(result.local["klce"]["statistic"])
    conclusive = [g for g in result.groups if g["status"] != "INCONCLUSIVE"]
    assert conclusive and all(g["bias_ci"] is not None for g in conclusive)


def test_too_small_sample_is_inconclusive():
    result = run_audit(credit(20), config(tests=ALL_TESTS))
    assert {t.status for t in result.tests} == {Status.INCONCLUSIVE}
    assert "20 rows < min_group_rows 30" in result.tests[0].message
    assert result.verdict == Status.INCONCLUSIVE
    json.loads(to_json(result))  # NaN p-values become null


def test_double_precision_resampling_gives_the_same_decisions():
    data = credit(500)
    single = run_audit(data, config(tests=ALL_TESTS[:2]))
    double = run_audit(data, config(tests=ALL_TESTS[:2], resample_dtype="float64"))
    for test_id in ALL_TESTS[:2]:
        a, b = single.test(test_id), double.test(test_id)
        assert a.p_value == b.p_value and a.statistic == b.statistic
        assert np.allclose(a.null_distribution, b.null_distribution, rtol=1e-4)


def test_explicit_bandwidths_are_used():
    result = run_audit(credit(300), config(prob_bandwidth=0.05, cov_bandwidth=0.7))
    klce = result.local["klce"]
    assert klce["prob_kernel"]["bandwidth"] == 0.05 and klce["prob_kernel"]["source"] == "option"
    assert klce["cov_kernel"]["gamma"] == pytest.approx(1 / (2 * 0.49))


def test_multiclass_per_class_view_and_top_label_groups():
    arrays = np.load(SAMPLE / "image_classifier.npz")
    probs, labels = arrays["probs"][:300], arrays["labels"][:300]
    group = np.where(np.arange(300) % 2 == 0, "even", "odd")
    data = CalibrationData.from_arrays(labels, probs, covariates={"g": group})
    result = run_audit(data, config(n_resamples=20))
    per_class = result.local["klce"]["per_class"]
    assert len(per_class) == 10 and all(0 < r["p_value"] <= 1 for r in per_class)
    assert result.local["lcb"]["view"] == "top-label"
    assert result.local["klce"]["hoeffding"]["bound"] == 2.0
    even = next(g for g in result.groups if g["group"] == "g=even")
    rows = np.arange(0, 300, 2)
    confidence = probs[rows].max(axis=1)
    assert even["mean_prediction"] == pytest.approx(confidence.mean())
    assert even["events"] == int((probs[rows].argmax(1) == labels[rows]).sum())
    assert result.local["lcb"]["curves"] == []


def test_config_validation():
    with pytest.raises(ConfigError):
        LocalConfig(tests=("klce_magic",))
    with pytest.raises(ConfigError):
        LocalConfig(prob_bandwidth=0.0)
    with pytest.raises(ConfigError):
        LocalConfig(group_adjust="sidak")
    with pytest.raises(ConfigError):
        LocalConfig(n_resamples=0)
    with pytest.raises(ConfigError):
        LocalConfig(tests="klce_bootstrap")
    with pytest.raises(ConfigError):
        LocalConfig(resample_dtype="float16")
    assert LocalConfig(tests=["klce_bootstrap", "klce_bootstrap"]).tests == ("klce_bootstrap",)
    import dataclasses
    assert all("help" in f.metadata for f in dataclasses.fields(LocalConfig))
