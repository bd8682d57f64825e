"""Build the report's view model (:class:`ReportContext`) from a JSON result: every number
formatted, every section in page order, every figure named; nothing is recomputed. The
sections other than the head, estimates, tests, nulls and sign-off come from the
``*_context`` modules."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath
from typing import Any

from calaudit.audit.gate import Check, statistic_text
from calaudit.output.checklist import check_lines, counts_sentence, fail_on_of
from calaudit.output.formatting import (
    fmt_ci,
    fmt_count,
    fmt_number,
    fmt_pvalue,
    fmt_value,
)
from calaudit.output.meanings import clipped_note, metric_meaning
from calaudit.output.story import GLOSSARY, is_local, primary_tests
from calaudit.report import notes
from calaudit.report.appendix import build_appendix
from calaudit.report.data_context import build_data
from calaudit.report.diagnosis_context import build_diagnosis
from calaudit.report.figures import FigureNamer
from calaudit.report.gate_context import (
    build_baseline,
    build_verdict,
    check_views,
    no_tests_note,
)
from calaudit.report.local_context import build_local, count_text, test_scope
from calaudit.report.over_time_context import build_over_time
from calaudit.report.reliability_context import build_reliability
from calaudit.report.views import (
    EvidenceSection,
    FigureView,
    KeyValue,
    LocalView,
    MetricRow,
    NullView,
    ReliabilityView,
    ReportContext,
    SignOffView,
    Term,
    TestRow,
    VerdictView,
)

#: Builders of extra evidence sections, called in order with ``(result, namer)``; each
#: returns an :class:`EvidenceSection` or ``None``. New report sections (attribution,
#: per-group reliability, disparity) register here and ship their own template partials.
EVIDENCE_BUILDERS: list[Callable[[Mapping[str, Any], FigureNamer], EvidenceSection | None]] = [
    build_over_time]


def build_context(result: Mapping[str, Any], signoff: Mapping[str, str] | None = None,
                  source: Mapping[str, str] | None = None,
                  checks: Sequence[Check] | None = None) -> ReportContext:
    """The view model of one result. ``signoff``: ``name``, ``role``, ``date``, ``decision``
    (blank when missing); ``source``: the saved JSON re-rendered; ``checks``: the gate's list."""
    config = result.get("config") or {}
    tests = tuple(test_row(t, result) for t in result.get("tests") or ())
    namer = FigureNamer()
    inputs = result.get("inputs") or {}
    path = inputs.get("path")
    lines = check_lines(result, checks)
    reliability = build_reliability(result, namer)
    nulls = build_nulls(result, tests, namer)
    local = build_local(result, tests, namer)
    evidence = tuple(section for builder in EVIDENCE_BUILDERS
                     if (section := builder(result, namer)) is not None)
    diagnosis = build_diagnosis(result, namer)
    lead, lead_section = lead_figure(result, reliability, local, namer)
    verdict = build_verdict(result, lines)
    glossary = build_glossary(result, verdict)
    return ReportContext(
        title=f"Calibration audit: {PurePath(path).name}" if path else "Calibration audit",
        subtitle=f"{path or 'in-memory arrays'}, audited {result.get('created_at', '-')}",
        created_at=str(result.get("created_at", "-")),
        calaudit_version=str(result.get("calaudit_version", "-")),
        verdict=verdict,
        data=build_data(result),
        metrics=tuple(metric_row(m) for m in result.get("metrics") or ()),
        tests=tests,
        tests_note="" if tests else no_tests_note(config),
        reliability=reliability,
        nulls=nulls,
        local=local,
        local_note=_local_note(result),
        how_to_read=notes.how_to_read(config),
        notes=notes.general_notes(config, len(tests)),
        appendix=build_appendix(result),
        signoff=build_signoff(signoff or {}),
        diagnosis=diagnosis,
        lead=lead, lead_section=lead_section,
        lead_section_title=dict(SECTION_TITLES).get(lead_section, ""),
        glossary=glossary,
        appendix_sections=_appendix_sections(bool(nulls), local is not None),
        checks=check_views(lines),
        check_counts=counts_sentence(lines),
        baseline=build_baseline(result.get("baseline")),
        evidence=evidence,
        provenance=provenance(source),
        top_groups=local.top_groups if local is not None else (),
        sections=_sections(result, bool(nulls), local is not None or bool(_local_note(result)),
                           evidence, bool(glossary)),
        test_summary=_test_summary(result),
        data_summary=_data_summary(result),
        local_summary=_local_summary(result),
    )


#: Anchors and titles of the sections, as the contents line names them.
SECTION_TITLES = (("checks", "Checks"), ("baseline", "Baseline"),
                  ("reliability", "Reliability"), ("local", "Local calibration"),
                  ("diagnosis", "Who is miscalibrated"), ("metrics", "Estimates"),
                  ("data", "Data"), ("terms", "Terms"), ("tests", "Tests"),
                  ("nulls", "Null distributions"), ("groups", "Group table"),
                  ("notes", "Reading this report"), ("appendix", "Methods"),
                  ("signoff", "Sign-off"))


def _sections(result: Mapping[str, Any], nulls: bool, local: bool,
              evidence: Sequence[EvidenceSection], terms: bool
              ) -> tuple[tuple[str, str], ...]:
    """``(anchor, title)`` of every section of the evidence (before the appendix), in page order."""
    shown = {"checks", "reliability", "metrics", "data", "signoff"} | (
        {"terms"} if terms else set())
    if result.get("baseline"):
        shown.add("baseline")
    if local:
        shown.add("local")
    if result.get("attribution") or result.get("disparity"):
        shown.add("diagnosis")
    found = [(key, title) for key, title in SECTION_TITLES[:5] if key in shown]
    found += [(section.id, section.title) for section in evidence]
    found += [(key, title) for key, title in SECTION_TITLES[5:] if key in shown]
    return tuple(found)


def _appendix_sections(nulls: bool, local: bool) -> tuple[tuple[str, str], ...]:
    """The appendix's sections (in the HTML after the evidence; in the PDF only with
    ``--pdf-appendix``)."""
    shown = {"tests", "notes", "appendix"} | ({"nulls"} if nulls else set()) | \
        ({"groups"} if local else set())
    return tuple((key, title) for key, title in SECTION_TITLES if key in shown)


#: Groups whose reliability diagrams lead a local failure (one row of panels).
LEAD_PANELS = 4


def lead_figure(result: Mapping[str, Any], reliability: ReliabilityView,
                local: LocalView | None, namer: FigureNamer) -> tuple[FigureView | None, str]:
    """The picture the verdict rests on and its section: the reliability diagram, or, when only
    a local primary fails, the diagrams of the most biased groups (else the bias by group)."""
    fail_on = set(fail_on_of(result))
    failing = [t for t in primary_tests(result) if t.get("status") in fail_on]
    local_only = bool(failing) and all(is_local(t) for t in failing)
    panels = lead_panels(result) if local_only else []
    if panels:
        names = ", ".join(str(p.get("group")) for p in panels)
        return namer.view(
            "reliability_by_group", "Reliability of the groups with the clearest bias",
            f"Reliability diagrams of {names}.",
            "One panel per group: observed frequency against predicted probability per "
            "bin (dot area: rows), where a calibrated model's frequencies fall (grey) and "
            "the diagonal of perfect calibration.", {"panels": panels},
            slug="lead-groups"), "diagnosis"
    if local_only and local is not None and local.bias_figure is not None:
        return local.bias_figure, "local"
    if reliability.figure is not None:
        return reliability.figure, "reliability"
    return None, ""


def lead_panels(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The per-group reliability panels (``local.group_reliability``) of the groups listed
    first (``local.lcb.top_groups``), at most :data:`LEAD_PANELS`, in their order."""
    local = result.get("local") or {}
    panels = {str(p.get("group")): p for p in local.get("group_reliability") or ()}
    top = [str(g.get("group")) for g in (local.get("lcb") or {}).get("top_groups") or ()]
    chosen = [panels[name] for name in top if name in panels][:LEAD_PANELS]
    if len(chosen) == 1:  # with the other levels of its covariate, to compare with
        covariate = str(chosen[0].get("group")).split("=")[0]
        chosen += [p for name, p in panels.items() if name.split("=")[0] == covariate
                   and "&" not in name and p is not chosen[0]][:LEAD_PANELS - 1]
    return chosen


def build_glossary(result: Mapping[str, Any], verdict: VerdictView) -> tuple[Term, ...]:
    """The terms the first screen links to (and, with groups, the words of the group
    tables), and the gate's own rule (``gate.rule``)."""
    used = {span.term for sentence in (verdict.headline, verdict.gate, *verdict.story)
            for span in sentence if span.term}
    if result.get("groups"):
        used |= {"bias", "interval", "gatekeeping"}  # the group tables use them
    terms = [Term(key, term, text) for key, (term, text) in GLOSSARY.items() if key in used]
    rule = (result.get("gate") or {}).get("rule")
    if rule:
        terms.append(Term("gate-rule", "the gate's rule", str(rule)))
    return tuple(terms)


def _counts(statuses: Sequence[str]) -> str:
    return count_text(Counter(s for s in statuses if s))


def _test_summary(result: Mapping[str, Any]) -> str:
    tests = result.get("tests") or ()
    if not tests:
        return "no tests"
    return f"{len(tests)} test(s): {_counts([str(t.get('status') or '') for t in tests])}"


def _data_summary(result: Mapping[str, Any]) -> str:
    data = result.get("data") or {}
    covariates = ", ".join(str(c.get("name")) for c in data.get("covariates") or ()) or "none"
    return (f"n = {fmt_count(data.get('n'))}, {data.get('n_classes', '-')} classes, "
            f"covariates: {covariates}")


def _local_summary(result: Mapping[str, Any]) -> str:
    klce = (result.get("local") or {}).get("klce") or {}
    ids = set(klce.get("tests") or ())
    parts = [f"{t['id']} {t.get('status') or '-'}" for t in result.get("tests") or ()
             if t.get("id") in ids]
    groups = result.get("groups") or ()
    if groups:
        parts.append(f"{len(groups)} groups: "
                     f"{_counts([str(g.get('status') or '') for g in groups])}")
    return "; ".join(parts)


def provenance(source: Mapping[str, str] | None) -> tuple[KeyValue, ...]:
    """Which saved JSON a re-rendered report comes from (none for a fresh audit)."""
    if not source:
        return ()
    return (KeyValue("rendered from", str(source.get("path", "-"))),
            KeyValue("its sha256", str(source.get("sha256", "-"))))


def _local_note(result: Mapping[str, Any]) -> str:
    """Why there is no local-calibration section, when covariates were given."""
    covariates = (result.get("data") or {}).get("covariates") or []
    if covariates and not result.get("local") and not result.get("groups"):
        return ("Covariates were given, but this result contains no local calibration "
                "results or group diagnostics.")
    return ""


def status_of(item: Mapping[str, Any]) -> str:
    return str(item.get("status") or "")


def metric_row(metric: Mapping[str, Any]) -> MetricRow:
    meaning = metric_meaning(str(metric["id"]))
    return MetricRow(
        id=str(metric["id"]), title=str(metric.get("title") or metric["id"]),
        value=fmt_number(metric.get("value")), ci=fmt_ci(metric.get("ci")),
        status=status_of(metric),
        threshold=_threshold_text(metric.get("threshold")) if "threshold" in metric else "",
        direction=meaning.direction, ideal=meaning.ideal, unit=meaning.unit,
        note=clipped_note(metric))


def _threshold_text(threshold: Any) -> str:
    if not isinstance(threshold, Mapping):
        return fmt_value(threshold)
    return ", ".join(f"{k} {threshold[k]:g}" for k in ("warn", "fail")
                     if isinstance(threshold.get(k), (int, float))) or "-"


def test_row(test: Mapping[str, Any], result: Mapping[str, Any]) -> TestRow:
    return TestRow(
        id=str(test["id"]), title=str(test.get("title") or test["id"]),
        scope=test_scope(test, result),
        statistic=fmt_number(test["statistic"]) if statistic_text(test) else "",
        estimate=fmt_number(test.get("estimate")),
        statistic_definition=str((test.get("params") or {}).get("statistic") or ""),
        p_value=fmt_pvalue(test.get("p_value")),
        p_adjusted=fmt_pvalue(test.get("p_value_adjusted")),
        alpha=fmt_value(test.get("alpha")), status=status_of(test),
        method=str(test.get("method") or "-"),
        resamples=fmt_count(test.get("n_resamples")), message=str(test.get("message") or ""))


def build_nulls(result: Mapping[str, Any], rows: Sequence[TestRow], namer: FigureNamer
                ) -> tuple[NullView, ...]:
    """One null-distribution figure per resampling test."""
    views = []
    for test, row in zip(result.get("tests") or (), rows, strict=True):
        null = test.get("null_distribution")
        if not null:
            continue
        observed = (f"Observed test statistic {row.statistic}"
                    + (f" ({row.statistic_definition})" if row.statistic_definition else "")
                    + f", estimate {row.estimate}" if row.statistic
                    else f"Observed estimate {row.estimate}")
        summary = (f"{observed}; raw p-value {row.p_value} from "
                   f"{fmt_count(len(null))} resamples; adjusted p-value {row.p_adjusted}; "
                   f"status {row.status or '-'}.")
        figure = namer.view(
            "null", f"Null distribution: {row.title}",
            alt=f"Histogram of {len(null)} resampled statistics of {row.title} with the "
                f"observed one marked. {summary}",
            caption=summary,
            data={"null": null, "statistic": test.get("statistic"), "status": row.status},
            slug=f"null-{row.id}")
        views.append(NullView(test=row, figure=figure, summary=summary))
    return tuple(views)


def build_signoff(fields: Mapping[str, str]) -> SignOffView:
    return SignOffView(name=fields.get("name") or "", role=fields.get("role") or "",
                       date=fields.get("date") or "", decision=fields.get("decision") or "")
