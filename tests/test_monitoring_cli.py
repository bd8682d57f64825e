"""calaudit test --batch-col/--window and calaudit monitor: one run over all batches and
30 continuations give the same e-process and alarm; bad states and batches are one error
line, exit 2, the state file untouched; the gate and every output carry the check."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import special

from tests.cli_inprocess import assert_one_line_error, run_cli

BATCHES, ROWS = 30, 400
FAST = ("--local-tests", "none", "--n-resamples", "99", "--exit-zero")


def stream(shift_from: int | None = 12, seed: int = 5) -> pd.DataFrame:
    """30 batches of 400 rows; from batch ``shift_from`` on, group A's outcomes shift by
    +0.8 on the logit scale (``None``: calibrated throughout)."""
    rng = np.random.default_rng(seed)
    n = BATCHES * ROWS
    z = rng.normal(-1.0, 1.0, n)
    grp = np.array(list("ABCD"))[rng.integers(0, 4, n)]
    batch = np.repeat([f"b{k:02d}" for k in range(1, BATCHES + 1)], ROWS)
    number = np.repeat(np.arange(1, BATCHES + 1), ROWS)
    truth = z + (0.8 * ((number >= shift_from) & (grp == "A")) if shift_from else 0.0)
    label = (rng.uniform(size=n) < special.expit(truth)).astype(int)
    return pd.DataFrame({"label": label, "prob": np.round(special.expit(z), 6),
                         "grp": grp, "batch": batch})


def monitoring(path: Path) -> dict:
    return json.loads(path.read_text())["monitoring"]


@pytest.fixture(scope="module")
def drift(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    folder = tmp_path_factory.mktemp("drift")
    frame = stream()
    frame.to_csv(folder / "all.csv", index=False)
    for name, part in frame.groupby("batch", sort=True):
        part.to_csv(folder / f"{name}.csv", index=False)
    return folder, frame


@pytest.fixture(scope="module")
def whole(drift) -> Path:
    """One run over all 30 batches writing the JSON, HTML and Markdown (the folder)."""
    folder, _ = drift
    out = run_cli("test", folder / "all.csv", "--batch-col", "batch", "--covariates", "grp",
                  "--json", folder / "whole.json", "--html", folder / "r.html",
                  "--md", folder / "r.md", "--quiet", *FAST)
    assert out.code == 0, out.stderr
    return folder


@pytest.mark.slow
def test_thirty_continuations_equal_one_run(drift, whole):
    folder, _ = drift
    state = folder / "state.json"
    first = run_cli("test", folder / "b01.csv", "--batch-col", "batch", "--covariates", "grp",
                    "--save-state", state, "--quiet", *FAST)
    assert first.code == 0, first.stderr
    codes = []
    for k in range(2, BATCHES + 1):
        out = run_cli("monitor", state, folder / f"b{k:02d}.csv", "--json",
                      folder / f"m{k:02d}.json", "--quiet")
        assert out.code in (0, 1), out.stderr
        codes.append(out.code)
    one, many = monitoring(folder / "whole.json"), monitoring(folder / "m30.json")
    assert [w["label"] for w in many["windows"]] == [f"b{k:02d}" for k in range(1, 31)]
    assert [w["e_process"] for w in many["windows"]] == [w["e_process"] for w in one["windows"]]
    assert many["windows"] == one["windows"] and many["groups"] == one["groups"]
    alarm = one["eprocess"]["alarm_window"]
    assert alarm is not None and 12 <= alarm <= 30
    assert many["eprocess"]["alarm_window"] == alarm
    assert many["eprocess"]["status"] == one["eprocess"]["status"] == "FAIL"
    # the exit code follows the alarm: 0 before it, 1 from the batch that brings it on
    assert codes == [0] * (alarm - 2) + [1] * (BATCHES - alarm + 1)
    verdicts = [json.loads((folder / f"m{k:02d}.json").read_text())["verdict"]
                for k in range(2, 31)]
    assert verdicts[alarm - 2] == "FAIL" and verdicts[alarm - 3] != "FAIL"


@pytest.fixture()
def started(tmp_path, drift) -> tuple[Path, Path]:
    folder, _ = drift
    state = tmp_path / "state.json"
    out = run_cli("test", folder / "b01.csv", "--batch-col", "batch", "--covariates", "grp",
                  "--save-state", state, "--quiet", *FAST)
    assert out.code == 0, out.stderr
    return folder, state


def refused(state: Path, *args: object, fragment: str) -> None:
    before = state.read_bytes()
    out = run_cli("monitor", state, *args, "--json", state.parent / "never.json")
    assert out.code == 2
    assert_one_line_error(out, fragment)
    assert state.read_bytes() == before
    assert not (state.parent / "never.json").exists()


def test_tampered_state_is_refused(started):
    folder, state = started
    payload = json.loads(state.read_text())
    payload["windows"][0]["log_e"] = -5.0
    state.write_text(json.dumps(payload, indent=1))
    refused(state, folder / "b02.csv", fragment="checksum")


def test_truncated_state_is_refused(started):
    folder, state = started
    state.write_bytes(state.read_bytes()[: len(state.read_bytes()) // 2])
    refused(state, folder / "b02.csv", fragment="truncated")


def test_result_file_as_state_is_refused(started, tmp_path):
    folder, state = started
    result = tmp_path / "result.json"
    assert run_cli("test", folder / "b01.csv", "--json", result, "--quiet", *FAST).code == 0
    refused(result, folder / "b02.csv", fragment="not a calaudit monitoring state")


def test_batch_without_the_state_columns_is_refused(started, tmp_path):
    folder, state = started
    frame = pd.read_csv(folder / "b02.csv").drop(columns="grp")
    frame.to_csv(tmp_path / "nogrp.csv", index=False)
    refused(state, tmp_path / "nogrp.csv", fragment="grp")
    frame = pd.read_csv(folder / "b02.csv").rename(columns={"prob": "score"})
    frame.to_csv(tmp_path / "renamed.csv", index=False)
    refused(state, tmp_path / "renamed.csv", fragment="prob")


def test_a_batch_already_in_the_state_is_refused(started):
    folder, state = started
    refused(state, folder / "b01.csv", fragment="already in the monitoring state")


def test_new_group_level_is_refused(started, tmp_path):
    folder, state = started
    frame = pd.read_csv(folder / "b02.csv")
    frame.loc[0, "grp"] = "Z"
    frame.to_csv(tmp_path / "newlevel.csv", index=False)
    refused(state, tmp_path / "newlevel.csv", fragment="not among the run's levels")


def test_existing_state_is_never_overwritten(started):
    folder, state = started
    before = state.read_bytes()
    out = run_cli("test", folder / "b02.csv", "--batch-col", "batch", "--save-state", state,
                  *FAST)
    assert out.code == 2
    assert_one_line_error(out, "--save-state")
    assert state.read_bytes() == before


@pytest.mark.parametrize("args, fragment", [
    (("--window", "1X"), "--window"),
    (("--window", "1M"), "--time-col"),
    (("--time-col", "t"), "--window"),
    (("--window", "100", "--batch-col", "batch"), "--batch-col"),
    (("--save-state", "s.json"), "--save-state"),
])
def test_bad_window_options(drift, tmp_path, args, fragment):
    folder, _ = drift
    out = run_cli("test", folder / "b01.csv", *args, *FAST, cwd=tmp_path)
    assert out.code == 2
    assert_one_line_error(out, fragment)
    assert not (tmp_path / "s.json").exists()


def test_missing_time_column(drift):
    folder, _ = drift
    out = run_cli("test", folder / "b01.csv", "--time-col", "scored_at", "--window", "100",
                  *FAST)
    assert out.code == 2
    assert_one_line_error(out, "scored_at")


@pytest.mark.slow
def test_calibrated_stream_passes_and_every_output_lists_the_check(tmp_path):
    frame = stream(shift_from=None, seed=11)
    frame.to_csv(tmp_path / "calm.csv", index=False)
    out = run_cli("test", tmp_path / "calm.csv", "--window", "1000", "--covariates", "grp",
                  "--json", tmp_path / "r.json", "--junit", tmp_path / "j.xml",
                  "--md", tmp_path / "r.md", "--local-tests", "none", "--n-resamples", "99")
    result = json.loads((tmp_path / "r.json").read_text())
    test = next(t for t in result["tests"] if t["id"] == "calibration_eprocess")
    section = result["monitoring"]
    assert test["status"] == section["eprocess"]["status"] == "PASS"
    assert section["eprocess"]["alarm"] is False and section["eprocess"]["alarm_window"] is None
    assert len(section["windows"]) == 12 and section["eprocess"]["threshold"] == 40.0
    assert test["p_value"] == pytest.approx(min(1.0, 1.0 / section["eprocess"]["max_value"]))
    # the other primaries share the other half of alpha
    others = [t for t in result["tests"] if t["role"] == "primary" and t is not test]
    assert others and all(t["alpha"] == pytest.approx(0.025) for t in others)
    assert "calibration_eprocess" in (tmp_path / "j.xml").read_text()
    assert "calibration\\_eprocess" in (tmp_path / "r.md").read_text()
    assert "calibration_eprocess" in out.stdout
    assert "calibration_eprocess" in result["gate"]["rule"]


@pytest.mark.slow
def test_reports_show_calibration_over_time(whole):
    folder = whole
    html = (folder / "r.html").read_text()
    assert 'id="over-time"' in html and "Calibration over time" in html
    for kind in ("drift", "drift-groups", "drift-reliability"):
        assert f'class="figure-{kind}"' in html
    md = (folder / "r.md").read_text()
    assert "## Calibration over time" in md and "What to do about it" in md
    figures = sorted((folder / "r_files").glob("*drift*.svg"))
    assert len(figures) == 3
    for svg in figures:  # drawn lines, not empty axes
        assert svg.read_text().count("<path") > 20


def test_calendar_windows_from_a_parquet_timestamp_column(tmp_path):
    rng = np.random.default_rng(2)
    n = 3000
    z = rng.normal(-1.0, 1.0, n)
    frame = pd.DataFrame({
        "label": (rng.uniform(size=n) < special.expit(z)).astype(int),
        "prob": special.expit(z),
        "scored_at": pd.Timestamp("2026-01-01") + pd.to_timedelta(
            rng.uniform(0, 90 * 86400, n), unit="s")})
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    frame.assign(scored_at=frame["scored_at"].astype(str)).to_csv(tmp_path / "t.csv",
                                                                   index=False)
    for name in ("t.parquet", "t.csv"):
        out = run_cli("test", tmp_path / name, "--time-col", "scored_at", "--window", "1M",
                      "--json", tmp_path / f"{name}.json", "--quiet", *FAST)
        assert out.code == 0, out.stderr
    a, b = (monitoring(tmp_path / f"{name}.json") for name in ("t.parquet", "t.csv"))
    assert [w["label"] for w in a["windows"]] == ["2026-01", "2026-02", "2026-03"]
    assert a["windows"] == b["windows"]
    assert sum(w["n"] for w in a["windows"]) == 3000
