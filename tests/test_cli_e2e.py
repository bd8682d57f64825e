"""The installed command line, run in a subprocess as a CI job would run it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data" / "credit_default.csv"
HEAVY = ("numpy", "pandas", "scipy", "matplotlib", "pyarrow")


def run(args, cwd, env=None, module=True):
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("CALAUDIT_", "GITHUB_")) and k not in ("NO_COLOR", "FORCE_COLOR")}
    script = Path(sys.executable).with_name("calaudit")
    command = [sys.executable, "-m", "calaudit", *args] if module or not script.exists() else [
        str(script), *args]
    return subprocess.run(command, cwd=cwd, env={**base, **(env or {})}, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("args", [["--help"], ["test", "--help"], ["compare", "--help"],
                                  ["config", "show", "--help"]])
def test_help_does_not_import_heavy_modules(args):
    code = ("import sys\nfrom calaudit.cli.app import app\n"
            f"try:\n    app({args!r})\nexcept SystemExit:\n    pass\n"
            f"print(sorted(m for m in sys.modules if m in {HEAVY!r}), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stderr.strip().splitlines()[-1] == "[]"


def test_a_ci_job(tmp_path):
    shutil.copy(SAMPLE, tmp_path / "preds.csv")
    (tmp_path / "calaudit.toml").write_text(textwrap.dedent("""
        seed = 7
        fail_on = ["FAIL", "ERROR"]

        [data]
        label_col = "label"
        prob_cols = "prob"

        [thresholds.ece]
        warn = 0.005
        fail = 0.05

        [thresholds.mce]
        fail = 0.2

        [outputs]
        json = "reports/calaudit.json"
        junit = "reports/junit.xml"
    """))
    summary = tmp_path / "step_summary.md"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary),
           "SOURCE_DATE_EPOCH": "1767225600"}
    job = run(["test", "preds.csv"], tmp_path, env)
    assert job.returncode == 1, job.stderr
    assert "::error title=calaudit FAIL%3A metric%3Amce::" in job.stdout
    assert "::warning title=calaudit WARN%3A metric%3Aece::" in job.stdout
    result = json.loads((tmp_path / "reports" / "calaudit.json").read_text())
    assert result["verdict"] == "FAIL" and result["created_at"] == "2026-01-01T00:00:00Z"
    assert result["config"]["seed"] == 7
    assert result["config_sources"]["file"] == "calaudit.toml"
    suite = ET.parse(tmp_path / "reports" / "junit.xml").getroot().find("testsuite")
    graded = {c.get("name"): c for c in suite.iter("testcase")
              if c.get("classname") == "calaudit.metric"}
    assert set(graded) == {"ece", "mce"}
    assert graded["mce"].find("failure") is not None and graded["ece"].find("failure") is None
    assert int(suite.get("tests")) == len(list(suite.iter("testcase")))
    text = summary.read_text()
    assert text.startswith("### calaudit: FAIL") and "| mce | metric | **FAIL** |" in text

    # The same job gated against the result it just wrote: nothing regressed.
    again = run(["test", "preds.csv", "--baseline", "reports/calaudit.json", "--json", "-",
                 "--fail-on", "ERROR"], tmp_path, {"CALAUDIT_OUTPUTS__GITHUB": "off"},
                module=False)
    assert again.returncode == 0, again.stderr
    payload = json.loads(again.stdout)
    assert payload["baseline"]["regressions"] == 0
    compared = run(["compare", "reports/calaudit.json", "reports/calaudit.json"], tmp_path,
                   module=False)
    assert compared.returncode == 0 and "0 regression(s)" in compared.stdout


def test_config_errors_exit_2_with_one_line(tmp_path):
    (tmp_path / "calaudit.toml").write_text("[thresholds.ece]\nfial = 0.05\n")
    out = run(["test", "whatever.csv"], tmp_path)
    assert out.returncode == 2
    assert out.stderr == ("calaudit: error: calaudit.toml: unknown key 'thresholds.ece.fial' "
                          "(did you mean 'thresholds.ece.fail'?)\n")
    assert out.stdout == ""


def test_shell_completion_script():
    script = Path(sys.executable).with_name("calaudit")
    if not script.exists():
        pytest.skip("console script not installed")
    out = subprocess.run([str(script), "--show-completion", "bash"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "_CALAUDIT_COMPLETE" in out.stdout
