"""Comparing a result with a baseline result (``--baseline OLD.json``, ``calaudit compare``).

Results with different classes cannot be compared (:class:`InputError`). Metrics pair by id
(and by settings when an id repeats); one regresses when worse, in its direction, by more
than its tolerance (:func:`tolerance_for`), and, with ``require_ci_separation``, its
intervals do not overlap. A metric without a direction is ``informational``; one computed
with other settings is not compared (``ERROR``, or ``WARN`` with ``on_mismatch = "warn"``).
A check newly in ``fail_on`` regresses; ``config_differences`` lists settings that differ."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calaudit import registry
from calaudit.audit.config import AuditConfig, BaselineConfig
from calaudit.audit.gate.checks import Check, gating, result_checks
from calaudit.data.result_file import read_result_file
from calaudit.exceptions import InputError
from calaudit.registry import Direction
from calaudit.results import jsonable

# Settings that decide the gate, not the numbers: differences are not worth a note.
GATE_ONLY_KEYS = ("fail_on", "exit_zero", "thresholds", "baseline", "gate")


@dataclass(frozen=True)
class LoadedResult:
    """A JSON result read from disk."""

    payload: Mapping[str, Any]
    path: str | None = None
    sha256: str | None = None


def read_result(path: str | Path) -> LoadedResult:
    """Read and check a calaudit JSON result (the one schema check of
    :mod:`calaudit.data.result_file`); :class:`~calaudit.exceptions.InputError` if it is not one."""
    payload, raw = read_result_file(path)
    return LoadedResult(payload, str(path), hashlib.sha256(raw).hexdigest())


def check_comparable(before: Mapping[str, Any], classes: Sequence[Any] | None,
                     source: str | None = None) -> None:
    """:class:`InputError` when the baseline cannot be compared with a result on
    ``classes``: it is a comparison file, or its classes differ."""
    if before.get("kind") == "comparison":
        raise InputError("is the output of calaudit compare, not an audit result",
                         source=source, rule="baseline",
                         hint="compare against the JSON written by calaudit test")
    old_classes = (before.get("data") or {}).get("classes")
    if old_classes is not None and classes is not None and list(old_classes) != list(classes):
        raise InputError(f"classes differ: {list(old_classes)} in the baseline vs "
                         f"{list(classes)}; results of different models' label sets cannot "
                         "be compared", source=source, rule="baseline")


def compare_results(old: LoadedResult | Mapping[str, Any], new: Mapping[str, Any],
                    config: AuditConfig, checks: Sequence[Check] | None = None
                    ) -> dict[str, Any]:
    """The ``baseline`` section: per-metric deltas, check transitions, config differences.
    ``checks``: the new result's checks when the caller has built them (else built from
    ``new`` by :func:`~calaudit.audit.gate.result_checks`)."""
    loaded = old if isinstance(old, LoadedResult) else LoadedResult(old)
    before, rules = loaded.payload, config.baseline
    check_comparable(before, (new.get("data") or {}).get("classes"), loaded.path)
    compared, informational = [], []
    for label, a, b in pair_metrics(before.get("metrics", ()), new.get("metrics", ()),
                                    rules.ignore_params):
        metric_id = (b or a)["id"]
        if metric_direction(metric_id, config) is None:
            informational.append({"id": metric_id, "label": label,
                                  "old": a.get("value") if a else None,
                                  "new": b.get("value") if b else None})
            continue
        compared.append(_compare_metric(label, a, b, config, before, new))
    transitions = check_transitions(result_checks(before),
                                    result_checks(new) if checks is None else checks,
                                    config.fail_on)
    statuses = [e["status"] for e in compared + transitions]
    return {
        "path": loaded.path,
        "sha256": loaded.sha256,
        "calaudit_version": before.get("calaudit_version"),
        "created_at": before.get("created_at"),
        "tolerance": rules.tolerance,
        "relative_tolerance": rules.relative_tolerance,
        "require_ci_separation": rules.require_ci_separation,
        "on_mismatch": rules.on_mismatch,
        "metrics": compared,
        "informational": informational,
        "checks": transitions,
        "config_differences": config_differences(before.get("config") or {},
                                                 new.get("config") or {}),
        "regressions": sum(1 for s in statuses if s == "FAIL"),
        "status": _worst(statuses),
    }


def _worst(statuses: Sequence[str]) -> str:
    for status in ("FAIL", "ERROR", "WARN"):
        if status in statuses:
            return status
    return "PASS"


def comparable_params(params: Any, ignore: Sequence[str]) -> Any:
    """``params`` without float values (data-derived: bandwidths, gammas) and ignored keys."""
    if isinstance(params, Mapping):
        return {k: comparable_params(v, ignore) for k, v in sorted(params.items())
                if k not in ignore and not isinstance(v, float)}
    if isinstance(params, list):
        return [comparable_params(v, ignore) for v in params if not isinstance(v, float)]
    return params


def pair_metrics(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]],
                 ignore: Sequence[str]) -> list[tuple[str, Any, Any]]:
    """``(label, old_metric | None, new_metric | None)`` in the new result's order; an id present
    several times on a side pairs by its comparable params, named in the label."""
    pairs: list[tuple[str, Any, Any]] = []
    ids = list(dict.fromkeys([m["id"] for m in new] + [m["id"] for m in old]))
    for metric_id in ids:
        olds = [m for m in old if m["id"] == metric_id]
        news = [m for m in new if m["id"] == metric_id]
        if len(olds) <= 1 and len(news) <= 1:
            pairs.append((metric_id, olds[0] if olds else None, news[0] if news else None))
            continue
        keyed_old = {_key(m, ignore): m for m in olds}
        keyed_new = {_key(m, ignore): m for m in news}
        for key in dict.fromkeys([*keyed_new, *keyed_old]):
            settings = ", ".join(f"{k}={v}" for k, v in json.loads(key).items())
            pairs.append((f"{metric_id}[{settings}]", keyed_old.get(key), keyed_new.get(key)))
    return pairs


def _key(metric: Mapping[str, Any], ignore: Sequence[str]) -> str:
    return json.dumps(comparable_params(metric.get("params") or {}, ignore), sort_keys=True)


def metric_direction(metric_id: str, config: AuditConfig) -> Direction | None:
    """An explicit ``better``/``target`` of the metric's threshold, else the registry."""
    threshold = config.threshold(metric_id)
    if threshold is not None and (threshold.target is not None or threshold.better != "auto"):
        return threshold.direction()
    entry = registry.metric(metric_id)
    return None if entry is None else entry.direction


def _compare_metric(label: str, old: Any, new: Any, config: AuditConfig,
                    before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    metric_id = (new or old)["id"]
    direction = metric_direction(metric_id, config)
    rules = config.baseline
    entry: dict[str, Any] = {
        "id": metric_id, "label": label,
        "better": direction.better if direction else None,
        "target": direction.target if direction else None,
        "old": old.get("value") if old else None, "new": new.get("value") if new else None,
        "delta": None, "worse_by": None, "tolerance": None,
    }
    if old is None or new is None:
        where = "the baseline" if old is None else "the new result"
        return {**entry, "status": "SKIPPED", "message": f"not in {where}"}
    if entry["old"] is not None and entry["new"] is not None:
        entry["delta"] = entry["new"] - entry["old"]
    differences = _param_differences(old, new, rules.ignore_params)
    if differences:
        status = "ERROR" if rules.on_mismatch == "error" else "WARN"
        return {**entry, "status": status, "message": f"not compared: {differences}"}
    if entry["new"] is None:
        return {**entry, "status": "ERROR", "message": "the new value is not finite"}
    if entry["old"] is None:
        return {**entry, "status": "SKIPPED", "message": "the baseline value is not finite"}
    tolerance, rule = tolerance_for(metric_id, entry["old"], config, before, after)
    entry["tolerance_rule"] = rule
    return _grade_change(entry, old, new, direction, tolerance, rules)


def estimate_sd(payload: Mapping[str, Any], test_id: str | None) -> float | None:
    """Standard deviation of an estimate under calibration, from the test ``test_id`` of a
    result: its null distribution's sd, or its ``params.stderr``; ``None`` if absent."""
    if test_id is None:
        return None
    test = next((t for t in payload.get("tests", ()) if t.get("id") == test_id), None)
    if test is None:
        return None
    null = [v for v in (test.get("null_distribution") or ()) if v is not None]
    if len(null) >= 2:
        mean = sum(null) / len(null)
        return (sum((v - mean) ** 2 for v in null) / (len(null) - 1)) ** 0.5
    stderr = (test.get("params") or {}).get("stderr")
    return float(stderr) if isinstance(stderr, (int, float)) else None


def tolerance_for(metric_id: str, old_value: float, config: AuditConfig,
                  before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[float, str]:
    """Allowed worsening of one metric and how it was set: ``[thresholds.<id>] tolerance``, else
    ``max(baseline.tolerance, relative_tolerance * |old|)``, else the registry's default
    ``max(absolute, relative * |old|, 2 sqrt(sd_old^2 + sd_new^2))`` (the sd term when both
    results carry the estimate's sampling sd)."""
    rules = config.baseline
    threshold = config.threshold(metric_id)
    if threshold is not None and threshold.tolerance is not None:
        return threshold.tolerance, f"[thresholds.{metric_id}] tolerance"
    if rules.tolerance is not None:
        return (max(rules.tolerance, rules.relative_tolerance * abs(old_value)),
                "max(baseline.tolerance, baseline.relative_tolerance x |old|)")
    entry = registry.metric(metric_id)
    default = entry.tolerance if entry else registry.PROBABILITY_SCALE
    parts = {"absolute": default.absolute, "relative": default.relative * abs(old_value)}
    sd_old, sd_new = estimate_sd(before, default.noise_test), estimate_sd(
        after, default.noise_test)
    if sd_old is not None and sd_new is not None:
        parts["noise"] = 2.0 * (sd_old ** 2 + sd_new ** 2) ** 0.5
    words = [f"{default.absolute:g}" if default.absolute else "",
             f"{default.relative:g} x |old|" if default.relative else "",
             f"2 sd of the difference ({default.noise_test})" if "noise" in parts else ""]
    return max(parts.values()), "default: max(" + ", ".join(w for w in words if w) + ")"


def _grade_change(entry: dict[str, Any], old: Mapping[str, Any], new: Mapping[str, Any],
                  direction: Direction, tolerance: float,
                  rules: BaselineConfig) -> dict[str, Any]:
    before, after = entry["old"], entry["new"]
    if direction.better == "target":
        worse_by = abs(after - direction.target) - abs(before - direction.target)
    elif direction.better == "higher":
        worse_by = before - after
    else:
        worse_by = after - before
    entry.update(worse_by=worse_by, tolerance=tolerance)
    regression = worse_by > tolerance * (1 + 1e-12) + 1e-15
    if regression and rules.require_ci_separation and direction.better != "target":
        old_ci, new_ci = old.get("ci"), new.get("ci")
        if old_ci and new_ci and None not in (*old_ci, *new_ci):
            separated = (new_ci[0] > old_ci[1] if direction.better == "lower"
                         else new_ci[1] < old_ci[0])
            if not separated:
                return {**entry, "status": "PASS",
                        "message": f"worse by {worse_by:.4g} but the confidence intervals "
                                   "overlap"}
    if regression:
        return {**entry, "status": "FAIL",
                "message": f"regression: worse by {worse_by:.4g} > tolerance {tolerance:.4g}"}
    if worse_by > 0:
        return {**entry, "status": "PASS",
                "message": f"worse by {worse_by:.4g}, within tolerance {tolerance:.4g}"}
    return {**entry, "status": "PASS",
            "message": "unchanged" if worse_by == 0 else f"better by {-worse_by:.4g}"}


def _param_differences(old: Mapping[str, Any], new: Mapping[str, Any],
                       ignore: Sequence[str]) -> str:
    a = comparable_params(old.get("params") or {}, ignore)
    b = comparable_params(new.get("params") or {}, ignore)
    keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
    return "settings differ: " + ", ".join(
        f"{k} {a.get(k, '(absent)')!r} -> {b.get(k, '(absent)')!r}" for k in keys) if keys else ""


def check_transitions(before: Sequence[Check], after: Sequence[Check],
                      fail_on: Sequence[str]) -> list[dict[str, Any]]:
    """Gating metric and test checks (diagnostic tests left out) that newly have a status
    in ``fail_on`` (``FAIL``) or no longer do (``PASS``)."""
    gate = set(fail_on)
    old = {c.name: c.status for c in gating(before) if c.kind in ("metric", "test")}
    out = []
    for check in gating(after):
        if check.kind not in ("metric", "test"):
            continue
        was = old.get(check.name)
        entry = {"kind": check.kind, "id": check.id, "old_status": was,
                 "new_status": check.status}
        if check.status in gate and (was is None or was not in gate):
            detail = f"{was} -> {check.status}" if was else f"not in the baseline, {check.status}"
            out.append({**entry, "status": "FAIL", "message": f"newly failing: {detail}"})
        elif was in gate and check.status not in gate:
            out.append({**entry, "status": "PASS", "message": f"fixed: {was} -> {check.status}"})
    return out


def config_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Settings (dotted keys) whose values differ, gate-only settings aside (compared as
    JSON values, so a tuple in memory equals the list read back from a file)."""
    a, b = _flatten(jsonable(old)), _flatten(jsonable(new))
    return [{"key": k, "old": a.get(k), "new": b.get(k)}
            for k in sorted(set(a) | set(b))
            if a.get(k) != b.get(k) and k.split(".")[0] not in GATE_ONLY_KEYS]


def _flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out
