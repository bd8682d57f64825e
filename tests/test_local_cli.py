"""``calaudit test --covariates ...``: options reach the local stage, exit codes, summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from calaudit.cli.app import app

SAMPLE = Path(__file__).parent.parent / "sample_data" / "credit_default.csv"
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, ["test", str(SAMPLE), *args])


@pytest.mark.slow
def test_local_test_fails_the_gate_and_prints_the_most_biased_groups(tmp_path):
    out = tmp_path / "r.json"
    # default 500 resamples: p = 1/501, still below alpha after Holm over the battery
    result = invoke("--covariates", "race", "--top-k", "3", "--json", str(out))
    assert result.exit_code == 1, result.output
    assert "local_consistency" in result.output
    assert "groups with the clearest bias" in result.output
    assert "race=A" in result.output
    payload = json.loads(out.read_text())
    assert payload["config"]["local"]["n_resamples"] == 500
    assert payload["tests"][-1]["id"] == "local_consistency"
    assert payload["tests"][-1]["status"] == "FAIL"
    top = [g["group"] for g in payload["local"]["lcb"]["top_groups"]]
    assert sorted(top) == ["race=A", "race=B"]  # race=C: its interval contains 0


@pytest.mark.slow
def test_options_reach_the_configuration(tmp_path):
    out = tmp_path / "r.json"
    result = invoke("--covariates", "age,race", "--local-tests",
                    "klce_bootstrap,klce_permutation", "--local-resamples", "20",
                    "--prob-bandwidth", "0.05", "--cov-bandwidth", "0.8", "--min-group-rows",
                    "50", "--min-group-events", "8", "--group-adjust", "fdr_bh", "--n-bands",
                    "3", "--kite-width", "0.2", "--kite-gamma", "25", "--exit-zero",
                    "--json", str(out))
    assert result.exit_code == 0, result.output
    payload = json.loads(out.read_text())
    local = payload["config"]["local"]
    assert local["tests"] == ["klce_bootstrap", "klce_permutation"]
    assert (local["min_group_rows"], local["min_group_events"], local["n_bands"]) == (50, 8, 3)
    assert payload["local"]["klce"]["prob_kernel"]["bandwidth"] == 0.05
    perm = next(t for t in payload["tests"] if t["id"] == "klce_permutation")
    assert perm["params"]["cov_kernel"]["kite_gamma"] == 25
    assert perm["params"]["prob_kernel"]["kite_prob_kernel_width"] == 0.2
    assert {g["adjustment"] for g in payload["groups"] if g["status"] != "INCONCLUSIVE"} == {
        "fdr_bh"}
    assert sum(1 for g in payload["groups"] if g["kind"] == "single") == 3 + 3


def test_no_local_tests_and_bad_options():
    # no local test: the groups gate through their Bonferroni combination (biased sample)
    result = invoke("--covariates", "race", "--local-tests", "none")
    assert result.exit_code == 1 and "groups_bonferroni" in result.output
    bad = invoke("--covariates", "race", "--group-adjust", "sidak")
    assert bad.exit_code == 2 and "group adjustment" in bad.output
    assert invoke("--covariates", "race", "--prob-bandwidth", "-1").exit_code == 2


def test_metrics_command_reports_klce_without_tests(tmp_path):
    out = tmp_path / "m.json"
    result = runner.invoke(app, ["metrics", str(SAMPLE), "--covariates", "race", "--json",
                                 str(out)])
    assert result.exit_code == 0, result.output
    payload = json.loads(out.read_text())
    assert payload["tests"] == [] and any(m["id"] == "klce2" for m in payload["metrics"])


def test_group_names_are_printed_as_text_not_markup(tmp_path):
    import pandas as pd

    frame = pd.read_csv(SAMPLE)
    frame["race"] = frame["race"].map({"A": "[/bold]", "B": "[red]B", "C": "C"})
    path = tmp_path / "hostile.csv"
    frame.to_csv(path, index=False)
    result = runner.invoke(app, ["test", str(path), "--covariates", "race", "--exit-zero"])
    assert result.exit_code == 0, result.output
    assert "race=[/bold]" in result.stdout and "race=[red]B" in result.stdout
