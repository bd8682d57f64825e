"""View model of a comparison result (``calaudit compare --json``, ``kind = "comparison"``):
the two results, the verdict, the one check list and the baseline deltas."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from calaudit.output.checklist import check_lines, counts_sentence, fail_on_of
from calaudit.report import notes
from calaudit.report.gate_context import build_baseline, build_verdict, check_views
from calaudit.report.views import BaselineView, CheckRow, KeyValue, SignOffView, VerdictView


@dataclass(frozen=True)
class ComparisonContext:
    title: str
    subtitle: str
    created_at: str
    calaudit_version: str
    verdict: VerdictView
    results: tuple[tuple[str, tuple[KeyValue, ...]], ...]
    checks: tuple[CheckRow, ...]
    check_counts: str
    baseline: BaselineView | None
    provenance: tuple[KeyValue, ...]
    signoff: SignOffView
    how_to_read: Mapping[str, str]
    fail_on: str = "FAIL, ERROR"


def is_comparison(result: Mapping[str, Any]) -> bool:
    return result.get("kind") == "comparison"


def _describe(entry: Mapping[str, Any] | None) -> tuple[KeyValue, ...]:
    entry = entry or {}
    return tuple(KeyValue(key, str(entry.get(key) or "-"))
                 for key in ("path", "sha256", "created_at", "calaudit_version", "verdict"))


def build_comparison(result: Mapping[str, Any], signoff: Mapping[str, str] | None = None,
                     source: Mapping[str, str] | None = None) -> ComparisonContext:
    from calaudit.report.context import build_signoff, provenance

    lines = check_lines(result)
    old, new = result.get("old") or {}, result.get("new") or {}
    return ComparisonContext(
        title="Calibration audit comparison",
        subtitle=f"{new.get('path') or 'candidate'} against {old.get('path') or 'baseline'}, "
                 f"compared {result.get('created_at', '-')}",
        created_at=str(result.get("created_at", "-")),
        calaudit_version=str(result.get("calaudit_version", "-")),
        verdict=build_verdict(result, lines),
        results=(("baseline (old)", _describe(old)), ("candidate (new)", _describe(new))),
        checks=check_views(lines), check_counts=counts_sentence(lines),
        baseline=build_baseline(result.get("baseline")), provenance=provenance(source),
        signoff=build_signoff(signoff or {}),
        how_to_read=notes.how_to_read(result.get("config") or {}),
        fail_on=", ".join(fail_on_of(result)))
