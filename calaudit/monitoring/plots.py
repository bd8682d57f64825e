"""Drift plots of a monitoring state (matplotlib figures, no pyplot state), its whole history
read from the state: :func:`drift_figure` (per window the ECE, CITL and slope with
intervals, the most biased groups' bias and the e-process with its alarm line) and
:func:`reliability_figure` (the first window's reliability diagram beside the latest)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from calaudit.monitoring.monitor import MonitorState


def drift_figure(state: MonitorState, top_groups: int = 3) -> Figure:
    """The calibration-over-time figure (module docstring)."""
    table = state.table()
    groups = state.group_table()
    rows = 4 + (not groups.empty)
    fig = Figure(figsize=(8, 1.9 * rows), constrained_layout=True)
    axes = fig.subplots(rows, 1, sharex=True)
    x = table["window"].to_numpy()
    for ax, name, ideal in zip(axes, ("ece", "citl", "slope"), (0.0, 0.0, 1.0)):
        _band(ax, x, table, name)
        ax.axhline(ideal, color="0.5", lw=0.8, ls="--")
        ax.set_ylabel({"ece": "ECE", "citl": "CITL", "slope": "slope"}[name])
    if not groups.empty:
        _groups(axes[3], groups, top_groups)
    ax = axes[-1]
    ax.semilogy(x, table["e_process"], marker=".", color="C3")
    ax.axhline(1.0 / state.config.alpha, color="C3", lw=0.8, ls="--")
    ax.set_ylabel("e-process")
    ax.set_xlabel("window")
    if state.eprocess.alarm_window:
        for each in axes:
            each.axvline(state.eprocess.alarm_window, color="C3", lw=0.8, alpha=0.6)
    _ticks(ax, table)
    return fig


def _band(ax, x, table: pd.DataFrame, name: str) -> None:
    ax.fill_between(x, table[f"{name}_low"], table[f"{name}_high"], alpha=0.25, lw=0)
    ax.plot(x, table[name], marker=".")


def _groups(ax, groups: pd.DataFrame, top: int) -> None:
    """The ``top`` groups with the largest mean |bias| over the windows."""
    names = groups["covariate"] + "=" + groups["level"]
    score = groups.assign(name=names, size=groups["bias"].abs()).groupby("name")["size"]
    for k, name in enumerate(score.mean().nlargest(top).index):
        part = groups[names == name]
        ax.fill_between(part["window"], part["bias_low"], part["bias_high"],
                        color=f"C{k}", alpha=0.2, lw=0)
        ax.plot(part["window"], part["bias"], marker=".", color=f"C{k}", label=name)
    ax.axhline(0.0, color="0.5", lw=0.8, ls="--")
    ax.set_ylabel("group bias")
    ax.legend(fontsize="small", loc="best")


def _ticks(ax, table: pd.DataFrame) -> None:
    if len(table) <= 12:
        ax.set_xticks(table["window"], table["label"], rotation=45, ha="right",
                      fontsize="small")


def reliability_figure(state: MonitorState) -> Figure:
    """Observed rate against mean prediction per bin, first window and latest window."""
    fig = Figure(figsize=(4.5, 4.5), constrained_layout=True)
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], color="0.5", lw=0.8, ls="--")
    picks = [state.history[0]] + ([state.history[-1]] if len(state.history) > 1 else [])
    for record, color in zip(picks, ("C0", "C3")):
        count, sum_p, sum_y = (np.asarray(b) for b in record.summary.bins)
        used = count > 0
        ax.plot(sum_p[used] / count[used], sum_y[used] / count[used], marker="o",
                color=color, label=f"window {record.summary.label}")
    ax.set_xlabel("mean prediction")
    ax.set_ylabel("observed rate")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(loc="upper left")
    return fig
