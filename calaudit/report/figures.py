"""Report figures: named as the context is built (:class:`FigureNamer`), drawn as
deterministic SVG when the report is written (:func:`draw_svg`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from matplotlib.figure import Figure

from calaudit.report import over_time_figures, plots
from calaudit.report.diagnosis_figures import group_reliability_figure, reliability_panels
from calaudit.report.views import FigureView


class FigureNamer:
    """Unique, file-system-safe figure names in order of appearance:
    ``figure-01-reliability.svg`` (names from the data never reach the file system)."""

    def __init__(self) -> None:
        self.count = 0

    def view(self, kind: str, title: str, alt: str, caption: str, data: Mapping[str, Any],
             slug: str = "") -> FigureView:
        self.count += 1
        clean = re.sub(r"[^a-z0-9]+", "-", (slug or kind).lower()).strip("-")[:40]
        name = f"figure-{self.count:02d}-{clean or kind}"
        return FigureView(key=name, kind=kind, title=title, alt=alt, caption=caption,
                          filename=f"{name}.svg", data=data)


WIDTH = 6.8


def reliability_diagram_figure(data: Mapping[str, Any]) -> Figure:
    """Reliability diagram above the histogram of the scores, sharing the x axis."""
    histogram = data.get("histogram")
    figure = Figure(figsize=(WIDTH, 5.4 if histogram else 4.2), layout="constrained")
    if histogram:
        top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=(3.2, 1.0))
        plots.plot_reliability(data["bins"], data.get("band"), top, xlabel="",
                               ylabel=plots.short_label(data.get("ylabel", ""), 60))
        plots.plot_score_histogram(histogram, bottom,
                                   xlabel=plots.short_label(data.get("xlabel", ""), 60))
    else:
        plots.plot_reliability(data["bins"], data.get("band"), figure.subplots(),
                               xlabel=plots.short_label(data.get("xlabel", ""), 60),
                               ylabel=plots.short_label(data.get("ylabel", ""), 60))
    return figure


def per_class_figure(data: Mapping[str, Any]) -> Figure:
    """Small multiples: one one-vs-rest reliability diagram per class."""
    return reliability_panels(
        data["panels"], min(5, len(data["panels"])), lambda nrows: (WIDTH, 0.4 + 1.55 * nrows),
        "predicted probability of the class",
        lambda panel: (plots.short_label(panel.get("class"), 18), {"fontsize": 8.5}), padded=True)


def null_figure(data: Mapping[str, Any]) -> Figure:
    figure = Figure(figsize=(WIDTH, 2.5), layout="constrained")
    plots.plot_null_distribution(data["null"], data.get("statistic"), figure.subplots(),
                                 status=str(data.get("status") or ""))
    return figure


def lcb_figure(data: Mapping[str, Any]) -> Figure:
    figure = Figure(figsize=(WIDTH, 4.0), layout="constrained")
    plots.plot_lcb_by_covariate(data["curve"], data.get("points"), figure.subplots())
    return figure


def bias_figure(data: Mapping[str, Any]) -> Figure:
    rows = data["rows"]
    figure = Figure(figsize=(WIDTH, 1.1 + 0.24 * len(rows)), layout="constrained")
    plots.plot_bias_by_group(rows, figure.subplots())
    return figure


def smooth_diagram_figure(data: Mapping[str, Any]) -> Figure:
    figure = Figure(figsize=(WIDTH, 4.2), layout="constrained")
    plots.plot_smooth_reliability(data, figure.subplots(),
                                  xlabel=plots.short_label(data.get("xlabel", ""), 60),
                                  ylabel=plots.short_label(data.get("ylabel", ""), 60))
    return figure


BUILDERS: dict[str, Callable[[Mapping[str, Any]], Figure]] = {
    "reliability": reliability_diagram_figure,
    "reliability_per_class": per_class_figure,
    "smooth_reliability": smooth_diagram_figure,
    "null": null_figure,
    "lcb": lcb_figure,
    "bias_by_group": bias_figure,
    "reliability_by_group": group_reliability_figure,
    "drift": over_time_figures.drift_estimates_figure,
    "drift_groups": over_time_figures.groups_figure,
    "drift_reliability": over_time_figures.first_last_figure,
    "drift_battery": over_time_figures.battery_figure,
}


def draw_svg(view: FigureView) -> str:
    """The SVG text of one report figure."""
    with plots.plot_style():
        figure = BUILDERS[view.kind](view.data)
    return plots.figure_svg(figure)
