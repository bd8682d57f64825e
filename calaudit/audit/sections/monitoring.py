"""Calibration over time: the ``[monitoring]`` section (``--time-col``, ``--window``,
``--batch-col``, ``--window-battery``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from calaudit.audit.sections.common import check
from calaudit.exceptions import ConfigError


@dataclass(frozen=True)
class MonitoringConfig:
    """Windows in time order and the e-process of calibration over them. Off unless
    ``window`` (or ``batch_col``) is set."""

    window: str | None = field(default=None, metadata={
        "help": "window rule: a period (1M, 7D, 1D, 12H, W, Q, Y), a row count (5000) or "
                "batch (one window per value of batch_col); none: no monitoring"})
    time_col: str | None = field(default=None, metadata={
        "help": "column of the rows' times (orders the rows; needed by period windows)"})
    batch_col: str | None = field(default=None, metadata={
        "help": "categorical column naming each row's batch (window = batch)"})
    window_battery: bool = field(default=False, metadata={
        "help": "also run the audit's battery (metrics, global and local tests, group "
                "table) on each window's rows: diagnostics that do not gate"})

    def __post_init__(self) -> None:
        from calaudit.monitoring.windows import parse_window

        window = self.window
        if self.batch_col and window is None:
            object.__setattr__(self, "window", window := "batch")
        if window is None:
            check(self.time_col is None, "needs --window (a period such as 1M, "
                                         "a row count, or --batch-col) [monitoring]")
            return
        try:
            rule = parse_window(window)
        except ConfigError as exc:  # the option is named by the settings layer
            raise ConfigError(exc.message.removeprefix("--window "), hint=exc.hint) from None
        object.__setattr__(self, "window", rule.text())
        check(rule.kind != "batch" or bool(self.batch_col),
              "'batch' needs --batch-col COL [monitoring]")
        check(rule.kind == "batch" or not self.batch_col,
              f"--batch-col with --window {window}: a batch column is its own window rule; "
              "drop --window or --batch-col [monitoring]")
        check(rule.kind != "calendar" or bool(self.time_col),
              f"'{window}' (a calendar period) needs --time-col COL [monitoring]")

    @property
    def enabled(self) -> bool:
        return self.window is not None
