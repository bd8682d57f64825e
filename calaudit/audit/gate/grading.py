"""Thresholds and the data rule: the statuses of metrics, and when a PASS needs more data.

A metric with a threshold gets ``PASS``, ``WARN`` or ``FAIL`` from its levels (``ERROR`` if
not finite); a threshold whose metric was not computed is a ``SKIPPED`` check. With fewer
than ``gate.min_rows`` rows or ``gate.min_events`` events a ``PASS`` becomes
``INCONCLUSIVE``; a ``FAIL`` stays."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import Any

from calaudit import registry
from calaudit.audit.config import GateConfig, ThresholdConfig
from calaudit.results import MetricResult, Status, TestResult


def threshold_status(value: float | None, threshold: ThresholdConfig) -> tuple[Status, str]:
    """Grade one value against its levels; the message says which level decided."""
    name = threshold.metric
    if value is None or not math.isfinite(value):
        return Status.ERROR, f"{name} could not be computed (value {value!r})"
    direction = threshold.direction()
    if direction.better == "target":
        score, shown = abs(value - direction.target), f"|{name} - {direction.target:g}|"
    else:
        score, shown = float(value), name
    higher = direction.better == "higher"
    sign = "<" if higher else ">"

    def worse_than(level: float) -> bool:
        return score < level if higher else score > level

    for level, status in ((threshold.fail, Status.FAIL), (threshold.warn, Status.WARN)):
        if level is not None and worse_than(level):
            return status, f"{shown} = {score:.4g} {sign} {level:g} ({status.value.lower()} level)"
    levels = ", ".join(f"{k} {v:g}" for k, v in (("warn", threshold.warn),
                                                  ("fail", threshold.fail)) if v is not None)
    return Status.PASS, f"{shown} = {score:.4g} within {levels}"


def grade_metrics(metrics: Iterable[MetricResult], thresholds: Sequence[ThresholdConfig]
                  ) -> tuple[tuple[MetricResult, ...], tuple[dict[str, Any], ...]]:
    """Metrics with their threshold statuses, and the thresholds whose metric this audit did not
    compute (or skipped on purpose) as ``SKIPPED``."""
    metrics = tuple(metrics)
    levels = {t.metric: t for t in thresholds if t.has_levels}
    graded = []
    for metric in metrics:
        threshold = levels.get(metric.id)
        if threshold is None:
            graded.append(metric)
            continue
        direction = threshold.direction()
        public = {"warn": threshold.warn, "fail": threshold.fail, "better": direction.better,
                  "target": direction.target}
        note = str((metric.params or {}).get("note", ""))
        if not _finite(metric.value) and note.startswith("skipped"):
            status, message = Status.SKIPPED, f"threshold on {metric.id}: {note}"
        else:
            status, message = threshold_status(metric.value, threshold)
        graded.append(dataclasses.replace(metric, status=status, threshold=public,
                                          message=message))
    computed = [m.id for m in metrics]
    unmatched = tuple(
        {"metric": metric_id, "status": Status.SKIPPED.value,
         "message": f"threshold on '{metric_id}', which this audit did not compute: "
                    + (registry.metric(metric_id).condition
                       or "not computed for this data or command")}
        for metric_id in levels if metric_id not in computed)
    return tuple(graded), unmatched


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def data_rule(n: float, events: float, rule: GateConfig) -> dict[str, Any]:
    """Whether there is enough data to report a PASS, with the reason when there is not
    (weighted rows: ``n`` and ``events`` are effective sizes, docs/weights.md)."""
    reasons = []
    if n < rule.min_rows:
        reasons.append(f"{n:.4g} rows < gate.min_rows = {rule.min_rows}")
    if events < rule.min_events:
        reasons.append(f"{events:.4g} events < gate.min_events = {rule.min_events}")
    return {"min_rows": rule.min_rows, "min_events": rule.min_events, "n": n,
            "events": events, "enough_data": not reasons,
            "message": "; ".join(reasons) + ": too little data to report PASS"
            if reasons else ""}


def apply_data_rule(metrics: tuple[MetricResult, ...], tests: tuple[TestResult, ...],
                    rule: dict[str, Any]
                    ) -> tuple[tuple[MetricResult, ...], tuple[TestResult, ...]]:
    """With too little data, every ``PASS`` becomes ``INCONCLUSIVE`` (message says why)."""
    if rule["enough_data"]:
        return metrics, tests

    def demote(item):
        if item.status is not Status.PASS:
            return item
        message = f"{item.message}; {rule['message']}" if item.message else rule["message"]
        return dataclasses.replace(item, status=Status.INCONCLUSIVE, message=message)

    return tuple(demote(m) for m in metrics), tuple(demote(t) for t in tests)
