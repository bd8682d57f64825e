"""The terminal's calibration-over-time tables: one row per window (n, observed rate and
mean prediction, ECE, calibration-in-the-large and slope with intervals, the e-process;
the JSON and the reports hold every column with its interval), the most biased groups of
the latest window, the advice after an alarm and, with the per-window battery, its key
p-values per window (:func:`battery_rows`, which the reports' table reads too)."""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from calaudit.output.formatting import fmt_intercepts, fmt_number, fmt_pvalue

#: Windows shown: the first, then the latest ones (the JSON holds every window).
SHOWN = 24


def new_table(title: str | None, columns: Sequence[str], right: Container[str] = ()
              ) -> Table:
    """A terminal table without outer edges, its title on the left; ``right``: the
    columns justified right."""
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for name in columns:
        table.add_column(name, justify="right" if name in right else "left")
    return table


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
    table = new_table(title, ())
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
    table = new_table(f"groups in the latest window ({section['windows'][-1]['label']})",
                      ("group", "n", "bias", "E (group)"), right=("n", "bias", "E (group)"))
    for g in rows[:top]:
        table.add_row(escape(f"{g['covariate']}={g['level']}"), str(g["n"]),
                      _interval(g["bias"]), fmt_number(g["e_process"]))
    return table


def advice_line(section: Mapping[str, Any]) -> str | None:
    """The recalibrate-or-refit advice with its parameters (after an alarm)."""
    a = section.get("advice")
    if not a:
        return None
    params = f"slope {fmt_number(a['slope'])}, {fmt_intercepts(a)}"
    return (f"  advice after the alarm: {a['verdict']} (fitted on windows "
            f"{a['fit_windows']}, checked on {a['check_windows']}; {params}): {a['reason']}")


def battery_columns(section: Mapping[str, Any]) -> list[str]:
    """The tests shown per window: those the gate would take as primaries in some
    window, in their order."""
    ids: dict[str, None] = {}
    for w in section["windows"]:
        for t in (w.get("battery") or {}).get("tests", ()):
            if t["role"] == "primary":
                ids.setdefault(t["id"], None)
    return list(ids)


def battery_rows(section: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The per-window battery as a header and one row per window with a battery (every output
    writes these cells): window, n, ECE [interval], the raw p-value of each test of
    :func:`battery_columns`, and the groups with adjusted p-value at most alpha."""
    tests = battery_columns(section)
    header = ["window", "n", "ECE", *tests, "groups adj. p <= alpha"]
    rows = []
    for w in section["windows"]:
        b = w.get("battery")
        if not b:
            continue
        label = f"{w['window']}. {w['label']}"
        if b.get("skipped"):
            rows.append([label, str(b["n"]), f"skipped: {b['skipped']}",
                         *("-" for _ in tests), "-"])
            continue
        ece = next((m for m in b["metrics"] if m["id"] == "ece"), None)
        p = {t["id"]: t["p_value"] for t in b["tests"]}
        tested = [g for g in b["groups"] if g["p_value_adjusted"] is not None]
        flagged = [g["group"] for g in tested if g["p_value_adjusted"] <= b["alpha"]]
        rows.append([label, str(b["n"]),
                     "-" if ece is None else _interval([ece["value"], *(ece["ci"] or [])]),
                     *(fmt_pvalue(p.get(t)) for t in tests),
                     (", ".join(flagged) if flagged else "none") + f" (of {len(tested)})"
                     if tested else "-"])
    return header, rows


def battery_table(section: Mapping[str, Any]) -> Table | None:
    """The per-window battery's key p-values (the first and the latest windows when there
    are more than :data:`SHOWN`); ``None`` without it."""
    note = section.get("window_battery")
    if not note:
        return None
    header, rows = battery_rows(section)
    if len(rows) > SHOWN:
        rows = rows[:1] + rows[-(SHOWN - 1):]
    table = new_table("battery per window: ECE and raw p-values (diagnostics, alpha "
                      f"{fmt_number(battery_alpha(section))}: they do not gate)", ())
    for name in header:  # a long test id breaks after its first underscore
        shown = name.replace("_", "_\n", 1) if len(name) > 10 and name != header[-1] else name
        table.add_column(shown, justify="left" if name in ("window", header[-1]) else "right",
                         overflow="fold")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    return table


def battery_alpha(section: Mapping[str, Any]) -> float | None:
    """The level the per-window tests are read at (the audit's alpha)."""
    return next((w["battery"]["alpha"] for w in section["windows"] if w.get("battery")),
                None)


def over_time_tables(result: Mapping[str, Any]) -> list[Any]:
    """The tables and the advice line of ``result``'s monitoring section (none without)."""
    section = result.get("monitoring")
    if not section:
        return []
    note = section.get("window_battery")
    out: list[Any] = [windows_table(section), groups_table(section), battery_table(section),
                      f"  note: {note['note']}." if note else None, advice_line(section)]
    return [x for x in out if x is not None]
