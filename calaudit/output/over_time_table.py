"""The terminal's calibration-over-time tables: one row per window (n, observed rate and
mean prediction, ECE, calibration-in-the-large and slope with intervals, the e-process;
the JSON and the reports hold every column with its interval), the most biased groups of
the latest window, and the advice after an alarm."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.markup import escape
from rich.table import Table

from calaudit.output.formatting import fmt_number

#: Windows shown: the first, then the latest ones (the JSON holds every window).
SHOWN = 24


def _interval(values: list[float | None]) -> str:
    value, low, high = (values + [None, None, None])[:3]
    if value is None:
        return "-"
    if low is None or high is None:
        return f"{value:.3g}"
    return f"{value:.2g} [{low:.2g},{high:.2g}]"


def windows_table(section: Mapping[str, Any]) -> Table:
    """One row per window (the first and the latest :data:`SHOWN` - 1 when there are
    more); the alarm window is marked."""
    e = section["eprocess"]
    title = (f"calibration over time ({len(section['windows'])} windows of {section['window']}; "
             f"e-process alarm at {fmt_number(e['threshold'])})")
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for name in ("window", "n", "obs / pred", "ECE", "CITL [CI]", "slope [CI]", "E"):
        table.add_column(name, justify="left" if name == "window" else "right",
                         no_wrap=name != "window")
    rows = list(section["windows"])
    if len(rows) > SHOWN:
        rows = rows[:1] + rows[-(SHOWN - 1):]
    for w in rows:
        mark = " ALARM" if w["window"] == e.get("alarm_window") else ""
        table.add_row(escape(f"{w['window']}. {w['label']}{mark}"), str(w["n"]),
                      f"{w['observed_rate']:.3f}/{w['mean_prediction']:.3f}",
                      _interval(w["ece"][:1]),
                      _interval(w["citl"]), _interval(w["slope"]),
                      f"{w['e_process']:.3g}")
    return table


def groups_table(section: Mapping[str, Any], top: int = 5) -> Table | None:
    """The latest window's groups, largest absolute bias first."""
    if not section["groups"]:
        return None
    last = section["windows"][-1]["window"]
    rows = [g for g in section["groups"] if g["window"] == last and g["bias"][0] is not None]
    rows.sort(key=lambda g: -abs(g["bias"][0]))
    table = Table(title=f"groups in the latest window ({section['windows'][-1]['label']})",
                  title_justify="left", show_edge=False, pad_edge=False)
    for name in ("group", "n", "bias", "E (group)"):
        table.add_column(name, justify="left" if name == "group" else "right")
    for g in rows[:top]:
        table.add_row(escape(f"{g['covariate']}={g['level']}"), str(g["n"]),
                      _interval(g["bias"]), fmt_number(g["e_process"]))
    return table


def advice_line(section: Mapping[str, Any]) -> str | None:
    """The recalibrate-or-refit advice with its parameters (after an alarm)."""
    a = section.get("advice")
    if not a:
        return None
    params = f"slope {fmt_number(a['slope'])}, "
    if a.get("group_intercepts"):
        params += f"intercepts by {a['covariate']}: " + ", ".join(
            f"{k} {fmt_number(v)}" for k, v in a["group_intercepts"].items())
    else:
        params += f"intercept {fmt_number(a['intercept'])}"
    return (f"  advice after the alarm: {a['verdict']} (fitted on windows "
            f"{a['fit_windows']}, checked on {a['check_windows']}; {params}): {a['reason']}")


def over_time_tables(result: Mapping[str, Any]) -> list[Any]:
    """The tables and the advice line of ``result``'s monitoring section (none without)."""
    section = result.get("monitoring")
    if not section:
        return []
    out: list[Any] = [windows_table(section), groups_table(section), advice_line(section)]
    return [x for x in out if x is not None]
