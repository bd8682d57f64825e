"""The per-window battery: each window's metrics, tests and groups are exactly those of
auditing the window's rows alone with the API (seed derived from the run's seed and the
window's number); the settings round-trip through the state; old states still load."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from scipy import special

from calaudit import AuditConfig, CalibrationData, run_audit
from calaudit.audit.config import LocalConfig, MonitoringConfig
from calaudit.audit.over_time import run_over_time
from calaudit.audit.window_battery import (
    NOTE,
    battery_config,
    battery_frame,
    battery_settings,
    window_seed,
)
from calaudit.exceptions import ConfigError, InputError
from calaudit.monitoring.state import checksum, state_from_text, state_to_json

WINDOWS, ROWS = 3, 300


def rows(seed: int = 4):
    """Three batches of 300 rows; the second has no row of group D (its levels are those
    present), the third is biased for group A."""
    rng = np.random.default_rng(seed)
    n = WINDOWS * ROWS
    z = rng.normal(-0.5, 1.0, n)
    batch = np.repeat([f"b{k}" for k in range(1, WINDOWS + 1)], ROWS)
    grp = np.array(list("ABCD"))[rng.integers(0, 4, n)]
    grp[(batch == "b2") & (grp == "D")] = "C"
    truth = z + 0.9 * ((batch == "b3") & (grp == "A"))
    y = (rng.uniform(size=n) < special.expit(truth)).astype(int)
    return special.expit(z), y, grp, batch


def config(**kw) -> AuditConfig:
    return AuditConfig(seed=3, n_resamples=49, local=LocalConfig(n_resamples=49), **kw,
                       monitoring=MonitoringConfig(batch_col="batch", window_battery=True))


@pytest.fixture(scope="module")
def run():
    p, y, grp, batch = rows()
    data = CalibrationData.from_arrays(y, p, covariates={"grp": grp}, categorical=["grp"])
    cfg = config(ci=True)
    state, _ = run_over_time(data, cfg, batch=batch)
    return (p, y, grp, batch), cfg, state


def test_each_window_equals_auditing_its_rows_with_the_api(run):
    (p, y, grp, batch), cfg, state = run
    assert [r.summary.label for r in state.history] == ["b1", "b2", "b3"]
    for k, record in enumerate(state.history, start=1):
        mine = batch == f"b{k}"
        alone = CalibrationData.from_arrays(y[mine], p[mine], covariates={"grp": grp[mine]},
                                            categorical=["grp"])
        direct = run_audit(alone, dataclasses.replace(
            cfg, seed=window_seed(cfg.seed, k), monitoring=MonitoringConfig()))
        b = record.battery
        assert b["seed"] == window_seed(3, k) and b["n"] == ROWS and b["skipped"] is None
        assert {m["id"]: (m["value"], m["ci"]) for m in b["metrics"]} == {
            m.id: (m.value, None if m.ci is None else list(m.ci)) for m in direct.metrics}
        assert any(m["ci"] for m in b["metrics"] if m["id"] == "ece")
        assert {t["id"]: t["p_value"] for t in b["tests"]} == {
            t.id: t.p_value for t in direct.tests}
        assert {t["id"] for t in b["tests"] if t["role"] == "primary"} == {
            t.id for t in direct.tests if t.role == "primary"}
        assert [(g["group"], g["bias"], g["bias_ci"], g["p_value"]) for g in b["groups"]] == [
            (g["group"], g["bias"], g["bias_ci"], g["p_value"]) for g in direct.groups]
    assert [g["group"] for g in state.history[1].battery["groups"]] == \
        ["grp=A", "grp=B", "grp=C"]


def test_tests_are_marked_as_diagnostics(run):
    _, cfg, state = run
    for record in state.history:
        for t in record.battery["tests"]:
            assert t["status"] == ("below_alpha" if t["p_value"] < cfg.alpha
                                   else "not_below_alpha")
    # window 3's group A is biased: its local test rejects, a diagnostic only
    last = {t["id"]: t for t in state.history[2].battery["tests"]}
    assert last["local_consistency"]["status"] == "below_alpha"
    assert "do not gate" in NOTE and "calibration_eprocess" in NOTE


def test_the_frame_lists_every_window(run):
    _, _, state = run
    frame = battery_frame(state)
    assert set(frame["window"]) == {1, 2, 3}
    assert set(frame["kind"]) == {"metric", "test", "group"}
    ece = frame[(frame["kind"] == "metric") & (frame["id"] == "ece")]
    assert list(ece["value"]) == [r.battery["metrics"][0]["value"] for r in state.history]


def test_a_window_depends_only_on_its_rows_and_number(run):
    (p, y, grp, batch), cfg, state = run
    later = batch != "b1"
    first, _ = run_over_time(
        CalibrationData.from_arrays(y[~later], p[~later], covariates={"grp": grp[~later]},
                                    categorical=["grp"]), cfg, batch=batch[~later])
    both, _ = run_over_time(
        CalibrationData.from_arrays(y[later], p[later], covariates={"grp": grp[later]},
                                    categorical=["grp"]), cfg, batch=batch[later],
        state=first)
    assert [r.battery for r in both.history] == [r.battery for r in state.history]
    assert window_seed(3, 1) != window_seed(3, 2) != window_seed(4, 2)


def test_settings_round_trip_through_the_state(run):
    _, cfg, state = run
    odd = dataclasses.replace(cfg, alpha=0.1, n_resamples=77,
                              local=LocalConfig(tests=("klce_consistency",), n_resamples=9))
    assert battery_config(battery_settings(odd)) == dataclasses.replace(
        odd, thresholds=(), monitoring=MonitoringConfig(), run_tests=True)
    again = state_from_text(state_to_json(state))
    assert state_to_json(again) == state_to_json(state) and again.config == state.config
    assert [r.battery for r in again.history] == [r.battery for r in state.history]
    assert again.config.battery == battery_settings(cfg)
    with pytest.raises(ConfigError, match="unknown setting not_a_setting"):
        battery_config({**battery_settings(cfg), "not_a_setting": 1})
    settings = battery_settings(cfg)
    with pytest.raises(ConfigError, match="unknown setting local.nope"):
        battery_config({**settings, "local": {**settings["local"], "nope": 1}})


def test_a_state_written_before_the_battery_still_loads(run):
    _, _, state = run
    payload = json.loads(state_to_json(state))
    payload["schema_version"] = 1
    del payload["config"]["battery"]
    for window in payload["windows"]:
        del window["battery"]
    payload["checksum"] = checksum(payload)
    old = state_from_text(json.dumps(payload))
    assert old.config.battery is None and all(r.battery is None for r in old.history)
    assert [r.log_e for r in old.history] == [r.log_e for r in state.history]
    assert json.loads(state_to_json(old))["schema_version"] == 2
    payload["schema_version"] = 3
    payload["checksum"] = checksum(payload)
    with pytest.raises(InputError, match="schema_version 3; this calaudit reads 1 and 2"):
        state_from_text(json.dumps(payload))


def test_a_window_with_one_class_is_skipped():
    p, y, grp, batch = rows()
    y = y.copy()
    y[batch == "b2"] = 0
    data = CalibrationData.from_arrays(y, p, covariates={"grp": grp}, categorical=["grp"])
    state, _ = run_over_time(data, config(), batch=batch)
    skipped = state.history[1].battery
    assert skipped["skipped"] == "the window's rows hold one class only"
    assert skipped["tests"] == [] and state.history[2].battery["tests"]
