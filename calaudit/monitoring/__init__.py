"""Calibration over time: windows, per-window summaries, a sequential test of calibration
(an e-process whose alarm keeps its level however often it is looked at), a monitoring
state that continues batch after batch, and the recalibrate-or-refit advice after an alarm
(``docs/monitoring.md``). The drift plots are in :mod:`calaudit.monitoring.plots`
(imported on demand: it loads matplotlib)."""

from calaudit.monitoring.advice import Advice, advise, drift_start
from calaudit.monitoring.monitor import MonitorConfig, MonitorState, start, update
from calaudit.monitoring.state import load_state, save_state
from calaudit.monitoring.windows import MAX_WINDOWS, WindowRule, assign_windows, parse_window

__all__ = ["MAX_WINDOWS", "Advice", "MonitorConfig", "MonitorState", "WindowRule", "advise",
           "assign_windows", "drift_start", "load_state", "parse_window", "save_state",
           "start", "update"]
