"""The per-group reliability small multiples (``local.group_reliability``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from calaudit.report import plots

WIDTH = 6.8


def reliability_panels(panels: Sequence[Mapping[str, Any]], ncols: int,
                       size: Callable[[int], tuple[float, float]], xlabel: str,
                       title: Callable[[Mapping[str, Any]], tuple[str, dict[str, Any]]],
                       padded: bool = False) -> Figure:
    """Small multiples: one reliability diagram per panel, ``ncols`` per row (``size``:
    the figure's size for a number of rows; ``title``: a panel's title and its text
    properties; ``padded``: room around the unit square for the markers)."""
    nrows = math.ceil(len(panels) / ncols)
    figure = Figure(figsize=size(nrows), layout="constrained")
    axes = figure.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)
    for ax, panel in zip(axes.flat, panels, strict=False):
        plots.plot_reliability(panel["bins"], panel.get("consistency_band"), ax, xlabel="",
                               ylabel="", legend=False, markersize=2.5, weighted=True)
        text, style = title(panel)
        ax.set_title(text, **style)
        ax.set_xticks([0, 0.5, 1], labels=["0", "0.5", "1"])
        ax.set_yticks([0, 0.5, 1], labels=["0", "0.5", "1"])
        if padded:
            ax.set(xlim=(-0.08, 1.08), ylim=(-0.08, 1.08))
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    figure.supxlabel(xlabel, fontsize=8.5)
    figure.supylabel("observed frequency", fontsize=8.5)
    return figure


def group_reliability_figure(data: Mapping[str, Any]) -> Figure:
    """One reliability diagram per group (4 per row), titled with the group and its
    bias; panels of failing groups are titled in bold."""
    ncols = min(4, len(data["panels"]))
    return reliability_panels(data["panels"], ncols,
                              lambda nrows: (min(WIDTH, 0.5 + 1.7 * ncols), 0.5 + 1.75 * nrows),
                              "predicted probability", _group_title)


def _group_title(panel: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    bias = panel.get("bias")
    title = plots.short_label(panel.get("group"), 24)
    if isinstance(bias, (int, float)) and math.isfinite(bias):
        title += f"\nbias {bias:+.3f}"
    return title, {"fontsize": 7.5,
                   "fontweight": "bold" if panel.get("status") == "FAIL" else "normal"}
