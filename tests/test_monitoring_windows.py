"""Window rules and window assignment (calaudit.monitoring.windows), and the monitoring
run's refusal of rows that do not continue it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calaudit.exceptions import ConfigError, InputError
from calaudit.monitoring import windows as win
from calaudit.monitoring.monitor import MonitorConfig, start, update


@pytest.mark.parametrize("spec, kind, size, unit", [
    ("1M", "calendar", 1, "M"), ("7D", "calendar", 7, "D"), ("W", "calendar", 1, "W"),
    ("12h", "calendar", 12, "H"), ("Q", "calendar", 1, "Q"), (5000, "rows", 5000, ""),
    ("300rows", "rows", 300, ""), ("batch", "batch", 1, "")])
def test_parse_window(spec, kind, size, unit):
    rule = win.parse_window(spec)
    assert (rule.kind, rule.size, rule.unit) == (kind, size, unit)
    assert win.parse_window(rule.text()) == rule


@pytest.mark.parametrize("spec", ["1min", "0D", "M1", "", 0, "-5", 10**20,
                                  "99999999999999999999", "99999999999D", "1001Y",
                                  "12001M", "365001D"])
def test_bad_window_rules_are_config_errors(spec):
    with pytest.raises(ConfigError, match="window"):
        win.parse_window(spec)


def test_months_in_time_order_with_labels_and_gaps():
    times = pd.Series(["2024-03-05", "2024-01-31 23:59", "2024-01-01", "2024-03-01",
                       "2024-01-15"])
    w = win.assign_windows(win.parse_window("1M"), 5, times=times)
    assert w.labels == ("2024-01", "2024-03")
    assert w.starts == ("2024-01-01T00:00:00", "2024-03-01T00:00:00")
    assert w.ends[0] == "2024-02-01T00:00:00"
    assert [list(w.rows(k)) for k in range(w.count)] == [[2, 4, 1], [3, 0]]
    assert w.empty_periods == 1
    assert list(w.of_rows()) == [1, 0, 0, 1, 0]


def test_day_and_week_windows_are_anchored_at_fixed_dates():
    times = pd.to_datetime(["2024-01-01", "2024-01-07", "2024-01-08"])  # Mon, Sun, Mon
    weeks = win.assign_windows(win.parse_window("W"), 3, times=times)
    assert weeks.labels == ("2024-01-01", "2024-01-08")
    seven = win.assign_windows(win.parse_window("7D"), 1, times=times[:1])
    assert pd.Timestamp(seven.starts[0]).day_of_week == 3  # 7-day windows start on Thursdays


def test_time_zones_are_converted_to_utc():
    times = pd.Series(["2024-01-31T23:30:00-02:00", "2024-01-31T23:30:00+00:00"])
    w = win.assign_windows(win.parse_window("1M"), 2, times=times)
    assert w.labels == ("2024-01", "2024-02")
    assert list(w.rows(0)) == [1]


@pytest.mark.parametrize("times, match", [
    (["2024-01-01", None], "missing or unreadable times"),
    ([1.5, 2.5], "type float"),
    (["2024-01-01", "not a date"], "cannot be read as dates"),
    ([pd.Timestamp("2024-01-01"), 3.5], "cannot be read|missing")])
def test_bad_times_are_one_input_error(times, match):
    with pytest.raises(InputError, match=match):
        win.assign_windows(win.parse_window("1D"), 2, times=times, source="f.csv")


@pytest.mark.parametrize("rule, when", [("1Y", "9999-12-25"), ("1M", "9999-12-25"),
                                        ("1000Y", "0001-01-03"), ("7D", "0001-01-03")])
def test_windows_beyond_the_representable_years_are_one_input_error(rule, when):
    times = pd.Series([pd.Timestamp(when).to_pydatetime()] * 3, dtype=object)
    with pytest.raises(InputError, match="years 1-9999"):
        win.assign_windows(win.parse_window(rule), 3, times=times, source="f.csv")


def test_too_many_windows_is_refused():
    times = pd.date_range("2000-01-01", periods=win.MAX_WINDOWS + 1, freq="h")
    with pytest.raises(InputError, match="more than the limit"):
        win.assign_windows(win.parse_window("1H"), times.size, times=times)


def test_calendar_windows_need_a_time_column():
    with pytest.raises(ConfigError, match="time column"):
        win.assign_windows(win.parse_window("1M"), 3)


def test_row_windows_follow_time_order_and_end_short():
    times = np.array([5.0, 1.0, 3.0, 2.0, 4.0])
    w = win.assign_windows(win.parse_window(2), 5, times=times, first_key=7, first_row=10)
    assert w.keys == (7, 8, 9)
    assert [list(w.rows(k)) for k in range(3)] == [[1, 3], [2, 4], [0]]
    assert w.labels[0] == "rows 11-12" and w.labels[2] == "rows 15-15"
    with pytest.raises(InputError, match="missing"):
        win.assign_windows(win.parse_window(2), 2, times=np.array([1.0, np.nan]))


def test_batch_windows_ordered_by_earliest_time_or_first_appearance():
    batch = ["b", "a", "b", "c"]
    by_time = win.assign_windows(win.parse_window("batch"), 4, batch=batch,
                                 times=[3.0, 4.0, 1.0, 2.0])
    assert by_time.keys == ("b", "c", "a")
    assert [list(by_time.rows(k)) for k in range(3)] == [[2, 0], [3], [1]]
    by_file = win.assign_windows(win.parse_window("batch"), 4, batch=batch)
    assert by_file.keys == ("b", "a", "c")
    with pytest.raises(InputError, match="without a batch"):
        win.assign_windows(win.parse_window("batch"), 2, batch=["a", None])


def data(rng, n, start_day):
    times = pd.Timestamp("2024-01-01") + pd.to_timedelta(
        np.sort(rng.uniform(start_day, start_day + 2, n)), unit="D")
    p = rng.uniform(0.1, 0.9, n)
    return p, (rng.uniform(size=n) < p).astype(int), times


def test_a_batch_may_not_reopen_a_window_the_state_holds():
    rng = np.random.default_rng(1)
    state = update(start(MonitorConfig(window="1D", time_col="t", n_boot=2)),
                   *data(rng, 100, 0)[:2], times=data(rng, 100, 0)[2])
    p, y, times = data(rng, 50, 1.5)
    with pytest.raises(InputError, match="already holds"):
        update(state, p, y, times=times)


def test_a_batch_name_may_not_come_twice():
    cfg = MonitorConfig(window="batch", batch_col="b", n_boot=2)
    state = update(start(cfg), np.full(4, 0.5), np.array([0, 1, 0, 1]), batch=["x"] * 4)
    with pytest.raises(InputError, match="already in the monitoring state"):
        update(state, np.full(2, 0.5), np.array([0, 1]), batch=["x", "y"])


def test_unknown_group_level_is_refused():
    cfg = MonitorConfig(window=10, groups=(("g", ("a", "b")),), n_boot=2)
    with pytest.raises(InputError, match="level 'c' is not among"):
        update(start(cfg), np.full(3, 0.5), np.array([0, 1, 1]),
               covariates={"g": ["a", "c", "b"]})
