"""The decision and its evidence in plain words: the sentences every output leads with.

Read from the JSON result only; which tests decide comes from each test's ``role`` and
``family``, never from test ids. A sentence is a tuple of :class:`Span`: text, some of it
naming a term of the :data:`GLOSSARY` (the HTML links it; plain outputs print the text)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from calaudit.audit.gate import Check, diagnostic_checks, failing
from calaudit.output.checklist import check_lines, counts_text, fail_on_of
from calaudit.output.formatting import (
    fmt_bias,
    fmt_bias_ci,
    fmt_count,
    fmt_intercepts,
    fmt_number,
    fmt_pvalue,
    fmt_size,
    weights_kind,
)


@dataclass(frozen=True)
class Span:
    """Text; ``term`` names the glossary entry it links to (``""``: none)."""

    text: str
    term: str = ""


Sentence = tuple[Span, ...]

#: The verdict in words when no sentence of :func:`decision` fits better.
HEADLINES = {
    "PASS": "No check has a status that fails the gate.",
    "FAIL": "At least one check has a status that fails the gate.",
    "ERROR": "At least one check could not run.",
    "WARN": "No check failed the gate, but some checks warn.",
    "INCONCLUSIVE": "No check failed the gate, but some checks could not decide.",
    "NO CHECKS": "Nothing was gated: this audit has no tests and no thresholds.",
}

#: The terms the first screen links to: ``anchor: (term, explanation)``. The gate's own
#: rule (``gate.rule``) is added by the reports under ``gate-rule``.
GLOSSARY: dict[str, tuple[str, str]] = {
    "global-test": (
        "global test",
        "Asks whether the predicted probabilities match the observed rates over all rows: "
        "among rows predicted at 30%, do about 30% have the event? The labels are redrawn "
        "from the model's own predictions many times to see how large a gap chance alone "
        "gives."),
    "local-test": (
        "local test",
        "Asks the same question within groups of similar rows (similar prediction and "
        "covariates), so that a model too high for one group and too low for another "
        "cannot pass by averaging out. It compares the data with labels redrawn from the "
        "predictions, as the global tests do."),
    "primary-test": (
        "primary test",
        "A test that decides the verdict. Every other test is a diagnostic: reported with "
        "its status, never deciding."),
    "adjusted-p": (
        "adjusted p-value",
        "Running several tests raises the chance that one rejects by luck. Each p-value is "
        "adjusted for the number of tests run together and compared with alpha; the "
        "method is in the gate's rule below."),
    "alpha": (
        "alpha",
        "The chance, accepted in advance, that a calibrated model fails the audit."),
    "bias": (
        "bias",
        "A group's observed rate minus its mean predicted probability: positive when the "
        "model under-predicts for the group, negative when it over-predicts."),
    "interval": (
        "interval",
        "The range of a group's bias that is compatible with the data. It holds for all "
        "groups at once (a simultaneous interval), so a group whose interval contains 0 "
        "may well have no bias at all."),
    "gatekeeping": (
        "gatekeeping",
        "A group can FAIL only when the local test has rejected: the group table looks "
        "for where a miscalibration is only once the local test has found one."),
    "diagnostic": (
        "diagnostic",
        "A test or section reported for understanding (where, how, for whom); it never "
        "decides the verdict."),
    "inconclusive": (
        "INCONCLUSIVE",
        "Too few rows or events to decide. Never a pass: treat it as not examined."),
}


def plain(sentence: Sentence) -> str:
    """The sentence as text."""
    return "".join(span.text for span in sentence)


def _s(*parts: str | Span) -> Sentence:
    return tuple(part if isinstance(part, Span) else Span(part) for part in parts)


def _join(items: Sequence[str], word: str = "and") -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {word} " + items[-1]


def _role(test: Mapping[str, Any]) -> str:
    return str(test.get("role") or "primary")


def is_local(test: Mapping[str, Any]) -> bool:
    """Whether a test of :func:`primary_tests` is a local one."""
    return test.get("family") == "local" or bool(test.get("_listed_local"))


def _with_family(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The tests, each marked local when its ``family`` says so or ``local.klce.tests``
    lists it (results written before tests carried a family)."""
    listed = set(((result.get("local") or {}).get("klce") or {}).get("tests") or ())
    return [{**t, "_listed_local": t.get("id") in listed} for t in result.get("tests") or ()]


def primary_tests(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The tests that decide the verdict (``role`` primary)."""
    return [t for t in _with_family(result) if _role(t) != "diagnostic"]


def story(result: Mapping[str, Any], lines: Sequence[Check] | None = None
          ) -> list[Sentence]:
    """The decision, then its evidence: the rejecting primary tests, how and where the model is
    off, which covariates explain it, the quiet tests, other failing checks, diagnostics."""
    lines = check_lines(result) if lines is None else lines
    fail_on = fail_on_of(result)
    primaries = [t for t in primary_tests(result) if t.get("family") != "monitoring"]
    rejecting = [t for t in primaries if t.get("status") in fail_on]
    global_fail = [t for t in rejecting if not is_local(t)]
    local_fail = [t for t in rejecting if is_local(t)]
    drift = over_time(result, fail_on)
    sentences = [decision(result, primaries, global_fail, local_fail, lines, fail_on)
                 if primaries or not drift else None, drift]
    for family, failed in (("global", global_fail), ("local", local_fail)):
        if failed:
            sentences.append(_rejects(family, failed, primaries))
    if global_fail:
        sentences += _how(result)
    if local_fail:
        sentences += _where(result)
    quiet = _not_rejecting(primaries, rejecting)
    # what explains a rejection comes with it; without one, the quiet tests come first
    sentences += _who(result) + quiet if rejecting else quiet + _who(result)
    sentences += [_s(f"{line.title} ({line.id}): {line.message or line.detail}.")
                  for line in failing(lines, fail_on) if line.kind != "test"]
    sentences += _weighted(result) + _diagnostics(lines)
    return [s for s in sentences if s]


def _weighted(result: Mapping[str, Any]) -> list[Sentence]:
    """``Weighted audit: ...`` (the kind of weights and the effective sample size), so
    that the first screen says what the numbers are of."""
    data = result.get("data") or {}
    weights = data.get("weights")
    if not weights:
        return []
    return [_s(f"Weighted audit ({weights_kind(weights)}): effective sample size "
               f"{weights['effective_sample_size']:,.0f} of {data.get('n', 0):,} rows; "
               "every estimate and test shown is weighted (what is left out is listed with "
               "the data).")]


def over_time(result: Mapping[str, Any], fail_on: Sequence[str]) -> Sentence | None:
    """The e-process of calibration over time: its alarm (the check's status) or its
    value, and the advice after an alarm."""
    section = result.get("monitoring") or {}
    e = section.get("eprocess")
    if not e:
        return None
    windows = len(section.get("windows") or ())
    if e.get("status") in fail_on:
        advice = section.get("advice") or {}
        tail = ""
        if advice.get("verdict") == "recalibrate":
            tail = (f" A logistic recalibration is enough (slope "
                    f"{fmt_number(advice.get('slope'))}; {fmt_intercepts(advice)}).")
        elif advice.get("verdict"):
            tail = f" Advice: {advice['verdict']}: {advice.get('reason', '')}"
        return _s(f"Calibration drifted over time: the e-process (calibration_eprocess) "
                  f"reached {fmt_number(e.get('threshold'))} in window "
                  f"{e.get('alarm_label')} of {windows}, an alarm whose false-alarm "
                  f"probability over every look is at most 1/{fmt_number(e.get('threshold'))}."
                  + tail)
    return _s(f"Over {windows} windows the e-process of calibration (calibration_eprocess) "
              f"reached at most {fmt_number(e.get('max_value'))}, below its alarm at "
              f"{fmt_number(e.get('threshold'))}: no drift detected.")


def decision(result: Mapping[str, Any], primaries: Sequence[Mapping[str, Any]],
             global_fail: Sequence[Mapping[str, Any]], local_fail: Sequence[Mapping[str, Any]],
             lines: Sequence[Check], fail_on: Sequence[str]) -> Sentence:
    """The verdict in one plain sentence."""
    verdict = str(result.get("verdict", "-"))
    local_ran = any(is_local(t) for t in primaries)
    if global_fail and local_fail:
        return _s("The predicted probabilities do not match the observed outcomes, "
                  "overall and within groups of similar rows.")
    if global_fail:
        return _s("The predicted probabilities do not match the observed outcomes overall.")
    if local_fail:
        return _s("The predicted probabilities are right on average but off for some "
                  "groups of similar rows.")
    if verdict in ("FAIL", "ERROR") and failing(lines, fail_on):
        return _s("A check fails the gate; no calibration test rejects.")
    if not result.get("tests") and verdict in ("PASS", "NO CHECKS"):
        return _s("No hypothesis test ran: nothing below was tested.")
    if verdict == "PASS":
        where = "overall or within groups of similar rows" if local_ran else "overall"
        return _s(f"No test finds the predicted probabilities off, {where}: the audit "
                  f"passes. Not finding a miscalibration is not proof that there is none.")
    if verdict == "INCONCLUSIVE" or any(t.get("status") == "INCONCLUSIVE" for t in primaries):
        return _s("Some tests could not decide (", Span("INCONCLUSIVE", "inconclusive"),
                  "): the audit neither passes nor finds a miscalibration.")
    return _s(HEADLINES.get(verdict, f"Verdict {verdict}."))


def _p_list(tests: Sequence[Mapping[str, Any]], key: str) -> str:
    return _join([fmt_pvalue(t.get(key)) for t in tests])


def _rejects(family: str, failed: Sequence[Mapping[str, Any]],
             primaries: Sequence[Mapping[str, Any]]) -> Sentence:
    """``2 of 2 global tests reject (ece_consistency and skce_consistency: adjusted p
    0.003 and 0.003 <= alpha 0.05; raw p 0.001 and 0.001).``"""
    total = sum(1 for t in primaries if is_local(t) == (family == "local"))
    term = "local-test" if family == "local" else "global-test"
    count = (f"The {family} test rejects" if total == 1 else
             f"{len(failed)} of {total} {family} tests reject")
    name = f"{family} test" if total == 1 else f"{family} tests"
    head, tail = count.split(name)
    alpha = failed[0].get("alpha")
    return _s(head, Span(name, term), tail,
              f" ({_join([str(t.get('id')) for t in failed])}: ", Span("adjusted p",
                                                                       "adjusted-p"),
              f" {_p_list(failed, 'p_value_adjusted')} <= ", Span("alpha", "alpha"),
              f" {fmt_number(alpha)}; raw p {_p_list(failed, 'p_value')}).")


def _metric(result: Mapping[str, Any], metric_id: str) -> float | None:
    for metric in result.get("metrics") or ():
        if metric.get("id") == metric_id and isinstance(metric.get("value"), (int, float)):
            return float(metric["value"])
    return None


def _how(result: Mapping[str, Any]) -> list[Sentence]:
    """How the model is off overall: the logistic recalibration's slope and intercept
    (binary models), read from the metrics."""
    slope = _metric(result, "calibration_slope")
    large = _metric(result, "calibration_in_the_large")
    parts = []
    if slope is not None:
        parts.append(f"calibration slope {fmt_number(slope, 3)} (1 is ideal; "
                     + ("below 1: the probabilities are too extreme)" if slope < 1 else
                        "above 1: the probabilities are too cautious)"))
    if large is not None:
        parts.append(f"calibration-in-the-large {fmt_number(large, 3)} (0 is ideal; "
                     + ("below 0: too high on average)" if large < 0 else
                        "above 0: too low on average)"))
    if not parts:
        return [_s("How: the reliability diagram shows where the probabilities and the "
                   "observed rates part.")]
    return [_s(f"How: {'; '.join(parts)}. The reliability diagram shows where.")]


def _group_phrase(group: Mapping[str, Any]) -> str:
    side = "under-predicted" if (group.get("bias") or 0.0) > 0 else "over-predicted"
    size = f"{fmt_count(group.get('n'))} rows"
    if "weight" in group:  # weighted rows: the group's weight is not a count of rows
        size = (f"weight {fmt_size(group['weight'])}, effective size "
                f"{fmt_size(group.get('effective_size'))}")
    return (f"{group.get('group')} {fmt_bias(group.get('bias'))} "
            f"{fmt_bias_ci(group.get('bias_ci'))} ({size}, {side})")


def _where(result: Mapping[str, Any], limit: int = 2) -> list[Sentence]:
    """The groups with the clearest bias (``local.lcb.top_groups``)."""
    top = list(((result.get("local") or {}).get("lcb") or {}).get("top_groups") or ())
    if not top:
        return [_s("No single group's ", Span("interval", "interval"),
                   " excludes 0: the bias is spread over groups rather than concentrated "
                   "in one.")]
    shown = "; ".join(_group_phrase(g) for g in top[:limit])
    return [_s("Where (", Span("bias", "bias"), " = observed rate - mean prediction, with "
               "its ", Span("interval", "interval"), f"): {shown}.")]


def _who(result: Mapping[str, Any]) -> list[Sentence]:
    summary = (result.get("attribution") or {}).get("summary")
    if not summary:
        return []
    return [_s("Which covariates (a ", Span("diagnostic", "diagnostic"),
               f"): {summary}.")]


def _not_rejecting(primaries: Sequence[Mapping[str, Any]],
                   rejecting: Sequence[Mapping[str, Any]]) -> list[Sentence]:
    """The primary tests that do not reject, by family, with their adjusted p-values."""
    out = []
    for family in ("global", "local"):
        quiet = [t for t in primaries if t not in rejecting and is_local(t) == (family == "local")
                 and t.get("status") == "PASS"]
        if not quiet:
            continue
        name = f"{family} test" + ("s" if len(quiet) > 1 else "")
        verb = "does" if len(quiet) == 1 else "do"
        if any(is_local(t) == (family == "local") for t in rejecting):
            # another test of the family rejects: no "all is well" reading of this one
            ids = " and ".join(str(t.get("id")) for t in quiet)
            out.append(_s("The other ", Span(name, f"{family}-test"), f" ({ids}) {verb} "
                          "not reject (", Span("adjusted p", "adjusted-p"),
                          f" {_p_list(quiet, 'p_value_adjusted')}): one test finding the "
                          "gap is enough."))
            continue
        meaning = ("on average the probabilities match the outcomes as far as "
                   f"{'it' if len(quiet) == 1 else 'they'} can tell" if family == "global"
                   else "no group of similar rows stands out")
        out.append(_s("The ", Span(name, f"{family}-test"), f" {verb} not reject (",
                      Span("adjusted p", "adjusted-p"),
                      f" {_p_list(quiet, 'p_value_adjusted')}): {meaning}."))
    return out


def _diagnostics(lines: Sequence[Check]) -> list[Sentence]:
    shown = diagnostic_checks(lines)
    if not shown:
        return []
    return [_s(f"{len(shown)} ", Span("diagnostic", "diagnostic"),
               f" test(s) are reported but do not decide: {counts_text(shown)}.")]
