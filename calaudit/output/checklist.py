"""The one list of checks every output shows, and how it is counted in words.

It is the gate's list (:func:`calaudit.audit.gate.result_checks`): an output is handed it
(``checks``) or builds it from a payload with that same function, so ids, statuses and
counts agree everywhere. Diagnostics are shown with their status and counted apart."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from calaudit.audit.gate import Check, diagnostic_checks, gating, result_checks, status_counts


def check_lines(payload: Mapping[str, Any], checks: Iterable[Check] | None = None
                ) -> list[Check]:
    """``checks`` when given (the gate's list for this result), else the checks of
    ``payload`` (:func:`~calaudit.audit.gate.result_checks`), in gate order."""
    return result_checks(payload) if checks is None else list(checks)


def counts_sentence(lines: Sequence[Check]) -> str:
    """``"30 checks: 27 PASS, 3 FAIL"``, plus ``"; 7 diagnostic tests (do not gate): 6
    PASS, 1 FAIL"`` when there are diagnostics."""
    deciding, diagnostic = gating(lines), diagnostic_checks(lines)
    text = f"{len(deciding)} checks: {counts_text(deciding)}"
    if diagnostic:
        text += (f"; {len(diagnostic)} diagnostic test(s) (do not gate): "
                 f"{counts_text(diagnostic)}")
    return text


def counts_text(lines: Iterable[Check]) -> str:
    """``"3 FAIL, 28 PASS, 1 SKIPPED"`` in the fixed status order; ``"none"`` when empty."""
    counts = status_counts(lines)
    return ", ".join(f"{n} {status}" for status, n in counts.items()) or "none"


def fail_on_of(payload: Mapping[str, Any]) -> tuple[str, ...]:
    """The statuses that fail the gate, as the result recorded them."""
    fail_on = (payload.get("gate") or {}).get("fail_on") or \
        (payload.get("config") or {}).get("fail_on") or ("FAIL", "ERROR")
    return tuple(fail_on)
