"""The checks of a result: every entry that carries a status and so takes part in the gate.

:func:`result_checks` is the one function that builds the flat list from a graded result
(a dict): the gate calls it once per audit and the result keeps it
(``AuditResult.checks``); every output reads that list, and a result read back from JSON
gets it from the same function. Kinds: ``metric`` (graded by a threshold), ``test``,
``threshold`` (its metric was not computed: ``SKIPPED``) and ``baseline`` (a comparison, or
a check that newly fails). ``primary`` checks gate; ``diagnostic`` tests never do
(:func:`gating` leaves them out). Each check carries, as short phrases, the facts that
explain its status (estimate, p-values, alpha; value and levels; old, new and tolerance)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from calaudit.results import fmt_delta, fmt_number, fmt_pvalue

STATUS_ORDER = ("PASS", "WARN", "FAIL", "INCONCLUSIVE", "ERROR", "SKIPPED")


@dataclass(frozen=True)
class Check:
    """One gated entry: ``value`` (estimate, value or delta), a test's raw and adjusted
    p-values, ``facts`` (phrases saying why it has its status) and its ``message``."""

    kind: str
    id: str
    status: str
    title: str = ""
    value: float | None = None
    p_value: float | None = None
    p_value_adjusted: float | None = None
    facts: tuple[str, ...] = ()
    message: str = ""
    role: str = "primary"

    @property
    def name(self) -> str:
        """``kind:id``, unique within a result."""
        return f"{self.kind}:{self.id}"

    @property
    def gates(self) -> bool:
        """Whether the check can decide the verdict (``diagnostic`` tests never do)."""
        return self.role != "diagnostic"

    @property
    def p_adjusted(self) -> float | None:
        """The adjusted p-value, or the raw one of a test that was not adjusted."""
        return self.p_value if self.p_value_adjusted is None else self.p_value_adjusted

    @property
    def detail(self) -> str:
        """The message, then the facts in parentheses (a graded metric's message alone: it
        states the value and the level): never empty for a check that has either."""
        facts = ", ".join(self.facts)
        if self.kind == "metric" and self.message:
            return self.message
        if self.message and facts:
            return f"{self.message} ({facts})"
        return self.message or facts


def result_checks(payload: Mapping[str, Any]) -> list[Check]:
    """Every check of a graded result payload, in report order: graded metrics, tests,
    thresholds on metrics not computed, baseline comparisons."""
    method = (payload.get("config") or {}).get("multiple_testing") or ""
    checks = [Check("metric", m["id"], m["status"], title=m.get("title") or m["id"],
                    value=m.get("value"), facts=metric_facts(m), message=m.get("message", ""))
              for m in payload.get("metrics", ()) if m.get("status")]
    checks += [Check("test", t["id"], t["status"], title=t.get("title") or t["id"],
                     value=t.get("estimate"), p_value=t.get("p_value"),
                     p_value_adjusted=t.get("p_value_adjusted"), facts=test_facts(t, method),
                     message=t.get("message", ""), role=t.get("role") or "primary")
               for t in payload.get("tests", ()) if t.get("status")]
    checks += [Check("threshold", entry["metric"], entry["status"],
                     title=f"threshold on {entry['metric']}", message=entry["message"])
               for entry in (payload.get("gate") or {}).get("unmatched_thresholds", ())]
    return checks + baseline_checks(payload.get("baseline"))


def baseline_checks(section: Mapping[str, Any] | None) -> list[Check]:
    """The checks of a ``baseline`` section (metric comparisons, then check transitions)."""
    if not section:
        return []
    checks = [Check("baseline", entry["label"], entry["status"],
                    title=f"{entry['label']} against the baseline", value=entry.get("delta"),
                    facts=baseline_facts(entry), message=entry.get("message", ""))
              for entry in section.get("metrics", ())]
    checks += [Check("baseline", f"{entry['kind']}:{entry['id']}", entry["status"],
                     title=f"{entry['id']} against the baseline", message=entry["message"])
               for entry in section.get("checks", ())]
    return checks


def gating(checks: Iterable[Check]) -> list[Check]:
    """The checks that decide the verdict and the exit code (diagnostics left out; results
    saved before roles existed have none, and all their checks gated)."""
    return [c for c in checks if c.gates]


def diagnostic_checks(checks: Iterable[Check]) -> list[Check]:
    """Diagnostic tests: reported with their status, never gating."""
    return [c for c in checks if not c.gates]


def failing(checks: Iterable[Check], fail_on: Iterable[str]) -> list[Check]:
    """The gating checks whose status is in ``fail_on``."""
    gate = set(fail_on)
    return [c for c in gating(checks) if c.status in gate]


def status_counts(checks: Iterable[Check]) -> dict[str, int]:
    """``{status: count}`` in the fixed status order, zero counts left out."""
    counts = Counter(c.status for c in checks)
    return {s: counts[s] for s in STATUS_ORDER if counts[s]}


# ------------------------------------------------------------------------------- facts


def test_facts(test: Mapping[str, Any], method: str = "") -> tuple[str, ...]:
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
        if test.get("family") == "monitoring":  # its own share of alpha (decision.py)
            how = f" (p x alpha/level, level {test['params']['level']:g})"
        facts.append(f"adjusted p {fmt_pvalue(test['p_value_adjusted'])}{how}")
    if test.get("alpha") is not None:
        facts.append(f"alpha {test['alpha']:g}")
    return tuple(facts)


def statistic_text(test: Mapping[str, Any]) -> str:
    """``test statistic -6.724e-05 (n/(n-1) SKCE_uq - SKCE_b)``: the number the p-value comes
    from, named by ``params.statistic``, when it is not the estimate; else ``""``."""
    statistic, estimate = test.get("statistic"), test.get("estimate")
    if statistic is None or statistic == estimate:
        return ""
    definition = (test.get("params") or {}).get("statistic")
    return f"test statistic {fmt_number(statistic)}" + (f" ({definition})" if definition
                                                          else "")


def metric_facts(metric: Mapping[str, Any]) -> tuple[str, ...]:
    """The value of a graded metric and its threshold levels."""
    facts = [f"value {fmt_number(metric.get('value'))}"]
    threshold = metric.get("threshold")
    if not isinstance(threshold, Mapping):
        return (*facts, *([f"threshold {fmt_number(threshold)}"] if threshold is not None
                          else []))
    levels = [f"{k} {threshold[k]:g}" for k in ("warn", "fail")
              if isinstance(threshold.get(k), (int, float))]
    if levels:
        better = threshold.get("better")
        if better == "target" and threshold.get("target") is not None:
            better = f"distance from {threshold['target']:g}"
        elif better in ("lower", "higher"):
            better = f"{better} is better"
        facts.append("threshold " + ", ".join(levels) + (f" ({better})" if better else ""))
    return tuple(facts)


def baseline_facts(entry: Mapping[str, Any]) -> tuple[str, ...]:
    """Old, new, delta and tolerance of a baseline comparison."""
    facts = [f"old {fmt_number(entry.get('old'))}", f"new {fmt_number(entry.get('new'))}"]
    if entry.get("delta") is not None:
        facts.append(f"delta {fmt_delta(entry['delta'])}")
    if entry.get("tolerance") is not None:
        facts.append(f"tolerance {fmt_number(entry['tolerance'])}")
    return tuple(facts)
