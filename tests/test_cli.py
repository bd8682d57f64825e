"""The command line end to end: Typer's runner, plus one real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from calaudit.cli.app import app
from tests.conftest import ROOT, SAMPLE

runner = CliRunner()
VOLATILE = ("created_at", "runtime_seconds")


def invoke(*args, **kwargs):
    return runner.invoke(app, [str(a) for a in args], **kwargs)


def stable(payload):
    return {k: v for k, v in payload.items() if k not in VOLATILE}


def test_test_command_on_sample_data(tmp_path):
    out = tmp_path / "result.json"
    result = invoke("test", SAMPLE / "credit_default.csv", "--covariates", "age,race",
                    "--json", out)
    assert result.exit_code == 1, result.output  # the local test finds the group bias
    assert "verdict: FAIL" in result.stdout
    payload = json.loads(out.read_text())
    assert payload["schema_version"] == 1
    assert {"inputs", "data", "config", "metrics", "tests", "local", "groups", "verdict",
            "runtime_seconds", "created_at", "calaudit_version"} <= payload.keys()
    ids = [m["id"] for m in payload["metrics"]]
    assert ids[:3] == ["ece", "mce", "brier"]
    ece = payload["metrics"][0]
    assert ece["params"]["n_bins"] == 15 and ece["params"]["binning"] == "uniform"
    assert payload["inputs"]["rows_read"] == payload["inputs"]["rows_used"] == 4000
    assert len(payload["inputs"]["sha256"]) == 64
    assert payload["data"]["covariates"] == [
        {"name": "age", "type": "numeric"},
        {"name": "race", "type": "categorical", "categories": ["A", "B", "C"]}]


def test_same_seed_same_json_bytes(tmp_path):
    outputs = []
    for k in range(2):
        out = tmp_path / f"r{k}.json"
        assert invoke("test", SAMPLE / "image_classifier.npz", "--seed", "7",
                      "--json", out).exit_code == 0
        outputs.append(stable(json.loads(out.read_text())))
    assert json.dumps(outputs[0]) == json.dumps(outputs[1])


def test_source_date_epoch_fixes_created_at(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    result = invoke("test", SAMPLE / "credit_default.csv", "--json", "-")
    assert json.loads(result.stdout)["created_at"] == "2023-11-14T22:13:20Z"


def test_json_to_stdout_carries_only_json():
    result = invoke("test", SAMPLE / "credit_default.parquet", "--json", "-")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["verdict"] == "PASS"


def test_multiclass_options_and_binning(tmp_path):
    result = invoke("metrics", SAMPLE / "image_classifier.npz", "--label-col",
                    "labels_miscalibrated", "--n-bins", "10", "--binning", "quantile",
                    "--json", "-")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["data"]["classes"][0] == "airplane"
    ece = payload["metrics"][0]
    assert ece["params"] == {"notion": "top-label", "n_bins": 10, "binning": "quantile",
                             "distance": "L1", "bins_used": 10}
    assert payload["config"]["run_tests"] is False


def test_markdown_output(tmp_path):
    md = tmp_path / "report.md"
    result = invoke("test", SAMPLE / "credit_default.csv", "--md", md)
    assert result.exit_code == 0, result.output
    text = md.read_text()
    assert text.startswith("# Calibration audit")
    assert "## Verdict: PASS" in text and "ece" in text


def test_invalid_option_values_exit_2(tmp_path):
    csv = SAMPLE / "credit_default.csv"
    for args in (["--binning", "octiles"], ["--multiple-testing", "sidak"],
                 ["--fail-on", "FAIL,BAD"], ["--alpha", "1.5"], ["--n-bins", "0"]):
        result = invoke("test", csv, *args)
        assert result.exit_code == 2, (args, result.output)


def test_sample_data_command(tmp_path):
    result = invoke("sample-data", tmp_path / "demo")
    assert result.exit_code == 0
    names = sorted(p.name for p in (tmp_path / "demo").iterdir())
    assert names == ["README.md", "credit_default.csv", "credit_default.npz",
                     "credit_default.parquet", "image_classifier.npz"]
    assert invoke("test", tmp_path / "demo" / "credit_default.npz").exit_code == 0


def test_version_and_help():
    assert invoke("--version").stdout.startswith("calaudit ")
    help_text = invoke("test", "--help").stdout
    for option in ("--label-col", "--prob-cols", "--logit-cols", "--covariates", "--json",
                   "--seed", "--drop-invalid"):
        assert option in help_text


def test_internal_error_exits_3_with_bug_hint(monkeypatch):
    import calaudit.audit.runner as runner_module

    def boom(*args, **kwargs):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(runner_module, "run_audit", boom)
    result = invoke("test", SAMPLE / "credit_default.csv")
    assert result.exit_code == 3
    assert "internal error" in result.stderr and "report it" in result.stderr
    assert "Traceback" not in result.stderr


def test_keyboard_interrupt_exits_130(monkeypatch):
    import calaudit.audit.runner as runner_module

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner_module, "run_audit", interrupted)
    assert invoke("test", SAMPLE / "credit_default.csv").exit_code == 130


@pytest.mark.slow
def test_real_subprocess(tmp_path):
    env = {**os.environ, "SOURCE_DATE_EPOCH": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "calaudit", "test", str(SAMPLE / "credit_default.csv"),
         "--covariates", "age,race", "--json", str(tmp_path / "r.json")],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
    )
    assert done.returncode == 1, done.stderr  # the local test finds the group bias
    assert "verdict: FAIL" in done.stdout and done.stderr == ""
    assert json.loads((tmp_path / "r.json").read_text())["created_at"] == "1970-01-01T00:00:00Z"
    bad = subprocess.run([sys.executable, "-m", "calaudit", "test", str(tmp_path / "none.csv")],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "file_not_found" in bad.stderr
