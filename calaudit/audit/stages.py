"""The stage protocol: one family of checks (calibration errors, SKCE tests, local
calibration...). A stage reads the data and the configuration and returns a
:class:`StageOutput`; it never writes files or prints."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from calaudit.audit.config import AuditConfig
from calaudit.data.dataset import CalibrationData
from calaudit.results import MetricResult, TestResult


@dataclass(frozen=True)
class StageOutput:
    """What one stage contributes to the audit result."""

    metrics: tuple[MetricResult, ...] = ()
    tests: tuple[TestResult, ...] = ()
    local: Mapping[str, Any] = field(default_factory=dict)
    groups: tuple[Any, ...] = ()
    diagrams: Mapping[str, Any] = field(default_factory=dict)
    attribution: Mapping[str, Any] = field(default_factory=dict)
    disparity: tuple[Any, ...] = ()
    #: calibration over time (the ``monitoring`` section; empty without windows)
    monitoring: Mapping[str, Any] = field(default_factory=dict)


class Stage(Protocol):
    """A family of checks. ``name`` keys its random stream (see ``numerics.random``)."""

    name: str

    def run(
        self, data: CalibrationData, config: AuditConfig, rng: np.random.Generator
    ) -> StageOutput:
        """Compute this family's metrics, tests and diagnostics."""
        ...


def enabled_tests(config: AuditConfig, test_ids: tuple[str, ...]) -> tuple[str, ...]:
    """The tests of ``test_ids`` this audit runs (none for ``calaudit metrics``)."""
    return tuple(t for t in test_ids if config.run_tests and config.global_tests.enabled(t))


def ci_level(config: AuditConfig) -> float | None:
    """The level of the metrics' bootstrap intervals, ``None`` without intervals."""
    return config.ci_level if config.ci and config.run_tests else None
