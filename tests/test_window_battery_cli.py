"""--window-battery on the command line: calaudit monitor, batch after batch, gives the
same per-window battery as one calaudit test --time-col over the concatenated rows; every
output shows it as diagnostics; bad combinations are one error line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import special

from calaudit.results import fmt_pvalue
from tests.cli_inprocess import assert_one_line_error, run_cli

DAYS, ROWS = 4, 250
FAST = ("--n-resamples", "49", "--local-resamples", "49", "--exit-zero")


@pytest.fixture(scope="module")
def days(tmp_path_factory) -> Path:
    """Four days of 250 rows with their times (file order is not time order); group A
    is under-predicted from day 3."""
    folder = tmp_path_factory.mktemp("days")
    rng = np.random.default_rng(8)
    n = DAYS * ROWS
    day = np.repeat(np.arange(DAYS), ROWS)
    z = rng.normal(-0.7, 1.0, n)
    grp = np.array(list("ABC"))[rng.integers(0, 3, n)]
    y = (rng.uniform(size=n) < special.expit(z + 1.0 * ((day >= 2) & (grp == "A")))).astype(int)
    times = pd.Timestamp("2026-03-01") + pd.to_timedelta(day + rng.uniform(0, 1, n), unit="D")
    frame = pd.DataFrame({"label": y, "prob": np.round(special.expit(z), 6), "grp": grp,
                          "scored_at": times.strftime("%Y-%m-%dT%H:%M:%S.%f"), "day": day})
    frame = frame.sample(frac=1.0, random_state=1)
    frame.drop(columns="day").to_csv(folder / "all.csv", index=False)
    for d in range(DAYS):
        frame[frame["day"] == d].drop(columns="day").to_csv(folder / f"d{d}.csv", index=False)
    return folder


def windows(path: Path) -> list[dict]:
    return json.loads(path.read_text())["monitoring"]["windows"]


@pytest.fixture(scope="module")
def whole(days, tmp_path_factory):
    """One run over the four days with the battery, writing JSON, Markdown and HTML: the
    folder and the run (its terminal output)."""
    folder = tmp_path_factory.mktemp("whole")
    out = run_cli("test", days / "all.csv", "--time-col", "scored_at", "--window", "1D",
                  "--covariates", "grp", "--window-battery", *FAST, "--md", folder / "r.md",
                  "--html", folder / "r.html", "--json", folder / "r.json")
    assert out.code == 0, out.stderr
    return folder, out


@pytest.mark.slow
def test_monitor_batch_by_batch_equals_one_run(days, whole, tmp_path):
    common = ("--time-col", "scored_at", "--window", "1D", "--covariates", "grp",
              "--window-battery", "--quiet", *FAST)
    state = tmp_path / "state.json"
    first = run_cli("test", days / "d0.csv", *common, "--save-state", state)
    assert first.code == 0, first.stderr
    for d in range(1, DAYS):  # the state fixes the battery's settings
        out = run_cli("monitor", state, days / f"d{d}.csv", "--json", tmp_path / f"m{d}.json",
                      "--quiet", "--exit-zero")
        assert out.code == 0, out.stderr
    one, many = windows(whole[0] / "r.json"), windows(tmp_path / f"m{DAYS - 1}.json")
    assert [w["label"] for w in one] == [f"2026-03-0{d}" for d in range(1, DAYS + 1)]
    assert all(w["battery"] and w["battery"]["tests"] for w in one)
    assert [w["battery"] for w in many] == [w["battery"] for w in one]
    assert many == one
    section = json.loads((whole[0] / "r.json").read_text())["monitoring"]
    assert section["window_battery"]["gating"] is False
    assert "do not gate" in section["window_battery"]["note"]


def test_monitor_can_start_the_battery_later(days, tmp_path):
    """A state started without it gets the battery from the batch that asks for it, with
    the settings of that call (a configuration file here), then fixed by the state."""
    (tmp_path / "calaudit.toml").write_text(
        "n_resamples = 49\n[local]\nn_resamples = 49\n")
    common = ("--time-col", "scored_at", "--window", "1D", "--covariates", "grp", "--quiet",
              "--exit-zero")
    assert run_cli("test", days / "all.csv", *common, "--window-battery", "--json",
                   tmp_path / "whole.json", cwd=tmp_path).code == 0
    state = tmp_path / "state.json"
    assert run_cli("test", days / "d0.csv", *common, "--save-state", state,
                   cwd=tmp_path).code == 0
    assert run_cli("monitor", state, days / "d1.csv", "--window-battery", "--quiet",
                   cwd=tmp_path).code == 0
    (tmp_path / "calaudit.toml").write_text("n_resamples = 7\n")  # the state's win now
    out = run_cli("monitor", state, days / "d2.csv", "--json", tmp_path / "m.json", "--quiet",
                  "--exit-zero", cwd=tmp_path)
    assert out.code == 0, out.stderr
    one, many = windows(tmp_path / "whole.json"), windows(tmp_path / "m.json")
    assert many[0]["battery"] is None
    assert [w["battery"] for w in many[1:]] == [w["battery"] for w in one[1:3]]


@pytest.mark.slow
def test_every_output_shows_the_battery_as_diagnostics(whole):
    folder, out = whole
    result = json.loads((folder / "r.json").read_text())
    last = result["monitoring"]["windows"][-1]["battery"]
    local = next(t for t in last["tests"] if t["id"] == "local_consistency")
    assert local["role"] == "primary" and local["status"] == "below_alpha"
    # diagnostics: no per-window test is a check of the gate
    assert {t["id"] for t in result["tests"]} >= {"calibration_eprocess", "local_consistency"}
    assert len([t for t in result["tests"] if t["id"] == "local_consistency"]) == 1
    p = fmt_pvalue(local["p_value"])
    assert "battery per window" in out.stdout and "do not gate" in out.stdout
    md = (folder / "r.md").read_text()
    html = (folder / "r.html").read_text()
    for text in (md, html):
        assert "Battery per window" in text and "do not gate" in text and p in text


@pytest.mark.parametrize("args, fragment", [
    (("--window-battery",), "--window-battery"),
    (("--window", "100", "--window-battery", "--weight-col", "w"), "weighted rows"),
])
def test_bad_window_battery_options(days, tmp_path, args, fragment):
    frame = pd.read_csv(days / "d0.csv").assign(w=1.0)
    frame.to_csv(tmp_path / "w.csv", index=False)
    out = run_cli("test", tmp_path / "w.csv", *args, *FAST, "--json", tmp_path / "r.json")
    assert out.code == 2
    assert_one_line_error(out, fragment)
    assert not (tmp_path / "r.json").exists()
