"""Calibration over time within an audit: the rows cut into windows, the monitoring run over
them, its check ``calibration_eprocess`` and the result's ``monitoring`` section.

The check's level ``MONITOR_SHARE * alpha`` is fixed when the run starts and kept in the
state, so ``calaudit monitor`` continues at the same threshold ``1 / level``. It FAILs
exactly on an alarm; its p-value is ``min(1, 1 / max_t E_t)`` (Ville's inequality), its
adjusted p-value ``min(1, p alpha / level)``."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from calaudit import progress, registry
from calaudit.audit.config import AuditConfig
from calaudit.audit.gate.decision import MONITOR_ID, MONITOR_SHARE
from calaudit.audit.sections.monitoring import MonitoringConfig
from calaudit.audit.stages import StageOutput
from calaudit.audit.window_battery import (
    battery_config,
    battery_settings,
    run_window_battery,
    window_data,
)
from calaudit.data.dataset import CalibrationData
from calaudit.exceptions import ConfigError, InputError
from calaudit.monitoring import (
    Advice,
    MonitorConfig,
    MonitorState,
    advise,
    drift_start,
    start,
    update,
)
from calaudit.monitoring.monitor import batch_windows
from calaudit.monitoring.summaries import top_label
from calaudit.results import Status, TestResult

METHOD = ("e-process of calibration over time: Bennett bets on the windows' residuals "
          "(calibration-in-the-large, slope, each group), mixed over bet sizes and start "
          "windows; alarm when E reaches 1/level; p = min(1, 1/max E) (Ville)")


@dataclass(frozen=True)
class Batch:
    """Rows handed to the monitoring run: predictions, class indices, the time and batch
    columns (``None`` when not used) and the categorical covariates' levels."""

    probs: np.ndarray
    labels: np.ndarray
    times: Any = None
    batch: Any = None
    covariates: Mapping[str, np.ndarray] = field(default_factory=dict)


def order_columns(path: str, monitoring: MonitoringConfig | MonitorConfig, n: int
                  ) -> tuple[Any, Any]:
    """The time and batch columns of the data file at ``path`` (``None`` when not asked
    for), checked to hold one value per used row."""
    from calaudit.data.load import open_input

    names = [c for c in (monitoring.time_col, monitoring.batch_col) if c]
    if not names:
        return None, None
    reader = open_input(path)
    present = reader.columns()
    for name in names:
        if name not in present:
            raise InputError(f"column not found; columns: {', '.join(map(str, present))}",
                             source=path, column=name, rule="monitoring_columns")
    frame = _read_parquet(path, names) if _is_parquet_file(path) else reader.read(names)
    if len(frame) != n:
        raise InputError(f"{len(frame)} rows read but {n} used: windows need every row",
                         source=path, column=names[0], rule="monitoring_rows",
                         hint="fix the invalid rows instead of --drop-invalid")
    return tuple(frame[c].to_numpy() if c else None for c in
                 (monitoring.time_col, monitoring.batch_col))  # type: ignore[return-value]


def _is_parquet_file(path: str) -> bool:
    import os

    return path.lower().endswith((".parquet", ".pq")) and os.path.isfile(path)


def _read_parquet(path: str, names: list[str]) -> pd.DataFrame:
    """The order columns of a Parquet file as they are stored (timestamps stay
    timestamps, which the audit's own reader refuses as covariates)."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path, columns=names).to_pandas()
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the column ({str(exc).splitlines()[0][:80]})",
                         source=path, column=names[0], rule="monitoring_columns") from None


def batch_of(data: CalibrationData, path: str,
             monitoring: MonitoringConfig | MonitorConfig) -> Batch:
    """The monitoring rows of loaded ``data`` read from ``path``."""
    times, batch = order_columns(path, monitoring, data.n)
    return batch_from(data, times, batch)


def batch_from(data: CalibrationData, times: Any = None, batch: Any = None) -> Batch:
    """The monitoring rows of ``data`` with its time and batch columns."""
    probs = data.positive_proba if data.is_binary else np.asarray(data.y_proba)
    covariates = {c.name: c.labels() for c in data.covariates if c.kind == "categorical"}
    return Batch(probs, np.asarray(data.y_true), times, batch, covariates)


def run_over_time(data: CalibrationData, config: AuditConfig, *, times: Any = None,
                  batch: Any = None, state: MonitorState | None = None,
                  source: str = "data") -> tuple[MonitorState, Advice | None]:
    """The Python API of ``calaudit test --time-col/--window/--batch-col`` and, given an earlier
    ``state``, of ``calaudit monitor``: ``data`` cut into windows by ``config.monitoring``
    (``times``, ``batch``: the rows' time and batch columns) and appended to ``state`` (None:
    a new run); returns the new state and the advice after an alarm."""
    if state is None:
        if not config.monitoring.enabled:
            raise ConfigError("no windows: set config.monitoring.window (or batch_col)")
        state = start(start_config(data, config.monitoring, config))
    return run_batch(state, batch_from(data, times, batch), source, data, config.executor)


def start_config(data: CalibrationData, monitoring: MonitoringConfig,
                 config: AuditConfig) -> MonitorConfig:
    """The configuration of a new monitoring run: its level is ``MONITOR_SHARE * alpha``;
    its groups are the categorical covariates with their levels in ``data``."""
    prov = data.provenance
    if prov.score_kind != "probability":
        raise InputError("monitoring needs probability columns (a state is continued "
                         "from the same columns)", source=prov.files[0].path if prov.files
                         else "data", column=",".join(prov.score_columns), rule="window",
                         hint="write the probabilities to the file and use --prob-cols")
    groups = tuple((c.name, tuple(str(x) for x in c.categories))
                   for c in data.covariates if c.kind == "categorical")
    return MonitorConfig(alpha=MONITOR_SHARE * config.alpha, window=str(monitoring.window),
                         time_col=monitoring.time_col, batch_col=monitoring.batch_col,
                         label_col=str(prov.label_column or "label"),
                         prob_cols=tuple(prov.score_columns) or ("prob",), groups=groups,
                         n_bins=config.binning.n_bins, seed=config.seed,
                         battery=battery_settings(config) if monitoring.window_battery
                         else None)


def run_batch(state: MonitorState, batch: Batch, source: str,
              data: CalibrationData | None = None, executor: Any = None
              ) -> tuple[MonitorState, Advice | None]:
    """``state`` with ``batch`` appended, with the window battery on ``data``'s rows when the
    run has one, and the advice when the alarm has fired."""
    new = update(state, batch.probs, batch.labels, times=batch.times, batch=batch.batch,
                 covariates=batch.covariates, source=source)
    if new.config.battery is not None and data is not None:
        new = with_batteries(state, new, batch, data, source, executor)
    if not new.eprocess.alarm_window:
        return new, None
    return new, advice_for(state, new, batch, source)


def with_batteries(before: MonitorState, after: MonitorState, batch: Batch,
                   data: CalibrationData, source: str, executor: Any = None) -> MonitorState:
    """``after`` with the battery (:mod:`calaudit.audit.window_battery`) of every window
    the batch brought, run on its rows in time order with the window's seed."""
    windows = batch_windows(before, len(batch.labels), batch.times, batch.batch, source)
    config = battery_config(after.config.battery, executor)
    names = [name for name, _ in after.config.groups]
    records = list(after.history)
    first = len(before.history)
    for w in range(windows.count):
        number = first + w + 1
        with progress.task(f"window battery {number}"):
            result = run_window_battery(window_data(data, windows.rows(w), names), config,
                                        number)
        records[first + w] = dataclasses.replace(records[first + w], battery=result)
    return dataclasses.replace(after, history=tuple(records))


def advice_for(before: MonitorState, after: MonitorState, batch: Batch,
               source: str) -> Advice | None:
    """Recalibrate or refit (:func:`calaudit.monitoring.advise`) on the batch's rows of
    the windows since the drift started, by group for the covariate whose group
    e-process is largest; ``None`` when the drift started before this batch."""
    n = len(batch.labels)
    windows = batch_windows(before, n, batch.times, batch.batch, source)
    s = np.array([r.s for r in after.history])
    v = np.array([r.v for r in after.history])
    first = max(drift_start(s, v, after.config.n_groups), len(before.history) + 1)
    number = windows.of_rows() + len(before.history) + 1
    rows = windows.order[number[windows.order] >= first]
    p, y = top_label(batch.probs, batch.labels)
    covariate = None
    last = after.history[-1].directions[2:]
    if len(last):
        best, offset = int(np.argmax(last)), 0
        for name, levels in after.config.groups:
            if best < offset + len(levels):
                codes = pd.Series(batch.covariates[name]).astype(str).map(
                    {lv: k for k, lv in enumerate(levels)}).to_numpy(np.int64)
                covariate = (name, levels, codes[rows])
                break
            offset += len(levels)
    return advise(p[rows], y[rows], number[rows], covariate=covariate,
                  alpha=after.config.alpha)


def eprocess_test(state: MonitorState, alpha: float) -> TestResult:
    """The check ``calibration_eprocess`` of ``state`` (module docstring); ``alpha``: the
    audit's level."""
    e = state.eprocess
    level = state.config.alpha
    p = min(1.0, math.exp(-e.max_log_value))
    alarm = state.alarm_window
    params = {"level": level, "threshold": 1.0 / level, "windows": e.windows,
              "e_value": state.e_value, "max_e_value": math.exp(e.max_log_value),
              "alarm_window": alarm.summary.number if alarm else None,
              "alarm_label": alarm.summary.label if alarm else None}
    message = (f"alarm in window {alarm.summary.label}: E reached 1/level = {1 / level:g}"
               if alarm else f"no alarm: E stayed below 1/level = {1 / level:g}")
    return TestResult(MONITOR_ID, math.exp(e.max_log_value), state.e_value, p, METHOD,
                      params=params, status=Status.FAIL if alarm else Status.PASS,
                      alpha=alpha, p_value_adjusted=min(1.0, p * alpha / level),
                      message=message, title=registry.title(MONITOR_ID),
                      family="monitoring", role="primary")


@dataclass(frozen=True)
class OverTimeStage:
    """The audit stage of a finished monitoring run: its check and its section."""

    state: MonitorState
    advice: Advice | None = None
    state_file: Mapping[str, Any] | None = None
    name: str = "over_time"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        from calaudit.audit.over_time_section import monitoring_section

        test = eprocess_test(self.state, config.alpha)
        return StageOutput(tests=(test,), monitoring=monitoring_section(
            self.state, test, self.advice, self.state_file))
