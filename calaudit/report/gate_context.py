"""View model of what the gate decided: the verdict in words, the one check list and the
baseline comparison.

Every check comes from :func:`calaudit.output.checklist.check_lines`, the list the exit
code, the terminal summary, JUnit and the step summary use, so the report's ids, statuses
and counts are those of every other output. Nothing here re-runs the gate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from calaudit.output.checklist import (
    CheckLine,
    check_lines,
    counts_text,
    diagnostic_lines,
    fail_on_of,
    failing_lines,
    gating_lines,
)
from calaudit.output.formatting import fmt_number, fmt_p_clause, fmt_pvalue, fmt_value
from calaudit.report import notes
from calaudit.report.local_context import count_text
from calaudit.report.views import (
    BaselineRow,
    BaselineView,
    CheckRef,
    CheckRow,
    KeyValue,
    VerdictView,
)

HEADLINES = {
    "PASS": "No check has a status that fails the gate.",
    "FAIL": "At least one check has a status that fails the gate.",
    "ERROR": "At least one check could not run.",
    "WARN": "No check failed the gate, but some checks warn.",
    "INCONCLUSIVE": "No check failed the gate, but some checks could not decide.",
    "NO CHECKS": "Nothing was gated: this audit has no tests and no thresholds.",
}
#: Statuses shown under "needs attention" when they do not fail the gate.
ATTENTION = ("WARN", "INCONCLUSIVE", "ERROR", "SKIPPED")


def check_rows(lines: Sequence[CheckLine]) -> tuple[CheckRow, ...]:
    return tuple(CheckRow(kind=c.kind, id=c.id, name=c.name, title=c.title, status=c.status,
                          value=fmt_number(c.value), p_value=fmt_pvalue(c.p_value),
                          p_adjusted=fmt_pvalue(c.p_adjusted), detail=c.detail,
                          role=c.role)
                 for c in lines)


def build_verdict(result: Mapping[str, Any], lines: Sequence[CheckLine] | None = None
                  ) -> VerdictView:
    """Verdict, the gate that decided it, the checks behind it and the story in words."""
    config = result.get("config") or {}
    lines = check_lines(result) if lines is None else lines
    fail_on = fail_on_of(result)
    deciding = [_ref(c) for c in failing_lines(lines, fail_on)]
    attention = [_ref(c) for c in lines
                 if (c.gates and c.status not in fail_on and c.status in ATTENTION)
                 or (not c.gates and c.status not in ("PASS", ""))]
    groups = list(result.get("groups") or ())
    n_tests = len(result.get("tests") or ())
    grading = (f"Tests ({n_tests}) are graded on p-values "
               f"{notes.adjustment_summary(config)}, at alpha = {config.get('alpha', '-')}."
               if n_tests else
               no_tests_note(config))
    gate = (f"Fails on: {', '.join(fail_on)}.", grading)
    gating = gating_lines(lines)
    counts = [KeyValue("checks", f"{len(gating)} ({counts_text(gating)})")]
    diagnostics = diagnostic_lines(lines)
    if diagnostics:
        counts.append(KeyValue("diagnostic tests (do not gate)",
                               f"{len(diagnostics)} ({counts_text(diagnostics)})"))
    if groups:
        counts.append(KeyValue("groups (diagnostics)",
                               count_text(Counter(str(g.get("status")) for g in groups
                                                  if g.get("status")))))
    verdict = str(result.get("verdict", "-"))
    headline = HEADLINES.get(verdict, "")
    if result.get("kind") == "comparison":
        headline = {"PASS": "No metric regressed and no check newly fails against the baseline.",
                    "FAIL": "The candidate regressed against the baseline."}.get(verdict,
                                                                                 headline)
    elif verdict == "PASS" and not n_tests:
        headline = ("No check failed the gate, but no hypothesis test ran: nothing below was "
                    "tested.")
    return VerdictView(status=verdict, headline=headline, gate=gate,
                       deciding=tuple(deciding), attention=tuple(attention),
                       counts=tuple(counts), story=tuple(story(result, lines, fail_on)))


def no_tests_note(config: Mapping[str, Any]) -> str:
    if config.get("run_tests") is False:
        return "No hypothesis tests were run: this is an estimates-only audit (calaudit metrics)."
    return "This result contains no hypothesis tests."


def _ref(line: CheckLine) -> CheckRef:
    kind = line.kind if line.gates else f"diagnostic {line.kind}"
    return CheckRef(kind, line.id, line.title, line.status, line.detail)


def story(result: Mapping[str, Any], lines: Sequence[CheckLine], fail_on: Sequence[str]
          ) -> list[str]:
    """What decided the verdict, in plain sentences, most important first."""
    sentences = []
    tests = {t.get("id"): t for t in result.get("tests") or ()}
    for line in failing_lines(lines, fail_on):
        if line.kind == "test":
            test = tests.get(line.id) or {}
            scope = ("within covariate neighbourhoods"
                     if test.get("family") == "local" or line.id.startswith("klce")
                     else "overall")
            sentences.append(
                f"{line.title} finds the model miscalibrated {scope}: "
                f"adjusted {fmt_p_clause(line.p_adjusted)} <= alpha {fmt_value(test.get('alpha'))}"
                f" ({fmt_p_clause(line.p_value, 'raw p')}).")
        elif line.kind == "baseline":
            sentences.append(f"Against the baseline, {line.id}: {line.detail}.")
        else:
            sentences.append(f"{line.title} ({line.id}): {line.message or line.detail}.")
    sentences += _groups_sentence(result)
    attribution = (result.get("attribution") or {}).get("summary")
    if attribution:
        sentences.append(f"Who is miscalibrated (a diagnostic, not part of the gate): "
                         f"{attribution}.")
    passing = [t for t in result.get("tests") or () if t.get("status") == "PASS"
               and t.get("role") != "diagnostic"]
    if passing:
        smallest = min(t.get("p_value_adjusted") or 1.0 for t in passing)
        sentences.append(f"{len(passing)} other test(s) do not reject calibration (smallest "
                         f"adjusted p {fmt_pvalue(smallest)}); not rejecting is not proof of "
                         f"calibration.")
    diagnostics = [t for t in result.get("tests") or () if t.get("role") == "diagnostic"]
    if diagnostics:
        statuses = Counter(str(t.get("status") or "") for t in diagnostics)
        sentences.append(f"{len(diagnostics)} diagnostic test(s), reported but never deciding "
                         f"the verdict: {count_text(statuses)}.")
    return sentences


def _groups_sentence(result: Mapping[str, Any], limit: int = 3) -> list[str]:
    """The most biased failing groups and the covariates that define them."""
    top = ((result.get("local") or {}).get("lcb") or {}).get("top_groups") or []
    failing = [g for g in top if g.get("status") == "FAIL"]
    if not failing:
        failing = sorted((g for g in result.get("groups") or () if g.get("status") == "FAIL"),
                         key=lambda g: -abs(g.get("bias") or 0.0))
    if not failing:
        return []
    shown = "; ".join(f"{g.get('group')} ({_bias(g.get('bias'))})" for g in failing[:limit])
    covariates = sorted({part.split("=")[0].strip() for g in failing
                         for part in str(g.get("group")).split("&") if "=" in part})
    more = f" and {len(failing) - limit} more" if len(failing) > limit else ""
    by = f", defined by {', '.join(covariates)}" if covariates else ""
    return [f"The groups that explain it{by}: {shown}{more} "
            f"(bias = observed rate - mean prediction)."]


def _bias(value: Any) -> str:
    return f"{value:+.3f}" if isinstance(value, (int, float)) else "-"


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
                             delta=_signed(e.get("delta")),
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


def _signed(value: Any) -> str:
    text = fmt_number(value)
    return f"+{text}" if isinstance(value, (int, float)) and value > 0 else text
