"""The one list of checks every output shows: terminal, JUnit, step summary, HTML, Markdown.

:func:`check_lines` takes the checks of :func:`calaudit.audit.checks.result_checks` (the
list the verdict and the exit code are computed from) and adds, for each, the facts a
reader needs to see why it has its status, looked up in the result payload:

- test: its estimate (and its test statistic when that is another number, named by its
  definition), raw p-value, adjusted p-value (and the method), alpha;
- metric with a threshold: value and the warn/fail levels with the direction;
- baseline comparison: old, new, delta and tolerance;
- unmatched threshold: the reason it was skipped.

No output builds its own list, so ids, statuses and counts agree everywhere. A check's
``role`` (``primary`` or ``diagnostic``, when the gate records one) says whether it can
decide the verdict: diagnostics are shown everywhere with their status and counted apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from calaudit.audit.checks import Check, result_checks, status_counts
from calaudit.output.formatting import fmt_number, fmt_pvalue


@dataclass(frozen=True)
class CheckLine:
    """One check with its display facts. ``facts`` are short phrases
    (``"adjusted p 0.002 (holm)"``); ``message`` is the check's own explanation."""

    kind: str
    id: str
    status: str
    title: str
    value: float | None
    p_value: float | None
    p_adjusted: float | None
    facts: tuple[str, ...]
    message: str
    role: str = "primary"

    @property
    def gates(self) -> bool:
        """Whether the check can decide the verdict (``diagnostic`` tests never do)."""
        return self.role != "diagnostic"

    @property
    def name(self) -> str:
        """``kind:id``, as :attr:`calaudit.audit.checks.Check.name`."""
        return f"{self.kind}:{self.id}"

    @property
    def detail(self) -> str:
        """The message, then the facts in parentheses (a graded metric's message alone: it
        states the value and the level): never empty for a check that has either."""
        facts = ", ".join(self.facts)
        if self.kind == "metric" and self.message:
            return self.message  # a threshold's message states the value and the level
        if self.message and facts:
            return f"{self.message} ({facts})"
        return self.message or facts


def check_lines(payload: Mapping[str, Any], checks: Sequence[Check] | None = None
                ) -> list[CheckLine]:
    """Every check of ``payload`` (or the given ``checks``) with its facts, in gate order."""
    checks = result_checks(payload) if checks is None else checks
    tests = _queues(payload.get("tests"), "id")
    metrics = _queues(payload.get("metrics"), "id")
    baseline = payload.get("baseline") or {}
    compared = _queues(baseline.get("metrics"), "label")
    method = (payload.get("config") or {}).get("multiple_testing") or ""
    lines = []
    for check in checks:
        facts: list[str] = []
        p_raw = p_adj = None
        if check.kind == "test" and tests.get(check.id):
            entry = tests[check.id].pop(0)
            p_raw, p_adj = entry.get("p_value"), entry.get("p_value_adjusted")
            facts = test_facts(entry, method)
        elif check.kind == "metric" and metrics.get(check.id):
            facts = metric_facts(metrics[check.id].pop(0))
        elif check.kind == "baseline" and compared.get(check.id):
            facts = baseline_facts(compared[check.id].pop(0))
        elif check.value is not None:
            facts = [f"value {fmt_number(check.value)}"]
        lines.append(CheckLine(check.kind, check.id, check.status, check.title or check.id,
                               check.value, p_raw, p_adj if p_adj is not None else check.p_value,
                               tuple(facts), check.message or "",
                               getattr(check, "role", None) or "primary"))
    return lines


def gating_lines(lines: Iterable[CheckLine]) -> list[CheckLine]:
    """The checks that decide the verdict (diagnostic tests left out)."""
    return [c for c in lines if c.gates]


def diagnostic_lines(lines: Iterable[CheckLine]) -> list[CheckLine]:
    """Diagnostic tests: reported with their status, never gating."""
    return [c for c in lines if not c.gates]


def failing_lines(lines: Iterable[CheckLine], fail_on: Iterable[str]) -> list[CheckLine]:
    """The gating checks whose status is in ``fail_on``."""
    gate = set(fail_on)
    return [c for c in gating_lines(lines) if c.status in gate]


def counts_sentence(lines: Sequence[CheckLine]) -> str:
    """``"30 checks: 27 PASS, 3 FAIL"``, plus ``"; 7 diagnostic tests (do not gate): 6
    PASS, 1 FAIL"`` when there are diagnostics."""
    gating, diagnostic = gating_lines(lines), diagnostic_lines(lines)
    text = f"{len(gating)} checks: {counts_text(gating)}"
    if diagnostic:
        text += (f"; {len(diagnostic)} diagnostic test(s) (do not gate): "
                 f"{counts_text(diagnostic)}")
    return text


def _queues(entries: Iterable[Mapping[str, Any]] | None, key: str
            ) -> dict[Any, list[Mapping[str, Any]]]:
    """Entries by id, in order (an id may repeat: each check takes the next entry)."""
    found: dict[Any, list[Mapping[str, Any]]] = {}
    for entry in entries or ():
        if entry.get("status"):
            found.setdefault(entry.get(key), []).append(entry)
    return found


def test_facts(test: Mapping[str, Any], method: str = "") -> list[str]:
    """The estimate, the test statistic when it is another number
    (:func:`statistic_text`), raw and adjusted p-values and alpha of a test entry."""
    facts = []
    if test.get("estimate") is not None:
        facts.append(f"estimate {fmt_number(test['estimate'])}")
    if statistic_text(test):
        facts.append(statistic_text(test))
    if test.get("p_value") is not None:
        facts.append(f"p {fmt_pvalue(test['p_value'])}")
    if test.get("p_value_adjusted") is not None:
        how = f" ({method})" if method else ""
        facts.append(f"adjusted p {fmt_pvalue(test['p_value_adjusted'])}{how}")
    if test.get("alpha") is not None:
        facts.append(f"alpha {test['alpha']:g}")
    return facts


def statistic_text(test: Mapping[str, Any]) -> str:
    """``test statistic -6.724e-05 (n/(n-1) SKCE_uq - SKCE_b)``: the number the p-value
    is computed from, named by its definition (``params.statistic``), when it is not the
    test's estimate; ``""`` when it is (every output shows one number per test, the
    estimate, and this phrase where the statistic differs)."""
    statistic, estimate = test.get("statistic"), test.get("estimate")
    if statistic is None or statistic == estimate:
        return ""
    definition = (test.get("params") or {}).get("statistic")
    return f"test statistic {fmt_number(statistic)}" + (f" ({definition})" if definition
                                                          else "")


def metric_facts(metric: Mapping[str, Any]) -> list[str]:
    """The value of a graded metric and its threshold levels."""
    facts = [f"value {fmt_number(metric.get('value'))}"]
    threshold = metric.get("threshold")
    if not isinstance(threshold, Mapping):
        return facts + ([f"threshold {fmt_number(threshold)}"] if threshold is not None else [])
    levels = [f"{k} {threshold[k]:g}" for k in ("warn", "fail")
              if isinstance(threshold.get(k), (int, float))]
    if levels:
        better = threshold.get("better")
        if better == "target" and threshold.get("target") is not None:
            better = f"distance from {threshold['target']:g}"
        elif better in ("lower", "higher"):
            better = f"{better} is better"
        facts.append("threshold " + ", ".join(levels) + (f" ({better})" if better else ""))
    return facts


def baseline_facts(entry: Mapping[str, Any]) -> list[str]:
    """Old, new, delta and tolerance of a baseline comparison."""
    facts = [f"old {fmt_number(entry.get('old'))}", f"new {fmt_number(entry.get('new'))}"]
    if entry.get("delta") is not None:
        facts.append(f"delta {_signed(entry['delta'])}")
    if entry.get("tolerance") is not None:
        facts.append(f"tolerance {fmt_number(entry['tolerance'])}")
    return facts


def _signed(value: float) -> str:
    text = fmt_number(value)
    return f"+{text}" if value > 0 else text


def counts_text(lines: Iterable[CheckLine | Check]) -> str:
    """``"3 FAIL, 28 PASS, 1 SKIPPED"`` in the fixed status order; ``"none"`` when empty."""
    counts = status_counts(lines)  # type: ignore[arg-type]
    return ", ".join(f"{n} {status}" for status, n in counts.items()) or "none"


def fail_on_of(payload: Mapping[str, Any]) -> tuple[str, ...]:
    """The statuses that fail the gate, as the result recorded them."""
    fail_on = (payload.get("gate") or {}).get("fail_on") or \
        (payload.get("config") or {}).get("fail_on") or ("FAIL", "ERROR")
    return tuple(fail_on)
