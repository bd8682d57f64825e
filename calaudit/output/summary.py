"""The terminal summary on stdout: a metrics table, a tests table (raw and adjusted
p-values, labelled), other checks with their reasons, the most biased groups, the baseline
deltas, then the verdict with the counts of the one check list every output shares.
``explain=True`` (``--explain``) adds what each row means."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from calaudit.audit.gate import Check, failing, statistic_text
from calaudit.output.checklist import check_lines, counts_sentence, fail_on_of
from calaudit.output.formatting import (
    fmt_bias,
    fmt_bias_ci,
    fmt_delta,
    fmt_number,
    fmt_pvalue,
    fmt_size,
    weights_line,
)
from calaudit.output.meanings import P_VALUES_TEXT, clipped_note, metric_meaning, test_meaning
from calaudit.output.over_time_table import new_table, over_time_tables
from calaudit.output.story import plain, story

STATUS_STYLE = {"PASS": "green", "WARN": "yellow", "FAIL": "bold red",
                "INCONCLUSIVE": "magenta", "ERROR": "bold red", "SKIPPED": "dim"}


def metrics_table(result: Mapping[str, Any]) -> Table:
    """Every metric: value, direction (and ideal), status when a threshold grades it."""
    table = new_table("metrics (estimates; a status only where a threshold grades one)",
                      ("metric", "value", "better", "status"), right={"value"})
    for metric in result["metrics"]:
        meaning = metric_meaning(metric["id"])
        value = fmt_number(metric["value"]) + (" *" if clipped_note(metric) else "")
        table.add_row(escape(metric["id"]), value, meaning.direction,
                      _styled(metric.get("status") or ""))
    return table


def explanations(result: Mapping[str, Any]) -> list[str]:
    """``--explain``: one line per metric and test row saying what it means."""
    lines = ["what the rows mean:"]
    for metric in result["metrics"]:
        meaning = metric_meaning(metric["id"])
        facts = [meaning.direction, f"ideal {meaning.ideal}" if meaning.ideal != "-" else "",
                 f"unit: {meaning.unit}", clipped_note(metric)]
        text = "; ".join(f for f in facts if f)
        lines.append(f"  {metric['id']}: {meaning.text or metric.get('title', '')} ({text})")
    for test in result["tests"]:
        statistic = statistic_text(test)
        lines.append(f"  {test['id']}: {test.get('title', '')}. {test_meaning(test)}"
                     + (f" The p-value comes from its {statistic}." if statistic else ""))
    if result["tests"]:
        lines.append(f"  {P_VALUES_TEXT}")
    return lines


def tests_table(result: Mapping[str, Any]) -> Table | None:
    """Every test: estimate, raw and adjusted p-value (labelled with the method); a test
    statistic other than the estimate is named under the tables."""
    if not result["tests"]:
        return None
    method = (result.get("config") or {}).get("multiple_testing") or "adjusted"
    roles = any(test.get("role") for test in result["tests"])
    right = ("estimate", "p (raw)", f"p ({method}-adjusted)")
    table = new_table("tests (status from the adjusted p-value)",
                      ("test", *(["role"] if roles else []), *right, "status"), right=right)
    for test in result["tests"]:
        role = [test.get("role") or "primary"] if roles else []
        table.add_row(escape(test["id"]), *role, fmt_number(test.get("estimate")),
                      fmt_pvalue(test.get("p_value")), fmt_pvalue(test.get("p_value_adjusted")),
                      _styled(test.get("status") or ""))
    return table


def other_checks_table(lines: list[Check]) -> Table | None:
    """Checks that are neither a metric nor a test row (e.g. thresholds that were SKIPPED),
    with their reason. Baseline comparisons have their own table."""
    rows = [c for c in lines if c.kind not in ("metric", "test", "baseline")]
    if not rows:
        return None
    table = new_table("other checks", ())
    for name in ("check", "status", "reason"):
        table.add_column(name, overflow="fold" if name == "reason" else None)
    for check in rows:
        table.add_row(escape(check.name), _styled(check.status), escape(check.detail))
    return table


def top_groups_table(result: dict[str, Any]) -> Table | None:
    """The groups listed first (``local.lcb.top_groups``: intervals that exclude 0, the
    strongest evidence first), or ``None`` when there are none."""
    top = (result.get("local") or {}).get("lcb", {}).get("top_groups") or []
    if not top:
        return None
    columns = ("#", "group", "n", "obs / pred", "bias [interval]", "p adj.", "status")
    table = new_table("groups with the clearest bias, strongest evidence first (bias = "
                      "observed - predicted)", columns, right=set(columns) - {"group", "status"})
    notes = group_messages(result)
    for row in top:
        marker = " †" if notes.get(str(row["group"])) else ""
        table.add_row(str(row["rank"]), escape(str(row["group"])), fmt_size(row["n"]),
                      f"{row['observed_rate']:.3f} / {row['mean_prediction']:.3f}",
                      f"{fmt_bias(row['bias'])} {fmt_bias_ci(row['bias_ci'])}",
                      fmt_pvalue(row["p_value_adjusted"]),
                      _styled(row["status"] or "") + marker)
    if any(notes.get(str(row["group"])) for row in top):
        reasons = {part for r in top for part in notes.get(str(r["group"]), "").split("; ")
                   if part}
        table.caption = "† " + "; ".join(sorted(reasons))
        table.caption_justify = "left"
    return table


def group_messages(result: Mapping[str, Any]) -> dict[str, str]:
    """Each group's gate message (e.g. why a group with a small adjusted p-value is not a
    FAIL: the rule needs the simultaneous interval to exclude 0 too), by group name."""
    return {str(g.get("group")): str(g.get("message") or "") for g in result.get("groups") or []}


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
                  color: bool | None = None, explain: bool = False,
                  checks: Sequence[Check] | None = None) -> None:
    """Print the data line, the tables, the notes of non-passing checks and the verdict with the
    counts of the one check list (``checks``, else built from ``result``)."""
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
    weighted = weights_line(data)
    if weighted:
        console.print(weighted, markup=False, soft_wrap=True)
    lines = check_lines(result, checks)
    tables = [metrics_table(result), tests_table(result),
              other_checks_table(lines), top_groups_table(result)]
    for table in tables:
        if table is not None:
            console.print(table)
    for item in over_time_tables(result):
        console.print(item, markup=False, soft_wrap=True) if isinstance(item, str) \
            else console.print(item)
    if any(clipped_note(m) for m in result["metrics"]) and not explain:
        console.print("  * clipped at 0; --explain shows the unclipped estimate", markup=False)
    if explain:
        for line in explanations(result):
            console.print(line, markup=False, soft_wrap=True)
    if result.get("baseline"):
        print_baseline(result["baseline"], file=file, color=color, console=console)
    for check in lines:
        if check.status != "PASS" and check.kind != "baseline" and check.detail:
            console.print(f"  {check.name}: {check.status}: {check.detail}", markup=False,
                          soft_wrap=True)
    n_failing = len(failing(lines, fail_on_of(result)))
    verdict = result["verdict"]
    console.print(f"verdict: {_styled(verdict)} ({counts_sentence(lines)}; "
                  f"{n_failing} in fail-on)")
    for sentence in story(result, lines):  # the words every report leads with
        console.print(f"  {plain(sentence)}", markup=False, soft_wrap=True)
    if not explain:
        console.print("  (--explain prints what each row means)", style="dim")


def baseline_table(baseline: Mapping[str, Any]) -> Table:
    """Metric deltas against the baseline, then the checks whose gate status changed."""
    right = ("old", "new", "delta", "tolerance")
    table = new_table(None, ("metric", "better", *right, "status"), right=right)
    for entry in baseline.get("metrics", ()):
        table.add_row(entry["label"], entry.get("better") or "-", fmt_number(entry["old"]),
                      fmt_number(entry["new"]), fmt_delta(entry.get("delta")),
                      fmt_number(entry.get("tolerance")), _styled(entry["status"]))
    for entry in baseline.get("checks", ()):
        table.add_row(f"{entry['kind']}:{entry['id']}", "-", entry.get("old_status") or "-",
                      entry["new_status"], "", "", _styled(entry["status"]))
    return table


def print_baseline(baseline: Mapping[str, Any], file: TextIO | None = None,
                   color: bool | None = None, console: Console | None = None) -> None:
    """The delta table, the notes of non-passing comparisons and the configuration differences."""
    console = console or make_console(file, color)
    sha = baseline.get("sha256")
    console.print(f"baseline: {baseline.get('path') or '(payload)'}"
                  f" (calaudit {baseline.get('calaudit_version')}, "
                  f"{baseline.get('created_at')}{', sha256 ' + sha[:12] if sha else ''})",
                  markup=False)
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
