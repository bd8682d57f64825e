"""The checks of a result: every entry that carries a status and so takes part in the gate.

One flat list built from the JSON payload (a dict), so the verdict, the exit code, JUnit,
the GitHub step summary and the annotations all see the same checks:

- ``metric``: a metric graded by a threshold (``metrics[]`` with a ``status``);
- ``test``: a hypothesis test (``tests[]``);
- ``threshold``: a threshold whose metric this audit did not compute (``SKIPPED``);
- ``baseline``: a metric compared with the baseline, or a check that newly fails.

Metrics without a threshold are estimates, not checks. Each check has a ``role``:
``primary`` checks gate (graded metrics, primary tests, thresholds, baseline comparisons);
``diagnostic`` tests are reported and never gate (:func:`gating` leaves them out).
Standard library only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

STATUS_ORDER = ("PASS", "WARN", "FAIL", "INCONCLUSIVE", "ERROR", "SKIPPED")


@dataclass(frozen=True)
class Check:
    """One gated entry. ``value`` is the estimate (metrics, tests) or the delta (baseline);
    ``p_value`` the adjusted p-value when there is one."""

    kind: str
    id: str
    status: str
    title: str = ""
    value: float | None = None
    p_value: float | None = None
    message: str = ""
    role: str = "primary"

    @property
    def name(self) -> str:
        """``kind:id``, unique within a result."""
        return f"{self.kind}:{self.id}"


def result_checks(payload: Mapping[str, Any]) -> list[Check]:
    """Every check of a result payload, in report order."""
    checks = [_metric_check(m) for m in payload.get("metrics", ()) if m.get("status")]
    checks += [_test_check(t) for t in payload.get("tests", ()) if t.get("status")]
    for entry in (payload.get("gate") or {}).get("unmatched_thresholds", ()):
        checks.append(Check("threshold", entry["metric"], entry["status"],
                            title=f"threshold on {entry['metric']}", message=entry["message"]))
    checks += baseline_checks(payload.get("baseline"))
    return checks


def baseline_checks(section: Mapping[str, Any] | None) -> list[Check]:
    """The checks of a ``baseline`` section (metric comparisons, then check transitions)."""
    if not section:
        return []
    checks = [Check("baseline", entry["label"], entry["status"],
                    title=f"{entry['label']} against the baseline", value=entry.get("delta"),
                    message=entry.get("message", ""))
              for entry in section.get("metrics", ())]
    checks += [Check("baseline", f"{entry['kind']}:{entry['id']}", entry["status"],
                     title=f"{entry['id']} against the baseline", message=entry["message"])
               for entry in section.get("checks", ())]
    return checks


def _metric_check(metric: Mapping[str, Any]) -> Check:
    return Check("metric", metric["id"], metric["status"], title=metric.get("title", ""),
                 value=metric.get("value"), message=metric.get("message", ""))


def _test_check(test: Mapping[str, Any]) -> Check:
    p = test.get("p_value_adjusted")
    return Check("test", test["id"], test["status"], title=test.get("title", ""),
                 value=test.get("estimate"), p_value=p if p is not None else test.get("p_value"),
                 message=test.get("message", ""), role=test.get("role") or "primary")


def gating(checks: Iterable[Check]) -> list[Check]:
    """The checks that decide the verdict and the exit code (diagnostics left out; results
    saved before roles existed have none, and all their checks gated)."""
    return [c for c in checks if c.role != "diagnostic"]


def status_counts(checks: Iterable[Check]) -> dict[str, int]:
    """``{status: count}`` in the fixed status order, zero counts left out."""
    counts = Counter(c.status for c in checks)
    return {s: counts[s] for s in STATUS_ORDER if counts[s]}


def failing(checks: Iterable[Check], fail_on: Iterable[str]) -> list[Check]:
    """The gating checks whose status is in ``fail_on``."""
    gate = set(fail_on)
    return [c for c in gating(checks) if c.status in gate]
