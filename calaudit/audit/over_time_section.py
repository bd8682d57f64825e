"""The ``monitoring`` section of the JSON result: the run's settings, the e-process with
its alarm (the status of the check ``calibration_eprocess``), the per-window table, the
group table per window, the advice after an alarm and, with the per-window battery,
each window's metrics, tests and groups (diagnostics: ``window_battery.note``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from calaudit.audit.window_battery import NOTE
from calaudit.monitoring import Advice, MonitorState
from calaudit.results import TestResult


def _num(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def monitoring_section(state: MonitorState, test: TestResult, advice: Advice | None,
                       state_file: Mapping[str, Any] | None) -> dict[str, Any]:
    """The section (ids in ``docs/monitoring.md``)."""
    config = state.config
    alarm = state.alarm_window
    last = state.history[-1] if state.history else None
    return {
        "window": config.window, "time_col": config.time_col, "batch_col": config.batch_col,
        "level": config.alpha,
        "state": dict(state_file) if state_file else None,
        "eprocess": {
            "id": test.id, "value": state.e_value,
            "max_value": math.exp(state.eprocess.max_log_value),
            "threshold": 1.0 / config.alpha,
            "p_value": test.p_value,
            "alarm": alarm is not None,
            "alarm_window": alarm.summary.number if alarm else None,
            "alarm_label": alarm.summary.label if alarm else None,
            "families": {k: math.exp(v) for k, v in last.families.items()} if last else {},
            "status": test.status.value if test.status else None},
        "windows": [_window(r) for r in state.history],
        "groups": [_group(r.summary.number, g, d) for r in state.history
                   for g, d in zip(r.summary.groups, r.directions[2:])],
        "advice": _advice(advice) if advice is not None else None,
        "window_battery": ({"gating": False, "note": NOTE}
                           if any(r.battery is not None for r in state.history) else None),
    }


def _window(r: Any) -> dict[str, Any]:
    s = r.summary
    row = {"window": s.number, "label": s.label, "start": s.start, "end": s.end, "n": s.n,
           "events": s.events, "mean_prediction": s.mean_prediction,
           "observed_rate": s.observed_rate, "citl": s.citl.as_list(),
           "slope": s.slope.as_list(), "ece": s.ece.as_list(),
           "e_process": math.exp(r.log_e)}
    row.update({f"e_{k}": math.exp(v) for k, v in r.families.items()})
    row["alarm"] = r.alarm
    row["bins"] = {"count": list(s.bins[0]), "sum_prediction": list(s.bins[1]),
                   "sum_label": list(s.bins[2])}
    row["battery"] = None if r.battery is None else dict(r.battery)
    return row


def _group(number: int, g: Any, log_e: float) -> dict[str, Any]:
    return {"window": number, "covariate": g.covariate, "level": g.level, "n": g.n,
            "events": g.events, "mean_prediction": g.mean_prediction,
            "bias": g.bias.as_list(), "e_process": math.exp(log_e)}


def _advice(a: Advice) -> dict[str, Any]:
    return {"verdict": a.verdict, "reason": a.reason, "intercept": _num(a.intercept),
            "slope": _num(a.slope), "covariate": a.covariate,
            "group_intercepts": {k: _num(v) for k, v in a.group_intercepts} or None,
            "fit_windows": list(a.fit_windows), "check_windows": list(a.check_windows),
            "check_citl": a.check_citl.as_list(), "check_slope": a.check_slope.as_list(),
            "check_e_value": _num(a.check_e_value)}
