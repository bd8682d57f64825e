"""The report's calibration-over-time figures, from the result's ``monitoring`` section alone:
``drift`` (ECE, CITL and slope with intervals, the e-process with its alarm line),
``drift_groups`` (the most biased groups' bias) and ``drift_reliability`` (first window
against the latest)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from calaudit.report import plots

WIDTH = 6.8


def _column(windows: Sequence[Mapping[str, Any]], name: str, k: int) -> np.ndarray:
    return np.array([np.nan if w[name][k] is None else w[name][k] for w in windows], float)


def _mark_alarm(axes: Sequence[Any], alarm: int | None) -> None:
    if alarm:
        for ax in axes:
            ax.axvline(alarm, color="#cf222e", lw=0.9, alpha=0.7)


def _ticks(ax: Any, windows: Sequence[Mapping[str, Any]]) -> None:
    x = [w["window"] for w in windows]
    step = max(1, int(np.ceil(len(x) / 12)))
    ax.set_xticks(x[::step], [plots.short_label(w["label"], 18) for w in windows][::step],
                  rotation=40, ha="right", fontsize="small")


def drift_estimates_figure(data: Mapping[str, Any]) -> Figure:
    """ECE, CITL and slope with intervals, then the e-process (module docstring)."""
    windows, alarm = data["windows"], data.get("alarm_window")
    figure = Figure(figsize=(WIDTH, 7.4), layout="constrained")
    axes = figure.subplots(4, 1, sharex=True, height_ratios=(1, 1, 1, 1.3))
    x = np.array([w["window"] for w in windows], float)
    names = (("ece", "ECE", 0.0), ("citl", "calibration-in-the-large", 0.0),
             ("slope", "calibration slope", 1.0))
    for ax, (name, label, ideal) in zip(axes, names):
        ax.fill_between(x, _column(windows, name, 1), _column(windows, name, 2),
                        color="#0969da", alpha=0.2, lw=0)
        ax.plot(x, _column(windows, name, 0), marker=".", color="#0969da")
        ax.axhline(ideal, color="0.45", lw=0.8, ls="--")
        ax.set_ylabel(label, fontsize="small")
    ax = axes[-1]
    values = np.array([w["e_process"] for w in windows], float)
    ax.semilogy(x, values, marker=".", color="#8250df", label="e-process E")
    ax.axhline(data["threshold"], color="#cf222e", lw=0.9, ls="--",
               label=f"alarm at 1/level = {data['threshold']:g}")
    ax.set_ylim(min(values.min(), 0.5) / 2, max(values.max(), data["threshold"]) * 3)
    ax.set_ylabel("e-process (log)", fontsize="small")
    ax.legend(fontsize="small", loc="upper left")
    _mark_alarm(axes, alarm)
    _ticks(ax, windows)
    ax.set_xlabel("window")
    return figure


def groups_figure(data: Mapping[str, Any]) -> Figure:
    """The ``data["top"]`` groups' bias (observed - predicted) with intervals."""
    windows, groups = data["windows"], data["groups"]
    figure = Figure(figsize=(WIDTH, 3.4), layout="constrained")
    ax = figure.subplots()
    for k, name in enumerate(data["top"]):
        rows = [g for g in groups if f"{g['covariate']}={g['level']}" == name]
        x = np.array([g["window"] for g in rows], float)
        bias = np.array([[np.nan if v is None else v for v in g["bias"]] for g in rows], float)
        ax.fill_between(x, bias[:, 1], bias[:, 2], color=f"C{k}", alpha=0.18, lw=0)
        ax.plot(x, bias[:, 0], marker=".", color=f"C{k}", label=plots.short_label(name, 30))
    ax.axhline(0.0, color="0.45", lw=0.8, ls="--")
    ax.set_ylabel("bias (observed - predicted)", fontsize="small")
    ax.legend(fontsize="small", loc="best")
    _mark_alarm([ax], data.get("alarm_window"))
    _ticks(ax, windows)
    ax.set_xlabel("window")
    return figure


def first_last_figure(data: Mapping[str, Any]) -> Figure:
    """Observed rate against mean prediction per bin: first window and latest window."""
    figure = Figure(figsize=(WIDTH, 4.2), layout="constrained")
    ax = figure.subplots()
    ax.plot([0, 1], [0, 1], color="0.45", lw=0.8, ls="--")
    for window, color in zip(data["windows"], ("#0969da", "#cf222e")):
        count = np.array(window["bins"]["count"], float)
        used = count > 0
        mean_p = np.array(window["bins"]["sum_prediction"], float)[used] / count[used]
        rate = np.array(window["bins"]["sum_label"], float)[used] / count[used]
        ax.plot(mean_p, rate, marker="o", color=color,
                label=plots.short_label(f"window {window['window']}: {window['label']}", 40))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("mean prediction (bin)")
    ax.set_ylabel("observed rate (bin)")
    ax.legend(fontsize="small", loc="upper left")
    return figure


def battery_figure(data: Mapping[str, Any]) -> Figure:
    """The per-window battery's raw p-values of ``data["tests"]`` on a log scale, with
    the line ``alpha`` (diagnostics: not adjusted over the windows)."""
    windows, alpha = data["windows"], data["alpha"]
    figure = Figure(figsize=(WIDTH, 3.4), layout="constrained")
    ax = figure.subplots()
    floor = 1.0
    for k, test in enumerate(data["tests"]):
        x, p = [], []
        for w in windows:
            found = [t["p_value"] for t in (w.get("battery") or {}).get("tests", ())
                     if t["id"] == test and t["p_value"] is not None]
            if found:
                x.append(w["window"])
                p.append(max(found[0], 1e-4))
        if p:
            floor = min(floor, min(p))
            ax.semilogy(x, p, marker=".", color=f"C{k}", label=plots.short_label(test, 30))
    ax.axhline(alpha, color="#cf222e", lw=0.9, ls="--", label=f"alpha = {alpha:g}")
    ax.set_ylim(min(floor, alpha) / 3, 1.5)
    ax.set_ylabel("raw p-value (log)", fontsize="small")
    ax.legend(fontsize="small", loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=4,
              frameon=False)
    _mark_alarm([ax], data.get("alarm_window"))
    _ticks(ax, windows)
    ax.set_xlabel("window")
    return figure
