"""Plots of the report, drawn with matplotlib's object-oriented API (no pyplot state).

Each ``plot_*`` draws one panel from data in the JSON result, takes ``ax=None`` (a new
figure when absent) and returns the ``Axes``. :func:`figure_svg` writes deterministic SVG.
Names from the data are drawn as plain text (:func:`short_label`: no mathtext, no newlines)."""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from calaudit.output.notebook import STATUS_COLOURS

GROUP_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
                 "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
NEUTRAL = "#57606a"
BAND_COLOUR = "#8c959f"
#: Scatter layers with more points than this are rasterised inside the SVG.
RASTERIZE_ABOVE = 400
#: Probability axes run a little beyond [0, 1] so that nothing at 0 or 1 is clipped.
PAD = 0.04
PROBABILITY_LIMITS = (-PAD, 1 + PAD)

STYLE = {
    "svg.hashsalt": "calaudit",
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.labelsize": 9.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#d0d7de",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "legend.fontsize": 8.0,
    "text.usetex": False,
    "path.simplify": True,
}


@contextmanager
def plot_style() -> Iterator[None]:
    """The report's matplotlib settings, applied only inside the block."""
    with rc_context(STYLE), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph .* missing from font")
        yield


def short_label(text: object, limit: int = 40) -> str:
    """``text`` safe for a matplotlib label: one line, ``$`` escaped, at most ``limit``
    characters (an ellipsis marks a cut)."""
    line = " ".join(str(text).split())
    if len(line) > limit:
        line = line[: limit - 1] + "\u2026"
    return line.replace("$", r"\$")


def floats(values: Sequence[Any] | None) -> np.ndarray:
    """A float array from a JSON list (``null`` -> NaN)."""
    if values is None:
        return np.empty(0)
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def new_axes(ax: Axes | None, figsize: tuple[float, float] = (6.4, 4.0)) -> Axes:
    """``ax``, or the axes of a new figure (``Figure``, never ``pyplot``)."""
    if ax is not None:
        return ax
    return Figure(figsize=figsize, layout="constrained").subplots()


def figure_svg(figure: Figure) -> str:
    """Deterministic SVG text of ``figure`` (same figure, same bytes)."""
    buffer = io.StringIO()
    with plot_style():
        figure.savefig(buffer, format="svg", metadata={"Date": None}, dpi=144)
    return buffer.getvalue()


def plot_reliability(bins: Mapping[str, Sequence[float]],
                     band: Mapping[str, Any] | None = None, ax: Axes | None = None, *,
                     xlabel: str = "predicted probability",
                     ylabel: str = "observed frequency", legend: bool = True,
                     markersize: float = 4.0, weighted: bool = False) -> Axes:
    """Binned reliability diagram: observed rate against mean score per bin, with
    Wilson intervals (whiskers), the consistency band of a calibrated model (grey bars
    spanning 60% of each bin's width) and the diagonal of perfect calibration.

    ``weighted`` (small multiples, which have no histogram of the scores): each bin's dot
    has an area in proportion to its rows and its whisker and band are the fainter the
    fewer rows it holds, so that the bin that carries the rows carries the eye, not the
    full-height whiskers of bins of a few rows."""
    ax = new_axes(ax)
    mean, rate = floats(bins["mean_score"]), floats(bins["observed_rate"])
    lower, upper = floats(bins["lower"]), floats(bins["upper"])
    weight = bin_weights(bins) if weighted else np.ones_like(mean)
    ax.plot([0, 1], [0, 1], linestyle="--", color=NEUTRAL, linewidth=0.8,
            label="perfect calibration")
    if band:
        low, high = floats(band["low"]), floats(band["high"])
        level = band.get("level", 0.95)
        ax.bar(mean, high - low, bottom=low, width=0.6 * (upper - lower),
               color=_faded(BAND_COLOUR, 0.45 * (0.25 + 0.75 * weight)), linewidth=0,
               label=f"{level:.0%} consistency band (calibrated model)")
    low, high = floats(bins["rate_low"]), floats(bins["rate_high"])
    label = "observed (95% Wilson interval)" + ("; dot area: rows" if weighted else "")
    if weighted:
        ax.vlines(mean, np.minimum(low, rate), np.maximum(high, rate), linewidth=0.8,
                  colors=_faded(GROUP_COLOURS[0], 0.15 + 0.85 * weight))
        ax.scatter(mean, rate, s=(markersize * (0.5 + 2.0 * weight)) ** 2,
                   color=GROUP_COLOURS[0], linewidths=0, zorder=3, label=label)
    else:
        yerr = np.vstack([rate - low, high - rate])
        ax.errorbar(mean, rate, yerr=np.clip(yerr, 0.0, None), fmt="o",
                    markersize=markersize, color=GROUP_COLOURS[0], ecolor=GROUP_COLOURS[0],
                    elinewidth=min(1.0, markersize / 4), capsize=min(2.0, markersize / 2),
                    label=label)
    ax.set(xlim=PROBABILITY_LIMITS, ylim=PROBABILITY_LIMITS, xlabel=xlabel, ylabel=ylabel)
    ax.set_aspect("auto")
    if legend:
        legend_above(ax, ncols=2)
    return ax


def bin_weights(bins: Mapping[str, Sequence[float]]) -> np.ndarray:
    """Each bin's rows relative to the panel's largest bin, square-rooted, in ``(0, 1]`` (1 for
    every bin when the counts are missing)."""
    counts = floats(bins.get("count"))
    if counts.size != len(bins["mean_score"]) or not np.nanmax(counts, initial=0) > 0:
        return np.ones(len(bins["mean_score"]))
    return np.sqrt(np.nan_to_num(counts) / np.nanmax(counts))


def _faded(colour: str, alpha: np.ndarray) -> np.ndarray:
    """``colour`` as one RGBA row per alpha."""
    from matplotlib.colors import to_rgba

    rgba = np.tile(to_rgba(colour), (len(alpha), 1))
    rgba[:, 3] = np.clip(alpha, 0.0, 1.0)
    return rgba


def legend_above(ax: Axes, **kwargs: Any) -> None:
    """A legend above the axes, outside the data."""
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), borderaxespad=0.2, **kwargs)


def plot_score_histogram(histogram: Mapping[str, Sequence[float]], ax: Axes | None = None,
                         *, xlabel: str = "predicted probability") -> Axes:
    """Histogram of the scores (rows per equal-width bin) on a log scale, so that a bin
    holding most rows does not flatten the others."""
    ax = new_axes(ax, (6.4, 1.6))
    counts, edges = floats(histogram["counts"]), floats(histogram["edges"])
    shown = counts > 0
    if shown.any():
        ax.bar(edges[:-1][shown], counts[shown], width=np.diff(edges)[shown], align="edge",
               color=GROUP_COLOURS[0], alpha=0.6, linewidth=0, log=True)
        ax.set_ylim(0.7, max(10.0, counts.max() * 1.6))
    ax.set(xlim=PROBABILITY_LIMITS, xlabel=xlabel, ylabel="rows (log)")
    return ax


def plot_null_distribution(null: Sequence[float | None], statistic: float | None,
                           ax: Axes | None = None, *, label: str = "observed statistic",
                           status: str = "") -> Axes:
    """Histogram of the resampled statistics with the observed one as a vertical line in the
    status colour (the p-value: the share at or right of it); the legend above the axes."""
    ax = new_axes(ax, (6.4, 2.6))
    values = floats(null)
    values = values[np.isfinite(values)]
    ax.hist(values, bins=min(40, max(10, int(math.sqrt(max(values.size, 1))))),
            color=BAND_COLOUR, alpha=0.8, label=f"null distribution ({values.size} resamples)")
    if statistic is not None and math.isfinite(statistic):
        ax.axvline(statistic, color=STATUS_COLOURS.get(status, NEUTRAL), linewidth=1.6,
                   label=short_label(f"{label} = {statistic:.4g}" + (f" ({status})" if status
                                                                 else ""), 60))
    ax.set(xlabel="statistic", ylabel="resamples")
    legend_above(ax, ncols=2)
    return ax


def _group_colours(names: Sequence[str]) -> dict[str, str]:
    return {name: GROUP_COLOURS[i % len(GROUP_COLOURS)] for i, name in enumerate(names)}


def plot_lcb_by_covariate(curve: Mapping[str, Any], points: Mapping[str, Any] | None = None,
                          ax: Axes | None = None) -> Axes:
    """Local calibration bias of each observation against one numeric covariate,
    coloured by group, with each group's smooth fit and its band (Vashistha & Farahi,
    Figure 6). Positive LCB: the model under-predicts there."""
    ax = new_axes(ax)
    covariate, group_by = curve["covariate"], curve.get("group_by")
    groups = curve.get("groups") or []
    colours = _group_colours([str(g.get("group")) for g in groups])
    unit = _axis_unit([floats(((points or {}).get("covariate_values") or {}).get(covariate))]
                      + [floats(g.get("x")) for g in groups])
    if points:
        x = floats((points.get("covariate_values") or {}).get(covariate)) / unit
        lcb = floats(points.get("lcb"))
        labels = (points.get("group") or {}).get(group_by) if group_by else None
        colour = ([colours.get(str(g), NEUTRAL) for g in labels] if labels is not None
                  else NEUTRAL)
        if x.size and x.size == lcb.size:
            ax.scatter(x, lcb, s=5, c=colour, alpha=0.35, linewidths=0,
                       rasterized=x.size > RASTERIZE_ABOVE)
    for group in groups:
        name = str(group.get("group"))
        gx, fit = floats(group.get("x")) / unit, floats(group.get("lcb"))
        ax.plot(gx, fit, color=colours[name], linewidth=2.0,
                label=short_label(f"{group_by}={name}" if group_by else name))
        low, high = floats(group.get("low")), floats(group.get("high"))
        if low.size == gx.size and high.size == gx.size and gx.size:
            ax.fill_between(gx, low, high, color=colours[name], alpha=0.15, linewidth=0)
    ax.axhline(0.0, color=NEUTRAL, linewidth=0.8, linestyle="--")
    xlabel = short_label(covariate, 60) + (f" (units of {unit:.0e})" if unit != 1.0 else "")
    ax.set(xlabel=xlabel, ylabel="local calibration bias (observed - predicted)")
    if groups:
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), borderaxespad=0.2,
                  ncols=min(4, len(groups)))
    return ax


def plot_bias_by_group(rows: Sequence[Mapping[str, Any]], ax: Axes | None = None) -> Axes:
    """Bias (observed rate - mean prediction) of each group with its interval, sorted by
    bias (largest at the top); the marker colour is the group's status, hollow when
    INCONCLUSIVE. Rows without a finite bias are left out."""
    ordered = sorted((r for r in rows if _finite(r.get("bias")) is not None),
                     key=lambda r: (_finite(r.get("bias")), str(r.get("group"))))
    ax = new_axes(ax, (6.4, 1.0 + 0.24 * max(len(ordered), 1)))
    for y, row in enumerate(ordered):
        bias = _finite(row.get("bias"))
        status = str(row.get("status") or "")
        colour = STATUS_COLOURS.get(status, NEUTRAL)
        ci = row.get("bias_ci") or [None, None]
        if ci[0] is not None and ci[1] is not None:
            ax.plot([ci[0], ci[1]], [y, y], color=colour, linewidth=1.4)
        hollow = status == "INCONCLUSIVE"
        ax.plot([bias], [y], marker="o", markersize=5, color=colour,
                markerfacecolor="white" if hollow else colour, linestyle="none")
    ax.axvline(0.0, color=NEUTRAL, linewidth=0.8, linestyle="--")
    ax.set_yticks(range(len(ordered)), labels=[short_label(r.get("group"), 48) for r in ordered])
    ax.set_ylim(-0.7, len(ordered) - 0.3)
    ax.set_xlabel("bias = observed rate - mean prediction\n"
                  "(< 0: over-predicted, > 0: under-predicted)")
    ax.grid(axis="y", visible=False)
    _status_legend(ax, [str(r.get("status") or "") for r in ordered])
    return ax


def _status_legend(ax: Axes, statuses: Sequence[str]) -> None:
    """A legend entry per status present (hollow marker for INCONCLUSIVE)."""
    handles = []
    for status in [s for s in STATUS_COLOURS if s in set(statuses)]:
        colour = STATUS_COLOURS[status]
        face = "white" if status == "INCONCLUSIVE" else colour
        handles.append(Line2D([], [], marker="o", linestyle="none", color=colour,
                              markerfacecolor=face, label=status))
    if handles:
        legend_above(ax, handles=handles, ncols=len(handles))


def _axis_unit(arrays: Sequence[np.ndarray]) -> float:
    """1, or a power of ten that brings covariate values of huge magnitude (+-1e308,
    whose span overflows) back to a range matplotlib can transform."""
    sizes = [np.abs(a[np.isfinite(a)]).max() for a in arrays if np.isfinite(a).any()]
    largest = max(sizes, default=0.0)
    if largest < 1e100:
        return 1.0
    return float(10.0 ** math.floor(math.log10(largest)))


def _finite(value: Any) -> float | None:
    """``value`` as a float, or ``None`` when missing or not finite."""
    if value is None or not math.isfinite(float(value)):
        return None
    return float(value)


#: The smoothed curve is drawn where the score density is at least this share of its peak.
SMOOTH_MIN_DENSITY = 0.02


def plot_smooth_reliability(curve: Mapping[str, Any], ax: Axes | None = None, *,
                            xlabel: str = "predicted probability",
                            ylabel: str = "observed frequency (smoothed)",
                            legend: bool = True) -> Axes:
    """Smoothed reliability diagram (Blasiok & Nakkiran 2023, sec. 5): the kernel-smoothed
    outcome rate ``mu(t)`` at the smooth ECE's bandwidth, drawn thicker where the scores
    are dense and left out where the density is below ``SMOOTH_MIN_DENSITY`` of its peak
    (no data to smooth), the diagonal of perfect calibration and the score density as a
    shaded profile along the bottom."""
    ax = new_axes(ax)
    t, mu, density = floats(curve["t"]), floats(curve["mu"]), floats(curve["density"])
    ax.plot([0, 1], [0, 1], linestyle="--", color=NEUTRAL, linewidth=0.8,
            label="perfect calibration")
    peak = float(np.nanmax(density)) if density.size else 0.0
    if peak > 0:
        ax.fill_between(t, 0.0, 0.25 * density / peak, color=BAND_COLOUR, alpha=0.35,
                        linewidth=0, label="density of predictions (scaled)")
        widths = 0.6 + 3.4 * density / peak
        points = np.column_stack([t, np.clip(mu, 0.0, 1.0)]).reshape(-1, 1, 2)
        segments = np.concatenate([points[:-1], points[1:]], axis=1)
        shown = density[:-1] >= SMOOTH_MIN_DENSITY * peak
        from matplotlib.collections import LineCollection

        ax.add_collection(LineCollection(segments[shown], linewidths=widths[:-1][shown],
                                         colors=GROUP_COLOURS[0], capstyle="round"))
    smece, sigma = _finite(curve.get("smece")), _finite(curve.get("sigma"))
    label = "smoothed observed frequency"
    if smece is not None and sigma is not None:
        label += f" (smECE {smece:.3g}, bandwidth {sigma:.3g})"
    ax.plot([], [], color=GROUP_COLOURS[0], linewidth=2.0, label=label)
    ax.set(xlim=PROBABILITY_LIMITS, ylim=PROBABILITY_LIMITS, xlabel=xlabel, ylabel=ylabel)
    if legend:
        legend_above(ax)
    return ax
