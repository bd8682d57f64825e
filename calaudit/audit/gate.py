"""Statuses, the verdict and the exit code (design notes 2.4).

Pending tests (status ``None``) are adjusted together across the battery with the
configured method and get ``FAIL`` when the adjusted p-value is at most ``alpha``,
``PASS`` otherwise. Tests that decided their own status (``INCONCLUSIVE``, ``ERROR``,
``SKIPPED``) keep it and take no part in the adjustment.
"""

from __future__ import annotations

import dataclasses
import math
from enum import IntEnum
from typing import Iterable

from calaudit.inference.multitest import adjust_pvalues
from calaudit.results import Status, TestResult


class ExitCode(IntEnum):
    """Process exit codes (design notes 2.4)."""

    OK = 0
    GATE_FAILED = 1
    USAGE_ERROR = 2
    INTERNAL_ERROR = 3
    INTERRUPTED = 130


def grade_tests(tests: Iterable[TestResult], alpha: float, method: str) -> tuple[TestResult, ...]:
    """Adjust the pending tests' p-values and set ``alpha``, ``p_value_adjusted``, ``status``."""
    tests = tuple(tests)
    pending = [i for i, t in enumerate(tests) if t.status is None and math.isfinite(t.p_value)]
    adjusted = adjust_pvalues([tests[i].p_value for i in pending], method)
    graded = list(tests)
    for i, p_adj in zip(pending, adjusted):
        status = Status.FAIL if p_adj <= alpha else Status.PASS
        graded[i] = dataclasses.replace(tests[i], alpha=alpha, p_value_adjusted=float(p_adj),
                                        status=status)
    for i, test in enumerate(graded):
        if test.status is None:
            graded[i] = dataclasses.replace(test, alpha=alpha, status=Status.ERROR,
                                            message=test.message or "p-value is not finite")
    return tuple(graded)


def verdict(statuses: Iterable[Status], fail_on: Iterable[str]) -> Status:
    """``FAIL`` if any status is in ``fail_on``; else the most serious of ``WARN``,
    ``INCONCLUSIVE``; else ``PASS``."""
    seen = set(statuses)
    failing = {Status(s) for s in fail_on}
    if seen & failing:
        return Status.FAIL
    for status in (Status.ERROR, Status.WARN, Status.INCONCLUSIVE):
        if status in seen:
            return status
    return Status.PASS


def exit_code(statuses: Iterable[Status], fail_on: Iterable[str], exit_zero: bool = False
              ) -> ExitCode:
    """0 when no status is in ``fail_on`` (or ``exit_zero``), 1 otherwise."""
    if exit_zero:
        return ExitCode.OK
    failing = {Status(s) for s in fail_on}
    return ExitCode.GATE_FAILED if set(statuses) & failing else ExitCode.OK
