"""What the gate makes of one audit: the graded entries, the checks (built once), the
verdict, the result's ``gate`` section and the exit code.

Verdict over the gating checks: ``FAIL`` if any status is in ``fail_on`` (exit 1 unless
``exit_zero``); else the most serious of ``ERROR``, ``WARN``, ``INCONCLUSIVE``; else
``PASS``; ``NO CHECKS`` when nothing was graded."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from calaudit.audit.config import AuditConfig
from calaudit.audit.gate.baseline import LoadedResult, compare_results
from calaudit.audit.gate.checks import (
    Check,
    baseline_checks,
    failing,
    gating,
    result_checks,
    status_counts,
)
from calaudit.audit.gate.decision import GATE_RULE, gate_groups, grade_tests, groups_test
from calaudit.audit.gate.grading import apply_data_rule, data_rule, grade_metrics
from calaudit.results import MetricResult, Status, TestResult


class ExitCode(IntEnum):
    """Process exit codes."""

    OK = 0
    GATE_FAILED = 1
    USAGE_ERROR = 2
    INTERNAL_ERROR = 3
    INTERRUPTED = 130
    TERMINATED = 143


@dataclass(frozen=True)
class Decision:
    """The graded metrics, tests and groups of one audit, its checks, its verdict and the
    ``gate`` and ``baseline`` sections of its result."""

    metrics: tuple[MetricResult, ...]
    tests: tuple[TestResult, ...]
    groups: tuple[dict[str, Any], ...]
    checks: tuple[Check, ...]
    verdict: Status
    gate: dict[str, Any]
    baseline: dict[str, Any] | None = None


def decide(metrics: Iterable[MetricResult], tests: Iterable[TestResult],
           groups: Sequence[dict[str, Any]], config: AuditConfig,
           sections: Mapping[str, Any], events: float,
           baseline: LoadedResult | Mapping[str, Any] | None = None) -> Decision:
    """Grade one audit and build its checks, once: the tests (with
    :func:`~calaudit.audit.gate.decision.groups_test` as the local primary when no local test
    ran), the groups, the metrics, the data rule, then the comparison with ``baseline``.
    ``sections`` holds the result's ``config`` and ``data`` sections."""
    tests = list(tests)
    if config.run_tests and not any(t.family == "local" for t in tests):
        substitute = groups_test(groups)
        if substitute is not None:
            tests.append(substitute)
    graded_tests = grade_tests(tests, config.alpha, config.multiple_testing,
                               config.multiple_testing_scope)
    gated_groups = gate_groups(groups, graded_tests, config.alpha)
    graded_metrics, unmatched = grade_metrics(metrics, config.thresholds)
    data = sections["data"]
    rule = data_rule(data["weights"]["sample_size"] if "weights" in data else data["n"],
                     events, config.gate)
    graded_metrics, graded_tests = apply_data_rule(graded_metrics, graded_tests, rule)
    graded = {**sections, "metrics": [m.to_dict() for m in graded_metrics],
              "tests": [t.to_dict() for t in graded_tests],
              "gate": {"unmatched_thresholds": list(unmatched)}}
    checks = result_checks(graded)
    section = None
    if baseline is not None:
        section = compare_results(baseline, graded, config, checks)
        checks += baseline_checks(section)
    return Decision(graded_metrics, graded_tests, gated_groups, tuple(checks),
                    verdict((c.status for c in gating(checks)), config.fail_on),
                    describe_gate(checks, config, rule, unmatched, graded_tests), section)


def gate_counts(checks: Sequence[Check], fail_on: Iterable[str]) -> dict[str, Any]:
    """``counts`` and ``failing`` over the gating checks."""
    deciding = gating(checks)
    return {"counts": status_counts(deciding),
            "failing": [{"kind": c.kind, "id": c.id, "status": c.status}
                        for c in failing(deciding, fail_on)]}


def describe_gate(checks: Sequence[Check], config: AuditConfig, rule: dict[str, Any],
                  unmatched: Sequence[dict[str, Any]],
                  tests: Sequence[TestResult] = ()) -> dict[str, Any]:
    """The ``gate`` section of the JSON result: ``counts`` and ``failing`` over the gating
    checks, ``diagnostic_counts`` over the diagnostic tests, the rule in words."""
    counted = gate_counts(checks, config.fail_on)
    return {
        "fail_on": list(config.fail_on),
        "exit_zero": config.exit_zero,
        "counts": counted["counts"],
        "diagnostic_counts": status_counts(c for c in checks if not c.gates),
        "failing": counted["failing"],
        "primary_tests": [t.id for t in tests if t.role == "primary"],
        "scope": config.multiple_testing_scope,
        "rule": GATE_RULE,
        "data_rule": rule,
        "unmatched_thresholds": list(unmatched),
    }


def verdict(statuses: Iterable[Status | str], fail_on: Iterable[str]) -> Status:
    """``FAIL`` if any status is in ``fail_on``; else the most serious of ``ERROR``,
    ``WARN``, ``INCONCLUSIVE``; else ``PASS``; ``NO CHECKS`` when there is no status.
    Pass the statuses of the gating checks only (:func:`~calaudit.audit.gate.gating`)."""
    seen = {Status(s) for s in statuses}
    failing_statuses = {Status(s) for s in fail_on}
    if not seen:
        return Status.NO_CHECKS
    if seen & failing_statuses:
        return Status.FAIL
    for status in (Status.ERROR, Status.WARN, Status.INCONCLUSIVE):
        if status in seen:
            return status
    return Status.PASS


def exit_code(statuses: Iterable[Status | str], fail_on: Iterable[str],
              exit_zero: bool = False) -> ExitCode:
    """0 when no status is in ``fail_on`` (or ``exit_zero``), 1 otherwise."""
    if exit_zero:
        return ExitCode.OK
    failing_statuses = {Status(s) for s in fail_on}
    seen = {Status(s) for s in statuses}
    return ExitCode.GATE_FAILED if seen & failing_statuses else ExitCode.OK
