"""The global battery through run_audit and the command line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from calaudit.audit.config import GLOBAL_TESTS, AuditConfig, GlobalTestsConfig, SkceConfig
from calaudit.audit.runner import run_audit
from calaudit.cli.app import app
from calaudit.data.dataset import CalibrationData
from calaudit.exceptions import ConfigError
from calaudit.results import Status

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"
SKCE_TESTS = {"skce_b_bound", "skce_uq_bound", "skce_ul_bound", "skce_ul_asymptotic",
              "skce_uq_asymptotic", "skce_consistency"}


def multiclass(n=150, m=4, seed=0, miscalibrated=False):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(m, 0.3), size=n)
    labels = (rng.random(n)[:, None] >= np.cumsum(probs, axis=1)[:, :-1]).sum(axis=1)
    if miscalibrated:
        labels = np.where(rng.random(n) < 0.5, labels, 0)
    return CalibrationData(probs, labels, tuple("abcd"[:m]))


def binary(n=300, seed=1):
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    y = (rng.random(n) < p).astype(int)
    return CalibrationData(np.column_stack([1 - p, p]), y, ("0", "1"))


def small_config(**kwargs):
    return AuditConfig(n_resamples=99, **kwargs)


def test_binary_battery_ids_and_statuses():
    result = run_audit(binary(), small_config(
        global_tests=GlobalTestsConfig(tests=GLOBAL_TESTS[:-1], hosmer_lemeshow=True)))
    metric_ids = [m.id for m in result.metrics]
    for expected in ("ece", "mce", "brier", "brier_binary", "ece_l2", "ece_classwise",
                     "ece_canonical", "ece_debiased", "brier_reliability", "brier_resolution",
                     "brier_uncertainty", "log_loss", "calibration_in_the_large",
                     "calibration_slope", "skce_b", "skce_uq", "skce_ul", "skce_block"):
        assert expected in metric_ids
    test_ids = {t.id for t in result.tests}
    assert test_ids == SKCE_TESTS | {"ece_consistency", "spiegelhalter", "hosmer_lemeshow"}
    for test in result.tests:
        assert test.status in (Status.PASS, Status.FAIL, Status.INCONCLUSIVE)
        if test.status != Status.INCONCLUSIVE:
            assert 0 < test.p_value <= 1 and test.p_value_adjusted >= test.p_value
    assert result.metric("calibration_in_the_large").ci is not None  # Wald
    json.dumps(result.to_dict(), allow_nan=False)


def test_multiclass_has_no_binary_only_checks():
    result = run_audit(multiclass(), small_config(
        global_tests=GlobalTestsConfig(tests=GLOBAL_TESTS[:-1])))
    ids = {t.id for t in result.tests}
    assert ids == SKCE_TESTS | {"ece_consistency"}
    assert "calibration_slope" not in {m.id for m in result.metrics}


def test_miscalibrated_model_fails_quadratic_tests():
    result = run_audit(multiclass(n=250, miscalibrated=True), AuditConfig(n_resamples=199))
    assert result.test("skce_uq_asymptotic").status == Status.FAIL
    assert result.test("skce_consistency").status == Status.FAIL
    assert result.test("skce_uq_asymptotic").p_value == pytest.approx(1 / 200)


def test_same_seed_same_numbers_and_independent_streams():
    data = multiclass(seed=3)
    a = run_audit(data, small_config(seed=7))
    b = run_audit(data, small_config(seed=7))
    assert [t.p_value for t in a.tests] == [t.p_value for t in b.tests]
    only_consistency = run_audit(data, small_config(
        seed=7, global_tests=GlobalTestsConfig(tests=("skce_consistency",))))
    assert only_consistency.test("skce_consistency").p_value == a.test("skce_consistency").p_value


def test_small_n_is_inconclusive_with_a_message():
    result = run_audit(multiclass(n=11), small_config(
        global_tests=GlobalTestsConfig(tests=GLOBAL_TESTS[:-1])))
    for test_id in ("skce_b_bound", "skce_uq_bound", "skce_ul_asymptotic",
                    "skce_uq_asymptotic"):
        test = result.test(test_id)
        assert test.status == Status.INCONCLUSIVE and test.message
    assert result.verdict != Status.PASS
    few = run_audit(multiclass(n=200), AuditConfig(n_resamples=10))
    assert few.test("skce_consistency").status == Status.INCONCLUSIVE


def test_large_n_exact_skips_quadratic_estimators():
    config = small_config(skce=SkceConfig(max_quadratic_n=100), method="exact")
    result = run_audit(multiclass(n=150), config)
    assert math.isnan(result.metric("skce_uq").value)
    assert result.test("skce_uq_asymptotic").status == Status.SKIPPED
    assert result.test("skce_ul_asymptotic").status == Status.PASS
    params = result.metric("skce_ul").params
    assert params["bandwidth_source"] == "median_subsample"


def test_large_n_auto_runs_quadratic_tests_through_features():
    config = small_config(skce=SkceConfig(max_quadratic_n=100),
                          global_tests=GlobalTestsConfig(tests=GLOBAL_TESTS[:-1]))
    result = run_audit(multiclass(n=150), config)
    assert math.isfinite(result.metric("skce_uq").value)
    for test_id in ("skce_uq_asymptotic", "skce_consistency", "skce_uq_bound"):
        test = result.test(test_id)
        assert test.status != Status.SKIPPED
        assert test.params["computation"]["method"] == "features"
        assert test.params["computation"]["reason"] == "n > skce.max_quadratic_n = 100"
    assert "computation" not in result.metric("skce_ul").params


def test_metrics_only_runs_no_tests_and_no_intervals():
    result = run_audit(binary(), AuditConfig(run_tests=False, ci=True))
    assert result.tests == ()
    assert all(m.ci is None or m.params.get("ci_method") == "wald" for m in result.metrics)


def test_ci_intervals_for_every_metric():
    result = run_audit(binary(n=200), small_config(ci=True))
    for metric in result.metrics:
        assert metric.ci is not None, metric.id
        assert metric.ci[0] <= metric.ci[1]
        assert metric.params["ci_method"] == "percentile bootstrap"


def test_explicit_bandwidth_and_kernels():
    data = multiclass(n=60)
    for kernel in ("exponential", "gaussian", "laplacian"):
        result = run_audit(data, AuditConfig(run_tests=False,
                                             skce=SkceConfig(kernel=kernel, bandwidth=0.5)))
        params = result.metric("skce_uq").params
        assert params["kernel"] == kernel and params["gamma"] == 2.0
        assert params["bandwidth_source"] == "option"


@pytest.mark.parametrize("kwargs", [{"kernel": "cosine"}, {"bandwidth": 0.0},
                                    {"blocksize": 1}])
def test_bad_skce_settings_raise_config_error(kwargs):
    with pytest.raises(ConfigError):
        SkceConfig(**kwargs)


def test_unknown_global_test_is_a_config_error():
    with pytest.raises(ConfigError):
        GlobalTestsConfig(tests=("skce_magic",))


def test_cli_test_and_metrics(tmp_path):
    runner = CliRunner()
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["test", str(SAMPLE / "credit_default.csv"), "--n-resamples",
                                 "50", "--kernel", "laplacian", "--bandwidth", "0.2",
                                 "--hosmer-lemeshow", "--json", str(out), "--exit-zero"])
    assert result.exit_code == 0, result.output
    payload = json.loads(out.read_text())
    assert payload["config"]["skce"]["kernel"] == "laplacian"
    assert payload["config"]["n_resamples"] == 50
    assert "hosmer_lemeshow" in {t["id"] for t in payload["tests"]}
    metrics = runner.invoke(app, ["metrics", str(SAMPLE / "credit_default.csv"), "--json", "-"])
    assert metrics.exit_code == 0, metrics.output
    assert json.loads(metrics.output)["tests"] == []
    bad = runner.invoke(app, ["metrics", str(SAMPLE / "credit_default.csv"), "--kernel", "x"])
    assert bad.exit_code == 2


@pytest.mark.parametrize("n", [2, 4])
def test_tiny_data_with_ci_runs_without_warnings(n):
    rng = np.random.default_rng(n)
    p = rng.random(n)
    data = CalibrationData(np.column_stack([1 - p, p]), np.arange(n) % 2, ("0", "1"))
    result = run_audit(data, small_config(ci=True))
    assert all(t.status == Status.INCONCLUSIVE for t in result.tests)
    json.dumps(result.to_dict(), allow_nan=False)
