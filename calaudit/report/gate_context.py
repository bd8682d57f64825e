"""View model of what the gate decided: the verdict in words, the one check list
(:func:`calaudit.output.checklist.check_lines`) and the baseline comparison."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from calaudit.audit.gate import Check, failing
from calaudit.output.checklist import check_lines, counts_sentence, fail_on_of
from calaudit.output.formatting import fmt_delta, fmt_number, fmt_pvalue, fmt_value
from calaudit.output.story import HEADLINES, Span, primary_tests, story
from calaudit.report.local_context import count_text
from calaudit.report.views import (
    BaselineRow,
    BaselineView,
    CheckRef,
    CheckRow,
    KeyValue,
    VerdictView,
)

COMPARISON_HEADLINES = {
    "PASS": "No metric regressed and no check newly fails against the baseline.",
    "FAIL": "The candidate regressed against the baseline.",
}
#: Statuses shown under "needs attention" when they do not fail the gate.
ATTENTION = ("WARN", "INCONCLUSIVE", "ERROR", "SKIPPED")


def check_views(lines: Sequence[Check]) -> tuple[CheckRow, ...]:
    return tuple(CheckRow(kind=c.kind, id=c.id, name=c.name, title=c.title, status=c.status,
                          value=fmt_number(c.value), p_value=fmt_pvalue(c.p_value),
                          p_adjusted=fmt_pvalue(c.p_adjusted), detail=c.detail,
                          role=c.role)
                 for c in lines)


def build_verdict(result: Mapping[str, Any], lines: Sequence[Check] | None = None
                  ) -> VerdictView:
    """Verdict, the decision and its evidence in plain words (:func:`calaudit.output.story.
    story`, the sentences every output leads with), the gate, the checks behind it."""
    lines = check_lines(result) if lines is None else lines
    fail_on = fail_on_of(result)
    deciding = [_ref(c) for c in failing(lines, fail_on)]
    attention = [_ref(c) for c in lines
                 if c.gates and c.status not in fail_on and c.status in ATTENTION]
    groups = list(result.get("groups") or ())
    counts = [KeyValue("checks", counts_sentence(lines))]
    if groups:
        counts.append(KeyValue("groups (diagnostics)",
                               count_text(Counter(str(g.get("status")) for g in groups
                                                  if g.get("status")))))
    verdict = str(result.get("verdict", "-"))
    if result.get("kind") == "comparison":
        sentences = [(Span(COMPARISON_HEADLINES.get(verdict, HEADLINES.get(verdict, ""))),),
                     *((Span(f"Against the baseline, {c.id}: {c.detail}."),)
                       for c in failing(lines, fail_on))]
    else:
        sentences = story(result, lines)
    return VerdictView(status=verdict, headline=sentences[0], gate=gate_sentence(result),
                       deciding=tuple(deciding), attention=tuple(attention),
                       counts=tuple(counts), story=tuple(sentences[1:]))


def gate_sentence(result: Mapping[str, Any]) -> tuple[Span, ...]:
    """How the gate decides, in plain words, linked to its rule (``gate.rule``)."""
    config = result.get("config") or {}
    fail_on = ", ".join(fail_on_of(result))
    primaries = primary_tests(result)
    if not result.get("tests"):
        return (Span(f"{no_tests_note(config)} The audit fails on {fail_on}."),)
    return (Span(f"The verdict rests on {len(primaries)} "), Span("primary", "primary-test"),
            Span(f" test(s) at alpha = {config.get('alpha', '-')}, their p-values "),
            Span("adjusted", "adjusted-p"), Span(" for testing several at once ("),
            Span("the gate's rule", "gate-rule"),
            Span(f"); a check with a status in {fail_on} fails the audit."))


def no_tests_note(config: Mapping[str, Any]) -> str:
    if config.get("run_tests") is False:
        return "No hypothesis tests were run: this is an estimates-only audit (calaudit metrics)."
    return "This result contains no hypothesis tests."


def _ref(line: Check) -> CheckRef:
    kind = line.kind if line.gates else f"diagnostic {line.kind}"
    return CheckRef(kind, line.id, line.title, line.status, line.detail)


def build_baseline(section: Mapping[str, Any] | None) -> BaselineView | None:
    """The baseline comparison: file, SHA-256, tolerance rule, deltas and transitions."""
    if not section:
        return None
    tolerance = f"absolute {fmt_value(section.get('tolerance'))}"
    if section.get("relative_tolerance"):
        tolerance += f" or relative {fmt_value(section['relative_tolerance'])} (the larger)"
    facts = [KeyValue("baseline file", str(section.get("path") or "(in memory)")),
             KeyValue("baseline sha256", str(section.get("sha256") or "-")),
             KeyValue("baseline audited", f"{section.get('created_at', '-')} with calaudit "
                                          f"{section.get('calaudit_version', '-')}"),
             KeyValue("default tolerance", tolerance),
             KeyValue("regressions", str(section.get("regressions", 0)))]
    rows = tuple(BaselineRow(label=str(e.get("label")), better=str(e.get("better") or "-"),
                             old=fmt_number(e.get("old")), new=fmt_number(e.get("new")),
                             delta=fmt_delta(e.get("delta")),
                             tolerance=fmt_number(e.get("tolerance")),
                             status=str(e.get("status") or ""),
                             message=str(e.get("message") or ""))
                 for e in section.get("metrics") or ())
    transitions = tuple(BaselineRow(label=f"{e.get('kind')}:{e.get('id')}", better="-",
                                    old=str(e.get("old_status") or "-"),
                                    new=str(e.get("new_status") or "-"), delta="",
                                    tolerance="", status=str(e.get("status") or ""),
                                    message=str(e.get("message") or ""))
                        for e in section.get("checks") or ())
    differences = tuple(KeyValue(str(d.get("key")), f"{d.get('old')!r} -> {d.get('new')!r}")
                        for d in section.get("config_differences") or ())
    return BaselineView(facts=tuple(facts), status=str(section.get("status") or "-"),
                        regressions=int(section.get("regressions") or 0), rows=rows,
                        transitions=transitions, differences=differences)
