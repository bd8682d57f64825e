"""GitHub Actions outputs: a Markdown step summary and workflow-command annotations.

The step summary (``GITHUB_STEP_SUMMARY``) is capped below GitHub's 1 MiB limit
(``SUMMARY_CAP``): rows are cut and a note points at the artifacts. Annotations
(``GITHUB_ACTIONS=true``): ``::error`` for checks in fail-on, ``::warning`` for other
WARN/INCONCLUSIVE/ERROR checks, at most 9 per kind plus one roll-up (GitHub shows 10)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from calaudit.audit.gate import Check, failing, gating
from calaudit.output.checklist import check_lines, counts_sentence
from calaudit.output.formatting import fmt_number, fmt_pvalue, md_cell

GITHUB_LIMIT = 1024 * 1024
SUMMARY_CAP = 512 * 1024
ANNOTATIONS_PER_KIND = 10


def escape_data(text: str) -> str:
    """Escape a workflow-command message."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow-command property value (``title=...``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotations(checks: Iterable[Check], fail_on: Iterable[str],
                per_kind: int = ANNOTATIONS_PER_KIND) -> list[str]:
    """Workflow-command lines for the checks worth a reviewer's attention."""
    gate = set(fail_on)
    checks = list(checks)
    errors = [c for c in checks if c.status in gate and c.gates]
    warnings = [c for c in checks if c not in errors
                and c.status in ("WARN", "INCONCLUSIVE", "ERROR", *gate)]
    lines = []
    for level, group in (("error", errors), ("warning", warnings)):
        shown = group if len(group) <= per_kind else group[:per_kind - 1]
        for check in shown:
            title = f"calaudit {check.status}: {check.name}"
            lines.append(f"::{level} title={escape_property(title)}::"
                         f"{escape_data(_annotation_text(check))}")
        if len(shown) < len(group):
            rest = len(group) - len(shown)
            lines.append(f"::{level} title={escape_property('calaudit')}::"
                         f"{rest} more check(s) with this severity; see the step summary or "
                         "the JSON result")
    return lines


def _annotation_text(check: Check) -> str:
    """The title and the detail; a check without facts (made by hand) names its value and
    adjusted p-value after its title."""
    head = ", ".join([check.title or check.id, *([] if check.facts else _value_facts(check))])
    return f"{head}: {check.detail}" if check.detail else head


def _value_facts(check: Check) -> list[str]:
    parts = []
    if check.value is not None:
        label = "delta" if check.kind == "baseline" else "estimate"
        parts.append(f"{label} {fmt_number(check.value)}")
    if check.p_adjusted is not None:
        parts.append(f"adjusted p {fmt_pvalue(check.p_adjusted)}")
    return parts


def error_annotation(message: str) -> str:
    """The workflow command for an input, configuration or usage error (exit 2)."""
    return f"::error title={escape_property('calaudit error')}::{escape_data(message)}"


def error_summary(message: str) -> str:
    """The step-summary block for a run that stopped on an error before any check ran."""
    return f"### calaudit: ERROR\n\n**The audit did not run:** {md_cell(message)}\n\n"


_REPORTED: list[str] = []


def report_error(message: str, environ: Mapping[str, str] | None = None,
                 once: bool = False) -> None:
    """Under GitHub Actions, an ``::error`` annotation on stderr and a line in the step summary
    (never raises: the error is already on stderr); ``once``: only the process's first error."""
    import sys

    if once and _REPORTED:
        return
    _REPORTED.append(message)
    environ = os.environ if environ is None else environ
    if environ.get("CALAUDIT_OUTPUTS__GITHUB", "") == "off":
        return
    if environ.get("GITHUB_ACTIONS") == "true":
        sys.stderr.write(error_annotation(message) + "\n")
        sys.stderr.flush()
    path = environ.get("GITHUB_STEP_SUMMARY")
    if path:
        try:
            append_step_summary(path, error_summary(message))
        except OSError:
            pass


# ------------------------------------------------------------------------ step summary


def _check_row(check: Check) -> str:
    kind = check.kind if check.gates else f"{check.kind} (diagnostic)"
    return (f"| {md_cell(check.id)} | {kind} | **{check.status}** | "
            f"{fmt_number(check.value)} | {fmt_pvalue(check.p_value)} | "
            f"{fmt_pvalue(check.p_adjusted)} | {md_cell(check.detail)} |")


CHECK_HEADER = ["| check | kind | status | estimate or delta | p (raw) | p (adjusted) | detail |",
                "|---|---|---|---:|---:|---:|---|"]


def summary_markdown(payload: Mapping[str, Any], checks: list[Check] | None,
                     fail_on: Iterable[str],
                     budget: int = SUMMARY_CAP) -> str:
    """The step summary, at most ``budget`` bytes (UTF-8)."""
    gate = list(fail_on)
    lines = check_lines(payload, checks)
    failed = failing(lines, gate)
    verdict = payload.get("verdict", "?")
    head = [f"### calaudit: {verdict}", "",
            f"**Verdict: {verdict}**: {len(failed)} of {len(gating(lines))} checks have "
            f"a status in fail-on ({', '.join(gate) or 'none'}). {counts_sentence(lines)}.",
            "", _context_line(payload), ""]
    blocks: list[tuple[list[str], list[str], list[str]]] = []
    if failed:
        blocks.append((["#### Checks that fail the gate", "", *CHECK_HEADER],
                       [_check_row(c) for c in failed], [""]))
    baseline = payload.get("baseline")
    if baseline:
        blocks.append(_baseline_block(baseline))
    blocks.append(([f"<details><summary>All checks ({len(lines)})</summary>", "",
                    *CHECK_HEADER], [_check_row(c) for c in lines], ["", "</details>", ""]))
    return _fit(head, blocks, budget)


def _context_line(payload: Mapping[str, Any]) -> str:
    inputs, data = payload.get("inputs") or {}, payload.get("data") or {}
    config = payload.get("config") or {}
    parts = []
    if inputs.get("path"):
        parts.append(f"`{md_cell(inputs['path'])}`")
    if data.get("n") is not None:
        parts.append(f"n = {data['n']}")
    if data.get("n_classes"):
        parts.append(f"{data['n_classes']} classes")
    for key in ("seed", "alpha"):
        if config.get(key) is not None:
            parts.append(f"{key} {config[key]}")
    parts.append(f"calaudit {payload.get('calaudit_version', '?')}")
    return " · ".join(parts)


def _baseline_block(baseline: Mapping[str, Any]) -> tuple[list[str], list[str], list[str]]:
    head = [f"#### Baseline: {baseline.get('regressions', 0)} regression(s) against "
            f"`{md_cell(baseline.get('path') or 'baseline')}`", "",
            "| metric | better | old | new | delta | tolerance | status | detail |",
            "|---|---|---:|---:|---:|---:|---|---|"]
    rows = [f"| {md_cell(e['label'])} | {e.get('better') or '-'} | {fmt_number(e.get('old'))} | "
            f"{fmt_number(e.get('new'))} | {fmt_number(e.get('delta'))} | "
            f"{fmt_number(e.get('tolerance'))} | **{e['status']}** | {md_cell(e['message'])} |"
            for e in baseline.get("metrics", ())]
    rows += [f"| {md_cell(e['kind'] + ':' + e['id'])} | - | {e.get('old_status') or '-'} | "
             f"{e['new_status']} | - | - | **{e['status']}** | {md_cell(e['message'])} |"
             for e in baseline.get("checks", ())]
    return head, rows, [""]


def _fit(head: list[str], blocks: list[tuple[list[str], list[str], list[str]]],
         budget: int) -> str:
    """Join the blocks, cutting rows (with a note) so the text stays within ``budget``."""
    note = "_{} more row(s) left out to stay within GitHub's summary size limit; the full " \
           "result is in the JSON / JUnit outputs._"
    lines = list(head)
    used = _size(lines)
    left_out = 0
    for block_head, rows, tail in blocks:
        reserve = _size(block_head) + _size(tail) + len(note) + 16
        if used + reserve > budget:
            left_out += len(rows)
            continue
        lines += block_head
        used += _size(block_head)
        kept = 0
        for row in rows:
            if used + len(row.encode("utf-8")) + 1 + reserve > budget:
                break
            lines.append(row)
            used += len(row.encode("utf-8")) + 1
            kept += 1
        if kept < len(rows):
            lines += ["", note.format(len(rows) - kept)]
        lines += tail
        used = _size(lines)
    if left_out and used + len(note) + 16 <= budget:
        lines += [note.format(left_out), ""]
    return "\n".join(lines) + "\n"


def _size(lines: list[str]) -> int:
    return sum(len(line.encode("utf-8")) + 1 for line in lines)


def append_step_summary(path: str | Path, markdown: str) -> bool:
    """Append ``markdown`` unless the summary file would reach GitHub's limit (then ``False``)."""
    target = Path(path)
    existing = target.stat().st_size if target.exists() else 0
    data = markdown.encode("utf-8")
    if existing + len(data) >= GITHUB_LIMIT:
        return False
    with open(target, "ab") as handle:
        handle.write(data)
    return True


def summary_budget(path: str | Path) -> int:
    """Bytes we may append: our cap, or what the 1 MiB limit leaves (minus a margin)."""
    target = Path(path)
    existing = target.stat().st_size if target.exists() else 0
    return max(0, min(SUMMARY_CAP, GITHUB_LIMIT - existing - 4096))
