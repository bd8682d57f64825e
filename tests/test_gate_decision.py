"""The gate's decision rule: one primary test per question, Holm-adjusted
together; diagnostics never gate; one INCONCLUSIVE rule; exact ties; gated groups;
thresholds, baselines, NO CHECKS, reproducible bytes, incomparable results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from calaudit.audit.config import AuditConfig, GlobalTestsConfig, LocalConfig, ThresholdConfig
from calaudit.audit.gate import gating, result_checks
from calaudit.audit.gate.baseline import compare_results
from calaudit.audit.gate.decision import GATE_RULE, gate_groups, grade_tests
from calaudit.audit.local_calibration import LocalCalibrationStage
from calaudit.audit.runner import run_audit
from calaudit.audit.stages import StageOutput
from calaudit.cli.app import app
from calaudit.data.dataset import CalibrationData
from calaudit.exceptions import ConfigError
from calaudit.inference.consistency import skce_consistency_test
from calaudit.metrics.skce import choose_kernel, quadratic_terms, residual_gram
from calaudit.numerics.grams import cached
from calaudit.results import Status, TestResult

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data" / "credit_default.csv"


class FakeStage:
    name = "fake"

    def __init__(self, tests=(), metrics=(), groups=()):
        self.tests, self.metrics, self.groups = tuple(tests), tuple(metrics), tuple(groups)

    def run(self, data, config, rng):
        return StageOutput(metrics=self.metrics, tests=self.tests, groups=self.groups)


def mk(test_id, p, family="global", n_resamples=None, status=None):
    return TestResult(test_id, 1.0, 0.1, p, "m", n_resamples=n_resamples, family=family,
                      status=status)


def binary_data(n=300, seed=0, covariate=False):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.uniform(size=n) < p).astype(int)
    covariates = {"g": rng.integers(0, 2, n)} if covariate else None
    return CalibrationData.from_arrays(y, p, covariates=covariates,
                                       categorical=["g"] if covariate else ())


# --- item 1: the family-wise error of the verdict ------------------------------------------

def test_diagnostics_never_gate_and_roles_are_in_the_json():
    stage = FakeStage([mk("spiegelhalter", 1e-6), mk("skce_consistency", 0.5)])
    result = run_audit(binary_data(), AuditConfig(), stages=(stage,))
    payload = result.to_dict()
    roles = {t["id"]: (t["role"], t["status"]) for t in payload["tests"]}
    assert roles == {"spiegelhalter": ("diagnostic", "FAIL"),
                     "skce_consistency": ("primary", "PASS")}
    assert result.verdict is Status.PASS  # the old rule: FAIL (every test gated)
    assert {c.id: c.role for c in result_checks(payload)} == {
        "spiegelhalter": "diagnostic", "skce_consistency": "primary"}
    assert payload["gate"]["counts"] == {"PASS": 1}
    assert payload["gate"]["diagnostic_counts"] == {"FAIL": 1}
    assert payload["gate"]["primary_tests"] == ["skce_consistency"]
    assert payload["gate"]["rule"] == GATE_RULE


def test_global_and_local_primaries_are_holm_adjusted_together():
    graded = grade_tests([mk("skce_consistency", 0.03), mk("spiegelhalter", 0.001),
                          mk("klce_consistency", 0.04, family="local")], 0.05, "holm")
    by_id = {t.id: t for t in graded}
    assert by_id["skce_consistency"].p_value_adjusted == pytest.approx(0.06)
    assert by_id["klce_consistency"].p_value_adjusted == pytest.approx(0.06)
    assert by_id["skce_consistency"].status is Status.PASS  # old rule: both FAIL
    assert by_id["spiegelhalter"].role == "diagnostic"


def test_the_two_exact_global_tests_and_the_local_test_are_the_primaries():
    graded = grade_tests([mk("skce_consistency", 0.2), mk("ece_consistency", 0.01),
                          mk("skce_uq_asymptotic", 0.001),
                          mk("klce_consistency", 0.5, family="local")], 0.05, "holm")
    assert [t.role for t in graded] == ["primary", "primary", "diagnostic", "primary"]
    # weighted Holm: the local primary spends alpha / 2, each global primary alpha / 4
    assert graded[1].p_value_adjusted == pytest.approx(0.04)
    assert graded[1].status is Status.FAIL


def test_primary_that_cannot_run_counts_as_p_one():
    graded = grade_tests([mk("skce_consistency", 0.03),
                          mk("klce_consistency", float("nan"), family="local",
                               status=Status.INCONCLUSIVE)], 0.05, "holm")
    assert graded[0].p_value_adjusted == pytest.approx(0.06)
    assert graded[1].role == "primary" and graded[1].status is Status.INCONCLUSIVE


def test_skipped_quadratic_test_hands_the_primary_role_on():
    graded = grade_tests([mk("skce_consistency", float("nan"), status=Status.SKIPPED),
                          mk("skce_ul_asymptotic", 0.01), mk("ece_consistency", 0.5)],
                         0.05, "holm")
    assert [t.role for t in graded] == ["diagnostic", "primary", "primary"]
    assert graded[1].status is Status.FAIL


def test_family_scope_gives_every_test_a_gating_role():
    graded = grade_tests([mk("spiegelhalter", 0.01), mk("skce_consistency", 0.5)],
                         0.05, "holm", scope="family")
    assert [t.role for t in graded] == ["primary", "primary"]


# --- item 2: one INCONCLUSIVE rule --------------------------------------------------------

def test_resampling_test_that_cannot_reach_its_adjusted_level_is_inconclusive():
    # 1/31 = 0.032 could only reach 2 x 0.032 > 0.05 beside a second primary
    graded = grade_tests([mk("skce_consistency", 1 / 31, n_resamples=30),
                          mk("klce_consistency", 0.5, family="local", n_resamples=500)],
                         0.05, "holm")
    assert graded[0].status is Status.INCONCLUSIVE and "smallest attainable" in graded[0].message
    assert graded[1].status is Status.PASS


def test_ten_local_resamples_never_pass_on_locally_biased_data():
    rng = np.random.default_rng(3)
    n = 400
    g = rng.integers(0, 2, n)
    p = rng.uniform(0.2, 0.8, n)
    q = np.clip(p + np.where(g == 0, 0.25, -0.25), 0.01, 0.99)
    data = CalibrationData.from_arrays((rng.uniform(size=n) < q).astype(int), p,
                                       covariates={"g": g}, categorical=["g"])
    config = AuditConfig(n_resamples=99, local=LocalConfig(n_resamples=10, per_class=False,
                                                           group_ci_resamples=50))
    result = run_audit(data, config)
    assert result.test("local_consistency").status is Status.INCONCLUSIVE


def test_bounds_leave_the_default_gate_and_report_their_smallest_p():
    assert not any(t.endswith("_bound") for t in GlobalTestsConfig().tests)
    config = AuditConfig(n_resamples=99, global_tests=GlobalTestsConfig(
        tests=("skce_b_bound", "skce_consistency")))
    result = run_audit(binary_data(n=200), config)
    bound = result.test("skce_b_bound")
    assert bound.role == "diagnostic" and 0 < bound.params["smallest_p_value"] < 1


def test_sixty_rows_verdict_is_not_made_inconclusive_by_a_diagnostic():
    data = binary_data(n=60, seed=5)
    result = run_audit(data, AuditConfig(n_resamples=199))
    ul = result.test("skce_ul_asymptotic")
    assert ul.status is Status.INCONCLUSIVE and ul.role == "diagnostic"
    assert result.verdict in (Status.PASS, Status.FAIL)  # old rule: INCONCLUSIVE


# --- item 3: exact Monte-Carlo p-values under ties -----------------------------------------

def _local_p(data, dtype, resamples=4999):
    config = AuditConfig(local=LocalConfig(n_resamples=resamples, resample_dtype=dtype,
                                           per_class=False, group_ci_resamples=10))
    return LocalCalibrationStage().run(data, config, np.random.default_rng(1)).tests[0].p_value


def _skce_p(data, dtype):
    probs = data.y_proba
    choice = choose_kernel(probs, "exponential", None, exact_max_n=20_000,
                           rng=np.random.default_rng(0))
    observed = quadratic_terms(residual_gram(choice.kernel, probs, data.residuals)).unbiased
    return skce_consistency_test(cached(choice.kernel.on(probs)), probs, observed,
                                 np.random.default_rng(2), 1999, dtype=dtype).p_value


@pytest.mark.parametrize("seed", [0, 1])
def test_float32_and_float64_resamples_give_the_same_p_value_on_ties(seed):
    rng = np.random.default_rng(seed)
    n = 60
    p = np.full(n, 0.4)
    data = CalibrationData.from_arrays((rng.uniform(size=n) < p).astype(int), p,
                                       covariates={"g": rng.integers(0, 2, n)},
                                       categorical=["g"])
    assert _local_p(data, "float32") == _local_p(data, "float64")
    assert _skce_p(data, np.float32) == _skce_p(data, np.float64)


def test_float32_and_float64_resamples_give_the_same_p_value_on_continuous_data():
    data = binary_data(n=150, seed=4, covariate=True)
    assert _local_p(data, "float32", 999) == _local_p(data, "float64", 999)
    assert _skce_p(data, np.float32) == _skce_p(data, np.float64)


# --- item 4: groups gate, and agree with their intervals -----------------------------------

def group(name, p_adj, ci):
    return {"group": name, "status": "FAIL" if p_adj <= 0.05 else "PASS",
            "p_value": p_adj / 3, "p_value_adjusted": p_adj, "bias_ci": ci, "message": ""}


def test_no_group_fails_unless_the_local_primary_rejects():
    groups = [group("a", 0.01, [0.01, 0.05])]
    closed = grade_tests([mk("klce_consistency", 0.5, family="local")], 0.05, "holm")
    assert gate_groups(groups, closed, 0.05)[0]["status"] == "PASS"
    assert "gatekeeping" in gate_groups(groups, closed, 0.05)[0]["message"]
    opened = grade_tests([mk("klce_consistency", 0.001, family="local")], 0.05, "holm")
    assert gate_groups(groups, opened, 0.05)[0]["status"] == "FAIL"


def test_a_failing_group_never_has_an_interval_through_zero():
    opened = grade_tests([mk("klce_consistency", 0.001, family="local")], 0.05, "holm")
    rows = gate_groups([group("a", 0.01, [-0.01, 0.05]), group("b", 0.2, [0.01, 0.05])],
                       opened, 0.05)
    assert [r["status"] for r in rows] == ["PASS", "PASS"]
    assert "contains 0" in rows[0]["message"] and "excludes 0" in rows[1]["message"]


@pytest.fixture
def cli(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("CALAUDIT_") or n.startswith("GITHUB")]:
        monkeypatch.delenv(name)
    runner = CliRunner()
    return lambda *args: runner.invoke(app, [str(a) for a in args])


def test_group_fails_gate_without_local_tests(cli, tmp_path):
    out = tmp_path / "r.json"
    result = cli("test", SAMPLE, "--covariates", "age,race", "--local-tests", "none",
                 "--json", out)
    assert result.exit_code == 1, result.output  # old rule: 4 FAIL groups, PASS, exit 0
    payload = json.loads(out.read_text())
    assert "groups_bonferroni" in payload["gate"]["primary_tests"]
    for row in payload["groups"]:
        if row["status"] == "FAIL":
            assert row["bias_ci"][0] > 0 or row["bias_ci"][1] < 0
        elif row["status"] == "PASS" and row["bias_ci"] and (
                row["bias_ci"][0] > 0 or row["bias_ci"][1] < 0):
            assert row["message"]


# --- item 5: thresholds --------------------------------------------------------------------

def test_unknown_threshold_id_is_a_configuration_error(cli, tmp_path):
    with pytest.raises(ConfigError, match="did you mean 'ece_canonical'"):
        ThresholdConfig("ece_canonicl", fail=0.01)
    (tmp_path / "calaudit.toml").write_text(textwrap.dedent("""
        [thresholds.ece_canonicl]
        fail = 0.01
    """))
    result = cli("metrics", SAMPLE)
    assert result.exit_code == 2 and "did you mean 'ece_canonical'" in result.output


def test_metric_without_direction_is_never_a_check():
    with pytest.raises(ConfigError, match="cannot be a threshold"):
        ThresholdConfig("brier_uncertainty", fail=0.3)


def test_threshold_on_a_metric_not_computed_is_skipped_with_the_reason():
    config = AuditConfig(run_tests=False, thresholds=(ThresholdConfig("klce2", fail=0.1),))
    payload = run_audit(binary_data(), config).to_dict()
    entry = payload["gate"]["unmatched_thresholds"][0]
    assert entry["status"] == "SKIPPED" and "covariates" in entry["message"]


# --- item 6: baselines on each metric's scale ----------------------------------------------

def _result(metrics, tests=()):
    return {"schema_version": 1, "data": {"classes": ["0", "1"]}, "config": {},
            "metrics": [{"id": k, "value": v, "params": {}} for k, v in metrics.items()],
            "tests": list(tests)}


def test_squared_scale_regression_is_detected_by_default():
    section = compare_results(_result({"skce_b": 0.000142}), _result({"skce_b": 0.000276}),
                              AuditConfig())
    assert section["metrics"][0]["status"] == "FAIL"  # old default 0.01: PASS


def test_candidate_whose_primary_skce_test_newly_rejects_is_flagged():
    def skce_test(status, null_sd):
        null = list(np.random.default_rng(0).normal(0, null_sd, 200))
        return {"id": "skce_consistency", "status": status, "role": "primary",
                "p_value": 0.5, "null_distribution": null}
    old = _result({"ece": 0.030, "skce_uq": 0.0001}, [skce_test("PASS", 1e-4)])
    new = _result({"ece": 0.035, "skce_uq": 0.0006}, [skce_test("FAIL", 1e-4)])
    section = compare_results(old, new, AuditConfig())
    by_id = {e["id"]: e["status"] for e in section["metrics"]}
    assert by_id == {"ece": "PASS", "skce_uq": "FAIL"}
    assert [c["id"] for c in section["checks"] if c["status"] == "FAIL"] == ["skce_consistency"]


# --- items 7, 8, 9: NO CHECKS, reproducible bytes, incomparable results --------------------

def test_metrics_command_gates_nothing(cli, tmp_path):
    result = cli("metrics", SAMPLE, "--json", tmp_path / "m.json")
    assert result.exit_code == 0
    assert json.loads((tmp_path / "m.json").read_text())["verdict"] == "NO CHECKS"
    assert "NO CHECKS" in result.output


@pytest.mark.slow
def test_source_date_epoch_gives_byte_identical_json(tmp_path):
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1700000000", "PYTHONPATH": str(ROOT)}
    outputs = []
    for k in range(2):
        target = tmp_path / f"r{k}.json"
        subprocess.run([sys.executable, "-m", "calaudit", "test", str(SAMPLE), "--json",
                        str(target), "--n-resamples", "99", "--quiet"], env=env, check=False,
                       capture_output=True, timeout=600)
        outputs.append(target.read_bytes())
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0])["runtime_seconds"] == 0


def test_compare_of_different_classes_is_one_line_exit_2(cli, tmp_path):
    binary = {"schema_version": 1, "calaudit_version": "0.1.0",
              "created_at": "2026-01-01T00:00:00Z", "inputs": {}, "verdict": "PASS",
              "data": {"classes": ["0", "1"]}, "metrics": [], "tests": [], "config": {}}
    ten = {**binary, "data": {"classes": [str(k) for k in range(10)]}}
    (tmp_path / "a.json").write_text(json.dumps(ten))
    (tmp_path / "b.json").write_text(json.dumps(binary))
    result = cli("compare", tmp_path / "a.json", tmp_path / "b.json")
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0 and "classes differ" in result.output


def test_gating_leaves_diagnostics_out():
    payload = {"tests": [{"id": "a", "status": "FAIL", "role": "diagnostic"},
                         {"id": "b", "status": "PASS", "role": "primary"},
                         {"id": "c", "status": "FAIL"}]}
    assert [c.id for c in gating(result_checks(payload))] == ["b", "c"]


# --- item 14: KiTE's covariate gamma on a two-level category -------------------------------

def test_kite_default_gamma_matches_kite_on_a_zero_one_column():
    rng = np.random.default_rng(2)
    n = 80
    p = rng.uniform(0.1, 0.9, n)
    x = rng.integers(0, 2, n)
    y = (rng.uniform(size=n) < p).astype(int)
    data = CalibrationData.from_arrays(y, p, covariates={"g": x}, categorical=["g"])
    config = AuditConfig(local=LocalConfig(tests=("klce_permutation",), n_resamples=20,
                                           per_class=False, group_ci_resamples=10))
    stat = LocalCalibrationStage().run(data, config, np.random.default_rng(0)).tests[0].statistic
    # KiTE ELCE2 on the raw 0/1 column, sklearn's default gamma = 1 / n_features = 1
    k = np.exp(-((p[:, None] - p[None, :]) ** 2) / 0.1 ** 2) * np.exp(
        -1.0 * (x[:, None] - x[None, :]) ** 2)
    r = y - p
    off = k * np.outer(r, r)
    np.fill_diagonal(off, 0.0)
    expected = off.sum() / ((n - 1) / n * k.sum())
    assert stat == pytest.approx(expected, rel=1e-10)


def test_readme_and_configuration_docs_state_the_rule_of_the_code():
    rule = " ".join(GATE_RULE.split())
    for doc in ("README.md", "docs/configuration.md"):
        assert rule in " ".join((ROOT / doc).read_text().split()), doc
