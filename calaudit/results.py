"""Result objects: pure data, serialisable to the JSON result (``to_dict``: JSON builtins
only, non-finite floats as ``null``). :func:`fmt_number` and :func:`fmt_pvalue` write a
result's numbers as every output does."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from calaudit import display

SCHEMA_VERSION = 1


class Status(str, Enum):
    """Status of one check."""

    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"
    ERROR = "ERROR"
    SKIPPED = "SKIPPED"
    #: Verdict only (never a check's status): the run graded nothing (``calaudit metrics``).
    NO_CHECKS = "NO CHECKS"

    def __str__(self) -> str:
        """The bare status, ``"FAIL"`` (not ``"Status.FAIL"``), as printed everywhere."""
        return self.value

    __format__ = str.__format__


def lookup(items, wanted: str, kind: str):
    """The first item whose ``id`` is ``wanted``; a ``KeyError`` listing the valid ids."""
    for item in items:
        if item.id == wanted:
            return item
    ids = list(dict.fromkeys(item.id for item in items))
    raise KeyError(f"no {kind} {wanted!r} in this result; valid ids: "
                   + (", ".join(ids) if ids else "none"))


def jsonable(value: Any) -> Any:
    """Convert results, numpy values and containers to JSON builtins."""
    if hasattr(value, "to_dict") and not isinstance(value, type):
        return jsonable(value.to_dict())
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if dataclasses.is_dataclass(value):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def fmt_number(value: float | None, digits: int = 4) -> str:
    """A number with ``digits`` significant digits; ``-`` for missing."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.{digits}g}"


def fmt_delta(value: float | None) -> str:
    """A difference as :func:`fmt_number` writes it, ``+`` before a positive one."""
    text = fmt_number(value)
    return f"+{text}" if isinstance(value, (int, float)) and value > 0 else text


def fmt_pvalue(value: float | None) -> str:
    """A p-value that never prints as 0: ``< 0.001`` below 0.001."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if value < 0.001:
        return "< 0.001"
    return f"{value:.3f}"


@dataclass(frozen=True)
class MetricResult:
    """One calibration-error estimate: ``ci`` is ``(low, high)`` or ``None``, ``params`` every
    setting that determines the number, ``title`` a human name. ``status``, ``threshold`` and
    ``message`` are set by the gate when a threshold applies (else left out of the JSON)."""

    id: str
    value: float
    params: Mapping[str, Any] = field(default_factory=dict)
    ci: tuple[float, float] | None = None
    title: str = ""
    status: Status | None = None
    threshold: Mapping[str, Any] | None = None
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "title": self.title,
            "value": jsonable(self.value),
            "ci": None if self.ci is None else jsonable(list(self.ci)),
            "params": jsonable(self.params),
        }
        if self.status is not None:
            out.update(status=self.status.value, threshold=jsonable(self.threshold),
                       message=self.message)
        return out


@dataclass(frozen=True)
class TestResult:
    """One hypothesis test of "the model is calibrated" (scipy's result model:
    ``statistic, p_value = result``; ``pvalue`` is an alias).

    ``estimate``: the calibration-error estimate behind it. ``status`` is ``None`` until the
    gate grades it (setting ``alpha`` and ``p_value_adjusted``), unless the test decided
    ``INCONCLUSIVE``, ``ERROR`` or ``SKIPPED`` itself (``message`` says why).
    ``null_distribution``: the resampled statistics; ``family``: the null it is about
    (``global`` or ``local``), within which p-values are adjusted by default."""

    __test__ = False  # not a pytest test class

    id: str
    statistic: float
    estimate: float
    p_value: float
    method: str
    n_resamples: int | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    status: Status | None = None
    alpha: float | None = None
    p_value_adjusted: float | None = None
    null_distribution: np.ndarray | None = None
    message: str = ""
    title: str = ""
    family: str = "global"
    role: str = "diagnostic"

    @property
    def pvalue(self) -> float:
        """Alias of ``p_value`` (scipy's spelling)."""
        return self.p_value

    def __iter__(self):
        """``statistic, p_value = result``, as scipy's results unpack."""
        return iter((self.statistic, self.p_value))

    def __repr__(self) -> str:
        null = ("None" if self.null_distribution is None
                else f"<{np.size(self.null_distribution)} resampled statistics>")
        note = f", message={self.message!r}" if self.message else ""
        return (f"TestResult(id={self.id!r}, statistic={self.statistic:.6g}, "
                f"p_value={self.p_value:.6g}, null_distribution={null}{note})")

    #: The fields of the JSON result's test entries, in their order.
    JSON_FIELDS = ("id", "title", "family", "role", "statistic", "estimate", "p_value",
                   "alpha", "p_value_adjusted", "status", "method", "n_resamples", "params",
                   "message", "null_distribution")

    def to_dict(self) -> dict[str, Any]:
        return {name: jsonable(getattr(self, name)) for name in self.JSON_FIELDS}


@dataclass(frozen=True)
class AuditResult:
    """Everything one audit produced; ``to_dict`` is the JSON result (schema version 1)."""

    calaudit_version: str
    created_at: str
    inputs: Mapping[str, Any]
    data: Mapping[str, Any]
    config: Mapping[str, Any]
    metrics: tuple[MetricResult, ...]
    tests: tuple[TestResult, ...]
    local: Mapping[str, Any]
    groups: tuple[Any, ...]
    diagrams: Mapping[str, Any]
    verdict: Status
    runtime_seconds: float
    environment: Mapping[str, Any] = field(default_factory=dict)
    gate: Mapping[str, Any] = field(default_factory=dict)
    baseline: Mapping[str, Any] | None = None
    attribution: Mapping[str, Any] = field(default_factory=dict)
    disparity: tuple[Any, ...] = ()
    #: Calibration over time (``--time-col``/``--window``, ``calaudit monitor``).
    monitoring: Mapping[str, Any] | None = None
    #: The checks (:class:`calaudit.audit.gate.Check`) the gate built once for this audit,
    #: which the verdict, the exit code and every output read. Not in the JSON, which
    #: records the statuses they are built from (:func:`calaudit.audit.gate.result_checks`).
    checks: tuple[Any, ...] = ()

    def metric(self, metric_id: str) -> MetricResult:
        """The first metric with this id (``KeyError`` listing the valid ids if none)."""
        return lookup(self.metrics, metric_id, "metric")

    def test(self, test_id: str) -> TestResult:
        """The first test with this id (``KeyError`` listing the valid ids if none)."""
        return lookup(self.tests, test_id, "test")

    def to_frame(self):
        """Metrics and tests as a pandas DataFrame indexed by ``(kind, id)``: value, interval,
        statistic, raw and adjusted p-value, status, message."""
        from calaudit.result_views import checks_frame

        return checks_frame(self)

    def groups_frame(self):
        """The group table as a pandas DataFrame (most significant, most biased first)."""
        from calaudit.result_views import groups_frame

        return groups_frame(self)

    def __repr__(self) -> str:
        """One line (the full content is in ``to_dict()``, ``to_frame()``)."""
        return (f"AuditResult(verdict={self.verdict.value}, n={self.data.get('n')}, "
                f"metrics={len(self.metrics)}, tests={len(self.tests)}, "
                f"groups={len(self.groups)})")

    def _repr_html_(self) -> str:
        """Jupyter's view: verdict, graded checks, most biased groups
        (:func:`calaudit.output.notebook.result_html`)."""
        return display.result_html(self)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "calaudit_version": self.calaudit_version,
            "created_at": self.created_at,
            "inputs": jsonable(self.inputs),
            "data": jsonable(self.data),
            "config": jsonable(self.config),
            "metrics": [m.to_dict() for m in self.metrics],
            "tests": [t.to_dict() for t in self.tests],
            "local": jsonable(self.local),
            "groups": jsonable(self.groups),
            "attribution": jsonable(self.attribution),
            "disparity": jsonable(self.disparity),
            "diagrams": jsonable(self.diagrams),
            "verdict": self.verdict.value,
            "gate": jsonable(self.gate),
            **({"baseline": jsonable(self.baseline)} if self.baseline is not None else {}),
            **({"monitoring": jsonable(self.monitoring)} if self.monitoring else {}),
            "environment": jsonable(self.environment),
            "runtime_seconds": round(self.runtime_seconds, 3),
        }


def to_json(result: AuditResult | dict[str, Any]) -> str:
    """The JSON result (docs/result-schema.md): sorted, indented, stable bytes for a given
    result; floats use Python's shortest round-trip representation."""
    payload = result.to_dict() if isinstance(result, AuditResult) else result
    return json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
