"""The compact terminal summary on stdout: one row per metric and test, then the verdict;
with a baseline, a table of deltas."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from calaudit.audit.checks import failing, result_checks
from calaudit.output.formatting import fmt_number, fmt_pvalue

STATUS_STYLE = {"PASS": "green", "WARN": "yellow", "FAIL": "bold red",
                "INCONCLUSIVE": "magenta", "ERROR": "bold red", "SKIPPED": "dim"}


def summary_table(result: Mapping[str, Any]) -> Table:
    """A rich table of checks: id, estimate, p-value (adjusted when available), status."""
    table = Table(title=None, show_edge=False, pad_edge=False)
    table.add_column("check")
    table.add_column("estimate", justify="right")
    table.add_column("p-value", justify="right")
    table.add_column("status")
    for metric in result["metrics"]:
        status = metric.get("status") or ""
        table.add_row(metric["id"], fmt_number(metric["value"]), "",
                      _styled(status))
    for test in result["tests"]:
        p = test["p_value_adjusted"] if test["p_value_adjusted"] is not None else test["p_value"]
        table.add_row(test["id"], fmt_number(test["estimate"]), fmt_pvalue(p),
                      _styled(test["status"] or ""))
    for entry in (result.get("gate") or {}).get("unmatched_thresholds", ()):
        table.add_row(escape(f"threshold {entry['metric']}"), "-", "", _styled(entry["status"]))
    return table


def top_groups_table(result: dict[str, Any]) -> Table | None:
    """The most biased groups of the local-calibration diagnostics (``local.lcb.top_groups``),
    or ``None`` when there are none."""
    top = (result.get("local") or {}).get("lcb", {}).get("top_groups") or []
    if not top:
        return None
    table = Table(title="most biased groups (bias = observed - predicted)", show_edge=False,
                  pad_edge=False, title_justify="left")
    for name, justify in (("#", "right"), ("group", "left"), ("n", "right"),
                          ("obs / pred", "right"), ("bias [interval]", "right"),
                          ("p adj.", "right"), ("status", "left")):
        table.add_column(name, justify=justify)
    for row in top:
        low, high = row["bias_ci"] or (None, None)
        interval = "" if low is None else f" [{low:+.3f}, {high:+.3f}]"
        table.add_row(str(row["rank"]), escape(str(row["group"])), str(row["n"]),
                      f"{row['observed_rate']:.3f} / {row['mean_prediction']:.3f}",
                      f"{row['bias']:+.3f}{interval}", fmt_pvalue(row["p_value_adjusted"]),
                      _styled(row["status"] or ""))
    return table


def _styled(status: str) -> str:
    style = STATUS_STYLE.get(status)
    return f"[{style}]{status}[/]" if style else status


def make_console(file: TextIO | None = None, color: bool | None = None) -> Console:
    """A stdout console: ``color`` ``True``/``False`` forces colour on/off, ``None`` lets rich
    decide (terminal, ``NO_COLOR``, ``FORCE_COLOR``)."""
    return Console(file=file, no_color=True if color is False else (False if color else None),
                   force_terminal=True if color else None, highlight=False,
                   width=None if color else 100, soft_wrap=False)


def print_summary(result: Mapping[str, Any], file: TextIO | None = None,
                  color: bool | None = None) -> None:
    """Print the data line, the table, the notes of non-passing checks and the verdict."""
    console = make_console(file, color)
    data, inputs = result["data"], result["inputs"]
    reasons = ", ".join(f"{rule}: {count}" for rule, count in inputs["rows_excluded"].items())
    excluded = sum(inputs["rows_excluded"].values())
    console.print(
        f"{inputs['path'] or 'arrays'}: n={data['n']} ({excluded} excluded"
        f"{' - ' + reasons if reasons else ''}), "
        f"{data['n_classes']} classes, covariates: "
        f"{', '.join(c['name'] for c in data['covariates']) or 'none'}",
        markup=False,
    )
    console.print(summary_table(result))
    groups = top_groups_table(result)
    if groups is not None:
        console.print(groups)
    sentence = (result.get("attribution") or {}).get("summary")
    if sentence:
        console.print(f"who is miscalibrated (diagnostic): {sentence}", markup=False,
                      soft_wrap=True)
    checks = [c for c in result_checks(result) if c.kind != "baseline"]
    for check in checks:
        if check.status != "PASS" and check.message:
            console.print(f"  {check.name}: {check.status}: {check.message}", markup=False,
                          soft_wrap=True)
    fail_on = (result.get("gate") or {}).get("fail_on") or result["config"]["fail_on"]
    n_failing = len(failing(result_checks(result), fail_on))
    verdict = result["verdict"]
    console.print(f"verdict: {_styled(verdict)} ({len(result_checks(result))} checks, "
                  f"{n_failing} in fail-on)")


def baseline_table(baseline: Mapping[str, Any]) -> Table:
    """Metric deltas against the baseline, then the checks whose gate status changed."""
    table = Table(show_edge=False, pad_edge=False)
    for name, justify in (("metric", "left"), ("better", "left"), ("old", "right"),
                          ("new", "right"), ("delta", "right"), ("tolerance", "right"),
                          ("status", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for entry in baseline.get("metrics", ()):
        table.add_row(entry["label"], entry.get("better") or "-", fmt_number(entry["old"]),
                      fmt_number(entry["new"]), _signed(entry.get("delta")),
                      fmt_number(entry.get("tolerance")), _styled(entry["status"]))
    for entry in baseline.get("checks", ()):
        table.add_row(f"{entry['kind']}:{entry['id']}", "-", entry.get("old_status") or "-",
                      entry["new_status"], "", "", _styled(entry["status"]))
    return table


def _signed(value: float | None) -> str:
    text = fmt_number(value)
    return f"+{text}" if value is not None and value > 0 else text


def print_baseline(baseline: Mapping[str, Any], file: TextIO | None = None,
                   color: bool | None = None) -> None:
    """The delta table, the notes of non-passing comparisons and the configuration
    differences."""
    console = make_console(file, color)
    console.print(f"baseline: {baseline.get('path') or '(payload)'}"
                  f" (calaudit {baseline.get('calaudit_version')}, "
                  f"{baseline.get('created_at')})", markup=False)
    console.print(baseline_table(baseline))
    for entry in [*baseline.get("metrics", ()), *baseline.get("checks", ())]:
        if entry["status"] not in ("PASS", "SKIPPED") or "regression" in entry["message"]:
            name = entry.get("label") or f"{entry['kind']}:{entry['id']}"
            console.print(f"  {name}: {entry['status']}: {entry['message']}", markup=False,
                          soft_wrap=True)
    differences = baseline.get("config_differences") or []
    if differences:
        shown = ", ".join(f"{d['key']} {d['old']!r} -> {d['new']!r}" for d in differences[:8])
        more = f" (+{len(differences) - 8} more)" if len(differences) > 8 else ""
        console.print(f"  note: configurations differ: {shown}{more}", markup=False,
                      soft_wrap=True)
    console.print(f"baseline: {_styled(baseline['status'])} "
                  f"({baseline.get('regressions', 0)} regression(s))")
