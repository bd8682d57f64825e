"""The per-group reliability small multiples (``local.group_reliability``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from matplotlib.figure import Figure

from calaudit.report import plots

WIDTH = 6.8


def group_reliability_figure(data: Mapping[str, Any]) -> Figure:
    """One reliability diagram per group (4 per row), titled with the group and its
    bias; panels of failing groups are titled in bold."""
    panels = data["panels"]
    ncols = min(4, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    figure = Figure(figsize=(min(WIDTH, 0.5 + 1.7 * ncols), 0.5 + 1.75 * nrows),
                    layout="constrained")
    axes = figure.subplots(nrows, ncols, sharex=True, sharey=True, squeeze=False)
    for ax, panel in zip(axes.flat, panels, strict=False):
        plots.plot_reliability(panel["bins"], panel.get("consistency_band"), ax, xlabel="",
                               ylabel="", legend=False, markersize=2.5, weighted=True)
        bias = panel.get("bias")
        title = plots.plain(panel.get("group"), 24)
        if isinstance(bias, (int, float)) and math.isfinite(bias):
            title += f"\nbias {bias:+.3f}"
        ax.set_title(title, fontsize=7.5,
                     fontweight="bold" if panel.get("status") == "FAIL" else "normal")
        ax.set_xticks([0, 0.5, 1], labels=["0", "0.5", "1"])
        ax.set_yticks([0, 0.5, 1], labels=["0", "0.5", "1"])
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    figure.supxlabel("predicted probability", fontsize=8.5)
    figure.supylabel("observed frequency", fontsize=8.5)
    return figure
