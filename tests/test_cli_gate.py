"""The command line as a gate: exit codes, configuration, outputs, terminal behaviour."""

from __future__ import annotations

import json
import os
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import calaudit.audit.runner as runner_module
from calaudit.cli import app as app_module
from calaudit.cli.app import app

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data" / "credit_default.csv"
CLEAN_ENV = {"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": None, "NO_COLOR": None,
             "FORCE_COLOR": None, "CALAUDIT_CONFIG": None}


@pytest.fixture
def cli(tmp_path, monkeypatch):
    """Run ``calaudit`` in an empty directory with a clean environment."""
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("CALAUDIT_")]:
        monkeypatch.delenv(name)
    runner = CliRunner()

    def invoke(*args, env=None):
        return runner.invoke(app, [str(a) for a in args], env={**CLEAN_ENV, **(env or {})})

    return invoke


def sample_head(target: Path, rows: int = 600) -> Path:
    """The first ``rows`` rows of the sample (calibrated, so the audit passes): quick even
    with covariates, and every check the gate reads is there."""
    target.write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:rows + 1]))
    return target


@pytest.fixture
def data(tmp_path):
    return sample_head(tmp_path / "preds.csv")


@pytest.fixture
def small_data(tmp_path):
    return sample_head(tmp_path / "small.csv")


@pytest.fixture
def miscalibrated(tmp_path):
    """Over-confident predictions: ECE about 0.1."""
    rng = np.random.default_rng(5)
    p = rng.uniform(0.05, 0.95, 2000)
    y = (rng.uniform(size=p.size) < 0.5 + 0.6 * (p - 0.5)).astype(int)
    target = tmp_path / "bad.csv"
    target.write_text("label,prob\n" + "".join(f"{a},{b:.6f}\n" for a, b in zip(y, p)))
    return target


def config(tmp_path, text):
    (tmp_path / "calaudit.toml").write_text(textwrap.dedent(text))


# --------------------------------------------------------------------------- exit paths

def test_exit_0_when_nothing_fails(cli, data):
    result = cli("test", data)
    assert result.exit_code == 0, result.output
    assert "verdict: PASS" in result.stdout


def test_exit_1_when_a_threshold_fails(cli, tmp_path, miscalibrated):
    config(tmp_path, """
        [thresholds.ece]
        warn = 0.02
        fail = 0.05
    """)
    result = cli("test", miscalibrated)
    assert result.exit_code == 1, result.output
    assert "metric:ece: FAIL: ece = " in result.stdout and "verdict: FAIL" in result.stdout
    assert cli("test", miscalibrated, "--exit-zero").exit_code == 0


def test_warn_gates_only_with_fail_on(cli, tmp_path, data):
    config(tmp_path, "[thresholds.ece]\nwarn = 0.001\nfail = 0.5\n")
    assert cli("test", data).exit_code == 0
    assert cli("test", data, "--fail-on", "fail,warn").exit_code == 1
    assert cli("test", data, env={"CALAUDIT_FAIL_ON": "FAIL,WARN"}).exit_code == 1


def test_metrics_command_gates_on_thresholds(cli, tmp_path, miscalibrated):
    config(tmp_path, "[thresholds.ece]\nfail = 0.05\n")
    result = cli("metrics", miscalibrated, "--json", "-")
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["config"]["run_tests"] is False
    assert payload["config_sources"]["values"]["run_tests"] == "calaudit metrics"


@pytest.mark.parametrize("setup, args, message", [
    ("[binning]\nnbins = 3\n", (), "calaudit.toml: unknown key 'binning.nbins' "
                                   "(did you mean 'binning.n_bins'?)"),
    ("alpha = 'x'\n", (), "'alpha' expects a number, got 'x' (a string)"),
    ("", ("--alpha", "2"), "--alpha: alpha must be in (0, 1); got 2.0"),
    ("", ("--binning", "weird"), "--binning: binning.strategy: binning must be one of"),
    ("", ("--config", "missing.toml"), "missing.toml: config file not found"),
    ("", ("--color", "purple"), "outputs.color must be one of auto, always, never"),
    ("", ("--baseline", "nope.json"), "nope.json: file not found"),
    ("", ("--label-col", "nope"), "nope"),
])
def test_exit_2_on_usage_config_and_input_errors(cli, tmp_path, data, setup, args, message):
    if setup:
        config(tmp_path, setup)
    result = cli("test", data, *args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("calaudit: error: ")
    assert message in lines[0]
    assert result.stdout == ""


def test_exit_2_on_bad_environment_and_unwritable_output(cli, tmp_path, data):
    result = cli("test", data, env={"CALAUDIT_SEED": "many"})
    assert result.exit_code == 2 and "CALAUDIT_SEED='many': expected an integer" in result.stderr
    (tmp_path / "blocked").write_text("a file, not a directory")
    result = cli("test", data, "--json", tmp_path / "blocked" / "out.json")
    assert result.exit_code == 2 and "cannot write output" in result.stderr


def test_exit_2_on_click_usage_errors(cli, data):
    assert cli("test", data, "--no-such-flag").exit_code == 2
    assert cli("test").exit_code == 2


def test_exit_3_on_internal_error_with_bug_report_hint(cli, data, monkeypatch):
    def crash(*args, **kwargs):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(runner_module, "run_audit", crash)
    result = cli("test", data, "--json", "out.json")
    assert result.exit_code == 3
    assert "internal error: RuntimeError: kaboom" in result.stderr
    assert "bug" in result.stderr and "CALAUDIT_DEBUG=1" in result.stderr
    assert not Path("out.json").exists()


def test_exit_130_on_interrupt(cli, data, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner_module, "run_audit", interrupted)
    result = cli("test", data)
    assert result.exit_code == 130
    assert "interrupted" in result.stderr


def test_main_maps_interrupt_outside_commands_to_130(monkeypatch, capsys):
    class Interrupted:
        def main(self, **kwargs):
            raise KeyboardInterrupt

    monkeypatch.setattr(app_module.typer.main, "get_command", lambda app: Interrupted())
    with pytest.raises(SystemExit) as info:
        app_module.main()
    assert info.value.code == 130


# --------------------------------------------------------------------- configuration

def test_flags_beat_env_beat_file(cli, tmp_path, data):
    config(tmp_path, "seed = 1\nalpha = 0.01\n[binning]\nn_bins = 10\n")
    result = cli("test", data, "--json", "-", "--alpha", "0.2", env={"CALAUDIT_SEED": "2"})
    payload = json.loads(result.stdout)
    assert (payload["config"]["alpha"], payload["config"]["seed"],
            payload["config"]["binning"]["n_bins"]) == (0.2, 2, 10)
    assert payload["config_sources"] == {
        "file": "calaudit.toml",
        "values": {"alpha": "--alpha", "seed": "CALAUDIT_SEED", "binning.n_bins": "calaudit.toml",
                   "outputs.json": "--json"}}


def test_typer_defaults_do_not_override_the_file(cli, tmp_path, data):
    config(tmp_path, "fail_on = ['FAIL', 'WARN']\n[binning]\nn_bins = 7\nstrategy = 'quantile'\n")
    payload = json.loads(cli("test", data, "--json", "-").stdout)
    assert payload["config"]["binning"] == {"n_bins": 7, "strategy": "quantile"}
    assert payload["config"]["fail_on"] == ["FAIL", "WARN"]


def test_data_and_outputs_from_the_config_file(cli, tmp_path, small_data):
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "calaudit.toml").write_text(textwrap.dedent("""
        [data]
        label_col = "label"
        covariates = ["age", "race"]
        [outputs]
        json = "reports/result.json"
        junit = "reports/junit.xml"
    """))
    result = cli("test", small_data, "--config", tmp_path / "ci" / "calaudit.toml",
                 "--exit-zero")
    assert result.exit_code == 0, result.output
    payload = json.loads((tmp_path / "ci" / "reports" / "result.json").read_text())
    assert [c["name"] for c in payload["data"]["covariates"]] == ["age", "race"]
    ET.parse(tmp_path / "ci" / "reports" / "junit.xml")


def test_pyproject_tool_table_is_used(cli, tmp_path, data):
    (tmp_path / "pyproject.toml").write_text("[tool.calaudit]\nseed = 42\n")
    payload = json.loads(cli("test", data, "--json", "-").stdout)
    assert payload["config"]["seed"] == 42
    assert payload["config_sources"]["file"] == "pyproject.toml [tool.calaudit]"


def test_config_show_and_init(cli, tmp_path):
    config(tmp_path, "[binning]\nn_bins = 12\n")
    result = cli("config", "show", env={"CALAUDIT_ALPHA": "0.01"})
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()[3:]}
    assert rows["binning.n_bins"] == ["12", "calaudit.toml"]
    assert rows["alpha"] == ["0.01", "CALAUDIT_ALPHA"]
    assert rows["seed"] == ["0", "default"]
    as_json = json.loads(cli("config", "show", "--json").stdout)
    assert as_json["config_file"] == "calaudit.toml"
    assert cli("config", "init").exit_code == 2  # exists
    assert cli("config", "init", "new.toml").exit_code == 0
    from calaudit.settings.sources import tomllib

    assert "binning" in tomllib.loads((tmp_path / "new.toml").read_text())
    assert cli("config", "init", "-", "--pyproject").stdout.count("[tool.calaudit") >= 2


def test_show_config_includes_flags_and_does_not_audit(cli, tmp_path):
    config(tmp_path, "seed = 3\n")
    result = cli("test", "not-read.csv", "--show-config", "--alpha", "0.2", "--n-bins", "9",
                 env={"CALAUDIT_SEED": "4"})
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()[3:]}
    assert rows["alpha"] == ["0.2", "--alpha"]
    assert rows["binning.n_bins"] == ["9", "--n-bins"]
    assert rows["seed"] == ["4", "CALAUDIT_SEED"]
    metrics = cli("metrics", "not-read.csv", "--show-config")
    rows = {line.split()[0]: line.split()[1:] for line in metrics.stdout.splitlines()[3:]}
    assert rows["run_tests"] == ["false", "calaudit", "metrics"]


def test_config_show_reports_bad_config_with_exit_2(cli, tmp_path):
    config(tmp_path, "[outputs]\njunit = 3\n")
    result = cli("config", "show")
    assert result.exit_code == 2
    assert "'outputs.junit' expects a string (or nothing), got 3" in result.stderr


# --------------------------------------------------------------------------- outputs

def test_json_stdout_carries_only_json(cli, tmp_path, miscalibrated):
    config(tmp_path, "[thresholds.ece]\nwarn = 0.01\nfail = 0.05\n")
    summary = tmp_path / "summary.md"
    result = cli("test", miscalibrated, "--json", "-", "--verbose",
                 env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["verdict"] == "FAIL"
    assert "::error title=calaudit FAIL%3A metric%3Aece::" in result.stderr
    assert summary.read_text().startswith("### calaudit: FAIL")


def test_quiet_prints_nothing_but_writes_outputs(cli, data):
    result = cli("test", data, "--quiet", "--json", "r.json", "--junit", "j.xml")
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == ""
    assert Path("r.json").exists() and Path("j.xml").exists()


def test_junit_file_is_valid(cli, tmp_path, miscalibrated):
    config(tmp_path, "[thresholds.ece]\nfail = 0.05\n[thresholds.brier]\nfail = 0.9\n")
    assert cli("test", miscalibrated, "--junit", "junit.xml").exit_code == 1
    suite = ET.parse("junit.xml").getroot().find("testsuite")
    names = {c.get("name"): c for c in suite.iter("testcase")
             if c.get("classname") == "calaudit.metric"}
    assert set(names) == {"ece", "brier"}
    assert names["ece"].find("failure") is not None and names["brier"].find("failure") is None


def test_github_annotations_go_to_stdout_when_it_is_not_json(cli, tmp_path, miscalibrated):
    config(tmp_path, "[thresholds.ece]\nfail = 0.05\n")
    result = cli("test", miscalibrated, env={"GITHUB_ACTIONS": "true"})
    assert "::error title=calaudit FAIL%3A metric%3Aece::" in result.stdout
    off = cli("test", miscalibrated, env={"GITHUB_ACTIONS": "true",
                                          "CALAUDIT_OUTPUTS__GITHUB": "off"})
    assert "::error" not in off.stdout + off.stderr


@pytest.mark.parametrize("args, env, colored", [
    (("--color", "always"), {}, True),
    (("--color", "never"), {}, False),
    ((), {}, False),                                    # not a terminal
    (("--color", "always"), {"NO_COLOR": "1"}, True),   # the flag beats the environment
    ((), {"CALAUDIT_OUTPUTS__COLOR": "always"}, True),
    ((), {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),  # styles (bold) may stay, no colour
])
def test_color_modes(cli, data, args, env, colored):
    import re

    result = cli("test", data, *args, env=env)
    assert result.exit_code == 0
    colour = re.compile(r"\x1b\[(?:[0-9]+;)*(?:3[0-8]|9[0-7])(?:;[0-9]+)*m")  # SGR colours
    assert bool(colour.search(result.stdout)) is colored


def test_baseline_regression_fails_the_gate(cli, tmp_path, data, miscalibrated):
    assert cli("test", data, "--json", "released.json", "--label-col", "label",
               "--prob-cols", "prob").exit_code == 0
    result = cli("test", miscalibrated, "--baseline", "released.json", "--json", "new.json")
    assert result.exit_code == 1, result.output
    assert "regression: worse by" in result.stdout and "baseline: FAIL" in result.stdout
    section = json.loads(Path("new.json").read_text())["baseline"]
    assert section["regressions"] >= 1 and section["path"] == "released.json"
    relaxed = cli("test", miscalibrated, "--baseline", "released.json",
                  "--regression-tolerance", "0.5", "--json", "relaxed.json")
    metrics = {m["id"]: m for m in
               json.loads(Path("relaxed.json").read_text())["baseline"]["metrics"]}
    assert metrics["ece"]["status"] == "PASS", relaxed.output
    assert metrics["ece_canonical"]["status"] == "PASS", relaxed.output  # cells_used ignored


def test_compare_command(cli, data, miscalibrated):
    cli("test", data, "--json", "old.json", "--quiet")
    cli("test", miscalibrated, "--json", "new.json", "--quiet")
    cli("test", data, "--json", "same.json", "--quiet")
    same = cli("compare", "old.json", "same.json")
    assert same.exit_code == 0 and "baseline: PASS (0 regression(s))" in same.stdout
    worse = cli("compare", "old.json", "new.json", "--json", "-", "--junit", "cmp.xml")
    assert worse.exit_code == 1
    payload = json.loads(worse.stdout)
    assert payload["kind"] == "comparison" and payload["verdict"] == "FAIL"
    assert payload["baseline"]["regressions"] >= 1
    suite = ET.parse("cmp.xml").getroot().find("testsuite")
    assert int(suite.get("failures")) == payload["baseline"]["regressions"]
    assert cli("compare", "old.json", "new.json", "--exit-zero").exit_code == 0
    assert cli("compare", "old.json", "missing.json").exit_code == 2


def test_compare_ignores_output_paths_of_the_config_file(cli, tmp_path, data):
    cli("test", data, "--json", "old.json", "--quiet")
    config(tmp_path, "[outputs]\njson = 'old.json'\n")
    before = Path("old.json").read_text()
    assert cli("compare", "old.json", "old.json").exit_code == 0
    assert Path("old.json").read_text() == before


# -------------------------------------------------------------------- help, completion

@pytest.mark.parametrize("command", [("test",), ("metrics",), ("compare",), ("sample-data",),
                                     ("config", "show"), ("config", "init")])
def test_every_command_help_has_an_example(cli, command):
    result = cli(*command, "--help")
    assert result.exit_code == 0
    assert "Example:" in result.stdout


def test_top_level_help_lists_exit_codes(cli):
    result = cli("--help")
    assert result.exit_code == 0 and "130 interrupted" in result.stdout
