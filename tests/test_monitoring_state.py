"""Monitoring runs continued batch by batch equal one run over the concatenated rows, and
the state file round-trips and refuses tampered, truncated and mismatched files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from calaudit.exceptions import CalauditError, InputError
from calaudit.monitoring.monitor import MonitorConfig, start, update
from calaudit.monitoring.state import checksum, load_state, save_state, state_to_json

GROUPS = (("region", ("north", "south", "west")),)


def stream(seed=0, days=30, per_day=120, classes=1):
    rng = np.random.default_rng(seed)
    n = days * per_day
    day = np.repeat(np.arange(days), per_day)
    times = pd.Timestamp("2024-01-01") + pd.to_timedelta(day + rng.uniform(0, 1, n),
                                                         unit="D")
    region = rng.choice(["north", "south", "west"], n)
    if classes == 1:
        p = rng.uniform(0.05, 0.95, n)
        q = np.where(day >= 20, np.minimum(p + 0.1, 1), p)
        y = (rng.uniform(size=n) < q).astype(int)
    else:
        p = rng.dirichlet(np.ones(classes), n)
        y = np.array([rng.choice(classes, p=row) for row in p])
    return p, y, times, region, day


def config(**kw):
    return MonitorConfig(**{"window": "1D", "time_col": "scored_at", "groups": GROUPS,
                            "n_boot": 20, "seed": 7, **kw})


@pytest.mark.parametrize("classes", [1, 3])
def test_thirty_batches_equal_one_run(classes, tmp_path):
    p, y, times, region, day = stream(classes=classes)
    once = update(start(config()), p, y, times=times, covariates={"region": region})
    path = tmp_path / "state.json"
    save_state(path, start(config()))
    for d in range(30):
        rows = day == d
        state = update(load_state(path, config()), p[rows], y[rows], times=times[rows],
                       covariates={"region": region[rows]})
        save_state(path, state)
    final = load_state(path, config())
    assert state_to_json(final) == state_to_json(once)
    pd.testing.assert_frame_equal(final.table(), once.table())
    assert [r.log_e for r in final.history] == [r.log_e for r in once.history]
    if classes == 1:
        assert 21 <= final.eprocess.alarm_window <= 30


def test_row_windows_continue_across_batches():
    p, y, _, region, _ = stream(days=4)
    cfg = config(window="100rows", time_col=None)
    once = update(start(cfg), p, y, covariates={"region": region})
    twice = update(update(start(cfg), p[:200], y[:200], covariates={"region": region[:200]}),
                   p[200:], y[200:], covariates={"region": region[200:]})
    assert state_to_json(once) == state_to_json(twice)


def test_round_trip_keeps_every_value(tmp_path):
    p, y, times, region, _ = stream(days=5)
    state = update(start(config()), p, y, times=times, covariates={"region": region})
    save_state(tmp_path / "s.json", state)
    back = load_state(tmp_path / "s.json")
    assert state_to_json(back) == state_to_json(state)
    pd.testing.assert_frame_equal(back.group_table(), state.group_table())
    np.testing.assert_array_equal(back.eprocess.log_a, state.eprocess.log_a)
    payload = json.loads((tmp_path / "s.json").read_text())
    assert payload["schema_version"] == 2 and payload["kind"] == "calaudit-monitor-state"
    assert payload["config"]["window"] == "1D" and len(payload["windows"]) == 5


@pytest.fixture
def saved(tmp_path):
    p, y, times, region, _ = stream(days=3)
    path = tmp_path / "s.json"
    save_state(path, update(start(config()), p, y, times=times,
                            covariates={"region": region}))
    return path


def refused(path, match, expected=None):
    before = path.read_bytes()
    with pytest.raises(InputError, match=match) as info:
        load_state(path, expected)
    assert "\n" not in info.value.one_line() and str(path) in info.value.one_line()
    assert path.read_bytes() == before


def test_tampered_state_is_refused(saved):
    text = saved.read_text()
    payload = json.loads(text)
    payload["eprocess"]["max_log_value"] += 1.0
    saved.write_text(json.dumps(payload))
    refused(saved, "checksum does not match")


def test_truncated_state_is_refused(saved):
    saved.write_bytes(saved.read_bytes()[:-200])
    refused(saved, "truncated or not JSON")


def test_other_files_are_refused(saved):
    saved.write_text(json.dumps({"schema_version": 1, "metrics": []}))
    refused(saved, "not a calaudit monitoring state")
    saved.write_text("")
    refused(saved, "truncated or not JSON")


def test_newer_schema_is_refused(saved):
    payload = json.loads(saved.read_text())
    payload["schema_version"] = 3
    payload["checksum"] = checksum(payload)
    saved.write_text(json.dumps(payload))
    refused(saved, "schema_version 3")


def test_malformed_state_with_a_valid_checksum_is_refused(saved):
    payload = json.loads(saved.read_text())
    payload["eprocess"]["windows"] = 7
    payload["checksum"] = checksum(payload)
    saved.write_text(json.dumps(payload))
    refused(saved, "does not match its windows")
    payload["bets"]["lambdas"][0] = 0.5
    payload["checksum"] = checksum(payload)
    saved.write_text(json.dumps(payload))
    refused(saved, "other bets")


@pytest.mark.parametrize("change", [{"alpha": 0.01}, {"window": "7D"},
                                    {"time_col": "t"}, {"groups": ()}])
def test_mismatched_configuration_is_refused(saved, change):
    refused(saved, f"started with {next(iter(change))}=", config(**change))


def test_failed_save_leaves_the_state_untouched(saved, tmp_path):
    before = saved.read_bytes()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    state = load_state(saved)
    with pytest.raises(CalauditError):
        save_state(blocker / "state.json", state)
    assert saved.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "s.json"]
