"""The report's "Calibration over time" section, from the result's ``monitoring``
section: the e-process and its alarm (the status of the check ``calibration_eprocess``),
the drift figures, the per-window table, the recalibrate-or-refit advice and, with the
per-window battery, its table of key p-values (diagnostics)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from calaudit.output.formatting import fmt_number
from calaudit.output.over_time_table import battery_alpha, battery_columns, battery_rows
from calaudit.report.figures import FigureNamer
from calaudit.report.views import EvidenceSection, KeyValue

#: Groups drawn in the bias-over-time figure.
TOP_GROUPS = 4


@dataclass(frozen=True)
class WindowRow:
    window: str
    n: str
    events: str
    observed: str
    predicted: str
    ece: str
    citl: str
    slope: str
    e_value: str
    alarm: bool


def _estimate(values: Sequence[float | None]) -> str:
    value, low, high = (list(values) + [None] * 3)[:3]
    if value is None:
        return "-"
    if low is None or high is None:
        return f"{value:.3g}"
    return f"{value:.3g} [{low:.2g}, {high:.2g}]"


def _row(w: Mapping[str, Any], alarm: int | None) -> WindowRow:
    return WindowRow(f"{w['window']}. {w['label']}", str(w["n"]), f"{w['events']:g}",
                     f"{w['observed_rate']:.3f}", f"{w['mean_prediction']:.3f}",
                     _estimate(w["ece"]), _estimate(w["citl"]), _estimate(w["slope"]),
                     f"{w['e_process']:.3g}", w["window"] == alarm)


def most_biased_names(groups: Sequence[Mapping[str, Any]], top: int = TOP_GROUPS) -> list[str]:
    """The ``top`` groups with the largest mean absolute bias over the windows."""
    sizes: dict[str, list[float]] = {}
    for g in groups:
        if g["bias"][0] is not None:
            sizes.setdefault(f"{g['covariate']}={g['level']}", []).append(abs(g["bias"][0]))
    ranked = sorted(sizes, key=lambda name: -sum(sizes[name]) / len(sizes[name]))
    return ranked[:top]


def _advice(section: Mapping[str, Any]) -> tuple[KeyValue, ...]:
    a = section.get("advice")
    if not a:
        return ()
    rows = [KeyValue("verdict", a["verdict"]), KeyValue("why", a["reason"])]
    if a.get("group_intercepts"):
        rows.append(KeyValue("recalibration", f"logit q = a_g + {fmt_number(a['slope'])} "
                             f"logit p, one intercept a_g per group of {a['covariate']}"))
        rows.append(KeyValue(f"intercepts a_g by {a['covariate']}", ", ".join(
            f"{k}: {fmt_number(v)}" for k, v in a["group_intercepts"].items())))
    elif a.get("slope") is not None:
        rows.append(KeyValue("recalibration", f"logit q = {fmt_number(a['intercept'])} + "
                             f"{fmt_number(a['slope'])} logit p"))
    rows.append(KeyValue("windows", f"fitted on {a['fit_windows']}, checked on "
                         f"{a['check_windows']}"))
    return tuple(rows)


def build_over_time(result: Mapping[str, Any], namer: FigureNamer) -> EvidenceSection | None:
    """The section, or ``None`` for a result without windows."""
    section = result.get("monitoring")
    if not section or not section.get("windows"):
        return None
    e, windows = section["eprocess"], section["windows"]
    alarm = e.get("alarm_window")
    status = e.get("status") or "-"
    summary = (f"{status}: alarm in window {e['alarm_label']}" if e.get("alarm")
               else f"{status}: no alarm over {len(windows)} windows")
    figures = [namer.view(
        "drift", "Calibration over time",
        "Per window: ECE, calibration-in-the-large and calibration slope with their "
        "intervals, and the e-process on a log scale with its alarm line.",
        f"Shaded: 95% intervals; dashed: the calibrated values (0, 0, 1) and the alarm "
        f"line 1/level = {fmt_number(e['threshold'])}"
        + (f"; the red line marks the alarm window {alarm}." if alarm else "."),
        {"windows": windows, "threshold": e["threshold"], "alarm_window": alarm})]
    top = most_biased_names(section.get("groups") or ())
    if top:
        figures.append(namer.view(
            "drift_groups", "Most biased groups over time",
            f"Bias (observed rate - mean prediction) per window of the {len(top)} groups "
            "with the largest mean absolute bias, with 95% intervals.",
            "Groups ranked by their mean absolute bias over the windows; dashed: no bias.",
            {"windows": windows, "groups": section["groups"], "top": top,
             "alarm_window": alarm}))
    if len(windows) > 1:
        figures.append(namer.view(
            "drift_reliability", "Reliability: latest window against the first",
            "Observed rate against mean prediction per bin in the first and the latest "
            "window.", f"Bins of the ECE ({len(windows[0]['bins']['count'])} uniform bins); "
            "dashed: perfect calibration.",
            {"windows": [windows[0], windows[-1]]}))
    facts = (KeyValue("windows", f"{len(windows)} ({section['window']})"),
             KeyValue("e-process now", fmt_number(e["value"])),
             KeyValue("largest so far", fmt_number(e["max_value"])),
             KeyValue("alarm line 1/level", fmt_number(e["threshold"])),
             KeyValue("p-value min(1, 1/max E)", fmt_number(e["p_value"])),
             KeyValue("alarm", f"window {alarm}: {e['alarm_label']}" if alarm else "none"),
             KeyValue("status of calibration_eprocess", status))
    header, battery = battery_rows(section)
    shown = battery_columns(section)
    p_figure = namer.view(
        "drift_battery", "Per-window p-values (diagnostics)",
        "Raw p-value per window of " + ", ".join(shown) + ", on a log scale, with the "
        "line alpha.", f"Raw p-values of each window's own audit, on a log scale; dashed: "
        f"alpha = {fmt_number(battery_alpha(section))}. Not adjusted over the windows: "
        "they do not gate.", {"windows": windows, "tests": shown,
                              "alpha": battery_alpha(section), "alarm_window": alarm}) \
        if section.get("window_battery") and shown else None
    data = {"facts": facts, "advice": _advice(section), "figures": tuple(figures),
            "rows": tuple(_row(w, alarm) for w in windows), "alarm": bool(alarm),
            "state": section.get("state"),
            "battery": {"header": tuple(header), "rows": tuple(map(tuple, battery)),
                        "note": section["window_battery"]["note"],
                        "alpha": fmt_number(battery_alpha(section)), "figure": p_figure}
            if section.get("window_battery") else None}
    return EvidenceSection("over-time", "Calibration over time", summary,
                           "html/over_time.html", "md/over_time.md", data,
                           tuple(figures) + ((p_figure,) if p_figure else ()),
                           open=bool(alarm))
