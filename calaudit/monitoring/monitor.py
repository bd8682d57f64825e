"""Monitoring runs: windows in, per-window summaries and the e-process out, batch by batch.

:func:`start` makes an empty :class:`MonitorState`; :func:`update` appends one batch and
returns the new (immutable) state. Appending batches one by one gives the values of one
:func:`update` over the concatenated rows, provided every batch holds whole windows (adding
rows to a window the state holds is refused)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calaudit.exceptions import ConfigError, InputError
from calaudit.monitoring.eprocess import EProcess, Step, advance
from calaudit.monitoring.summaries import (
    WindowSummary,
    group_frame,
    summarize_window,
    top_label,
    window_frame,
)
from calaudit.monitoring.windows import Windows, assign_windows, parse_window


@dataclass(frozen=True)
class MonitorConfig:
    """What stays the same for the whole run (kept in the state, compared on every
    continuation): level, window rule, columns, covariate groups with their levels, the
    summaries' settings and ``battery`` (the per-window battery's settings; None: off)."""

    alpha: float = 0.05
    window: str = "1M"
    time_col: str | None = None
    batch_col: str | None = None
    label_col: str = "label"
    prob_cols: tuple[str, ...] = ("prob",)
    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    n_bins: int = 15
    level: float = 0.95
    n_boot: int = 200
    seed: int = 0
    battery: Mapping[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha < 1.0:
            raise ConfigError(f"alpha {self.alpha}: must be between 0 and 1 [alpha]")
        if not 0.0 < self.level < 1.0:
            raise ConfigError(f"level {self.level}: must be between 0 and 1 [level]")
        if self.n_bins < 1 or self.n_boot < 2:
            raise ConfigError("n_bins must be at least 1 and n_boot at least 2 [monitor]")
        if self.battery is not None and not isinstance(self.battery, Mapping):
            raise ConfigError("battery: the window battery's settings must be a mapping "
                              "[monitor]")
        parse_window(self.window)
        for name, levels in self.groups:
            if len(set(levels)) != len(levels) or not levels:
                raise ConfigError(f"covariate '{name}': its levels must be distinct and "
                                  "not empty [groups]")

    @property
    def n_groups(self) -> int:
        return sum(len(levels) for _, levels in self.groups)


@dataclass(frozen=True)
class WindowRecord:
    """One window: its summaries, the e-process after it (``log_e``, ``families``,
    ``directions``: ``citl``, ``slope``, each group), its bet sums ``s`` and ``v``, the alarm
    flag and the battery run on its rows (None when not run)."""

    summary: WindowSummary
    log_e: float
    families: dict[str, float]
    directions: tuple[float, ...]
    s: tuple[float, ...]
    v: tuple[float, ...]
    alarm: bool
    battery: Mapping[str, Any] | None = field(default=None, hash=False)


@dataclass(frozen=True)
class MonitorState:
    """A monitoring run so far: its configuration, the e-process state and the history of
    windows."""

    config: MonitorConfig
    eprocess: EProcess
    history: tuple[WindowRecord, ...] = field(default=())

    @property
    def alarm_window(self) -> WindowRecord | None:
        """The window at which ``E`` first reached ``1/alpha`` (None: no alarm)."""
        j = self.eprocess.alarm_window
        return self.history[j - 1] if j else None

    @property
    def e_value(self) -> float:
        """The e-process now (1 before any window)."""
        return float(np.exp(self.history[-1].log_e)) if self.history else 1.0

    def table(self) -> pd.DataFrame:
        """The per-window table: summaries, ``e_process`` (combined), ``e_citl``,
        ``e_slope``, ``e_groups`` and ``alarm``."""
        frame = window_frame([r.summary for r in self.history])
        frame["e_process"] = [np.exp(r.log_e) for r in self.history]
        for name in ("citl", "slope", "groups"):
            if any(name in r.families for r in self.history):
                frame[f"e_{name}"] = [np.exp(r.families[name]) for r in self.history]
        frame["alarm"] = [r.alarm for r in self.history]
        return frame

    def group_table(self) -> pd.DataFrame:
        """One row per window and group, with the group's e-process ``e_process``."""
        frame = group_frame([r.summary for r in self.history])
        frame["e_process"] = [float(np.exp(d)) for r in self.history
                              for d in r.directions[2:]]
        return frame


def start(config: MonitorConfig) -> MonitorState:
    """An empty run (no window yet, ``E = 1``)."""
    return MonitorState(config, EProcess(config.n_groups))


def update(state: MonitorState, probs: NDArray[np.float64], labels: NDArray,
           *, times: Sequence | None = None, batch: Sequence | None = None,
           covariates: Mapping[str, Sequence] | None = None,
           source: str = "data") -> MonitorState:
    """``state`` with one batch of rows appended (module docstring). ``probs``: positive-class
    probabilities (n,) or one column per class (n, m); ``labels``: 0/1, or class indices;
    ``times``/``batch``: the time and batch columns the window rule needs; ``covariates``:
    the values of each covariate of ``config.groups``."""
    config = state.config
    p, y = _binary(probs, labels, source)
    codes = group_codes(config.groups, covariates or {}, p.size, source)
    windows = batch_windows(state, p.size, times, batch, source)
    records = list(state.history)
    eprocess = state.eprocess
    for w in range(windows.count):
        rows = windows.rows(w)
        summary = _summary(config, windows, w, len(records) + 1, p[rows], y[rows],
                           [c[rows] for c in codes])
        eprocess, step = advance(eprocess, p[rows], y[rows], [c[rows] for c in codes],
                                 config.alpha)
        records.append(_record(summary, step, bool(eprocess.alarm_window)))
    return replace(state, eprocess=eprocess, history=tuple(records))


def _binary(probs: NDArray, labels: NDArray, source: str
            ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(labels)
    if probs.shape[0] != labels.shape[0]:
        raise InputError(f"{probs.shape[0]} predictions for {labels.shape[0]} labels",
                         source=source, rule="length")
    if not np.all(np.isfinite(probs)) or np.any((probs < 0.0) | (probs > 1.0)):
        raise InputError("probabilities must be finite and within [0, 1]", source=source,
                         rule="probabilities")
    classes = 2 if probs.ndim == 1 else probs.shape[1]
    if not np.all(np.isin(labels, np.arange(classes))):
        raise InputError(f"labels must be class indices 0..{classes - 1}", source=source,
                         rule="labels")
    return top_label(probs, labels)


def group_codes(groups: Sequence[tuple[str, Sequence[str]]], covariates: Mapping,
                n: int, source: str) -> list[NDArray[np.int64]]:
    """Each covariate's row codes, numbered among all groups of all covariates; a missing value
    or a level outside the run's levels is an input error."""
    out, offset = [], 0
    for name, levels in groups:
        if name not in covariates:
            raise InputError("covariate missing", source=source, column=name,
                             rule="groups", hint="give every covariate of the run")
        values = np.asarray(covariates[name], dtype=object)
        if len(values) != n or pd.isna(values).any():
            raise InputError(f"needs {n} values without missing ones", source=source,
                             column=name, rule="groups")
        lookup = {level: code for code, level in enumerate(levels)}
        found, inverse = np.unique(values.astype(str), return_inverse=True)
        unknown = sorted(set(found.tolist()) - set(lookup))
        if unknown:
            raise InputError(f"level '{unknown[0]}' is not among the run's levels "
                             f"{list(levels)}", source=source, column=name,
                             rule="groups", hint="start a new monitoring state to add "
                                                 "levels")
        codes = np.array([lookup[level] for level in found.tolist()], dtype=np.int64)
        out.append(codes[inverse.reshape(-1)] + offset)
        offset += len(levels)
    return out


def batch_windows(state: MonitorState, n: int, times: Sequence | None,
             batch: Sequence | None, source: str) -> Windows:
    """The windows of a batch of ``n`` rows appended to ``state`` (a window the state
    already holds is refused)."""
    rule = parse_window(state.config.window)
    last = state.history[-1].summary.key if state.history else None
    first_key = int(last) + 1 if rule.kind == "rows" and last is not None else 0
    windows = assign_windows(rule, n, times=times, batch=batch, first_key=first_key,
                             first_row=state.eprocess.rows, source=source,
                             time_col=state.config.time_col or "time",
                             batch_col=state.config.batch_col or "batch")
    if state.history and rule.kind == "calendar" and windows.keys[0] <= last:
        raise InputError(f"rows in window {windows.labels[0]}, which the monitoring "
                         f"state already holds (its last window is "
                         f"{state.history[-1].summary.label})", source=source,
                         column=state.config.time_col, rule="window_order",
                         hint="append only rows of later windows; a window closes with "
                              "the batch that brings it")
    if rule.kind == "batch":
        seen = {r.summary.key for r in state.history} & set(windows.keys)
        if seen:
            raise InputError(f"batch '{sorted(seen)[0]}' is already in the monitoring "
                             "state", source=source, column=state.config.batch_col,
                             rule="window_order", hint="give each batch a new name")
    return windows


def _summary(config: MonitorConfig, windows: Windows, w: int, number: int,
             p: NDArray[np.float64], y: NDArray[np.float64],
             codes: list[NDArray[np.int64]]) -> WindowSummary:
    groups, offset = [], 0
    for (name, levels), c in zip(config.groups, codes):
        groups.append((name, levels, c - offset))
        offset += len(levels)
    return summarize_window(p, y, number=number, key=windows.keys[w],
                            label=windows.labels[w], start=windows.starts[w],
                            end=windows.ends[w], groups=groups, n_bins=config.n_bins,
                            level=config.level, seed=config.seed, n_boot=config.n_boot)


def _record(summary: WindowSummary, step: Step, alarm: bool) -> WindowRecord:
    return WindowRecord(summary, step.log_value, step.families,
                        tuple(float(x) for x in step.directions),
                        tuple(float(x) for x in step.s), tuple(float(x) for x in step.v),
                        alarm)
