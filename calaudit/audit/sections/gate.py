"""Gate settings: metric thresholds, the INCONCLUSIVE data rule, baseline comparison."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from calaudit import registry
from calaudit.audit.sections.common import check, check_choice, check_limits, finite_or_none
from calaudit.registry import Direction

ON_MISMATCH = ("error", "warn")
BETTER_CHOICES = ("auto", "lower", "higher")


@dataclass(frozen=True)
class ThresholdConfig:
    """Gate levels for one metric: ``[thresholds.ece] warn = 0.03, fail = 0.05``.

    Lower is better by default: the value passes up to ``warn``, is ``WARN`` up to ``fail``,
    ``FAIL`` above (a value on a level is on the good side). ``better = "higher"`` makes the
    levels minima; a ``target`` makes them bound ``|value - target|``. ``tolerance``
    overrides ``baseline.tolerance`` for this metric."""

    metric: str = field(metadata={"help": "metric id (the table name)"})
    warn: float | None = field(default=None, metadata={"help": "WARN beyond this level"})
    fail: float | None = field(default=None, metadata={"help": "FAIL beyond this level"})
    better: str = field(default="auto", metadata={
        "help": "auto (from the metric id; unknown ids: lower), lower or higher"})
    target: float | None = field(default=None, metadata={
        "help": "levels bound |value - target| instead of the value"})
    tolerance: float | None = field(default=None, metadata={
        "help": "allowed worsening against a baseline (overrides baseline.tolerance)"})

    def __post_init__(self) -> None:
        check(isinstance(self.metric, str) and self.metric != "",
               f"threshold: metric id must be a non-empty string; got {self.metric!r}")
        where = f"thresholds.{self.metric}"
        known = registry.known_metric_ids()
        if self.metric not in known:
            # a custom metric (from a stage of the Python API) states its direction; an id
            # close to a known one is a typo even then
            close = difflib.get_close_matches(self.metric, known, n=1)
            declared = self.better != "auto" or self.target is not None
            typo = bool(difflib.get_close_matches(self.metric, known, n=1, cutoff=0.85))
            if typo or not declared:
                hint = f" (did you mean '{close[0]}'?)" if close else (
                    "; metric ids: " + ", ".join(known))
                check(False, f"{where}: unknown metric id '{self.metric}'{hint}; a custom "
                             "metric needs better = \"lower\"/\"higher\" or target")
        check(registry.metric(self.metric) is None
              or registry.metric(self.metric).direction is not None,
               f"{where}: '{self.metric}' describes the labels, not the model (no better "
               "direction): it cannot be a threshold")
        for name in ("warn", "fail", "target", "tolerance"):
            finite_or_none(getattr(self, name), f"{where}.{name}")
        check_choice(self.better, BETTER_CHOICES, f"{where}.better")
        check(self.target is None or self.better == "auto",
               f"{where}: give either target or better, not both")
        check(self.tolerance is None or self.tolerance >= 0,
               f"{where}.tolerance must be >= 0; got {self.tolerance!r}")
        direction = self.direction()
        if direction.better == "target":
            for name in ("warn", "fail"):
                value = getattr(self, name)
                check(value is None or value >= 0,
                       f"{where}.{name} bounds |value - target| and must be >= 0; got {value!r}")
        if self.warn is not None and self.fail is not None:
            ordered = self.warn >= self.fail if direction.better == "higher" else (
                self.warn <= self.fail)
            check(ordered, f"{where}: warn ({self.warn}) must be "
                            f"{'above' if direction.better == 'higher' else 'below'} "
                            f"fail ({self.fail}) when {direction.better} is better")

    @property
    def has_levels(self) -> bool:
        """Whether this entry grades the metric (it may only carry a baseline tolerance)."""
        return self.warn is not None or self.fail is not None

    def direction(self) -> Direction:
        """Which way is better: explicit ``target``/``better``, else the registry, else lower."""
        if self.target is not None:
            return Direction("target", self.target)
        if self.better != "auto":
            return Direction(self.better)
        entry = registry.metric(self.metric)
        return (entry.direction if entry else None) or Direction("lower")


@dataclass(frozen=True)
class GateConfig:
    """INCONCLUSIVE rules: with too little data no check is reported as PASS."""

    min_rows: int = field(default=50, metadata={
        "help": "fewer rows: PASS becomes INCONCLUSIVE"})
    min_events: int = field(default=5, metadata={
        "help": "fewer events (binary: rows of the rarer class; multi-class: the rarer of "
                "top-label hits and misses): PASS becomes INCONCLUSIVE"})

    def __post_init__(self) -> None:
        check_limits(self, "gate")


@dataclass(frozen=True)
class BaselineConfig:
    """Comparison with a previous result (``--baseline OLD.json``, ``calaudit compare``).

    A metric regresses when it is worse than in the baseline by more than its tolerance: the
    registry's per-metric default with ``tolerance`` unset, else ``max(tolerance,
    relative_tolerance * |old|)``. A check newly in ``fail_on`` regresses too."""

    path: str | None = field(default=None, metadata={
        "help": "JSON result to compare against", "path": True})
    tolerance: float | None = field(default=None, metadata={
        "help": "allowed absolute worsening of every metric; unset: per-metric defaults on "
                "each metric's scale (docs/configuration.md)"})
    relative_tolerance: float = field(default=0.0, metadata={
        "help": "allowed worsening relative to the baseline value (with tolerance set)"})
    require_ci_separation: bool = field(default=False, metadata={
        "help": "a worsening counts only if the confidence intervals do not overlap"})
    on_mismatch: str = field(default="error", metadata={
        "help": "metric computed with different settings: error (status ERROR) or warn "
                "(status WARN, not compared)"})
    ignore_params: tuple[str, ...] = field(default=(
        "bins_used", "cells_used", "pairs", "blocks", "clipped_rows", "per_class",
        "squared", "events", "rows"), metadata={
        "help": "metric params that may differ (data-dependent; float params are always "
                "ignored)"})

    def __post_init__(self) -> None:
        for name in ("tolerance", "relative_tolerance"):
            value = getattr(self, name)
            finite_or_none(value, f"baseline.{name}")
            check(value is None or value >= 0, f"baseline.{name} must be >= 0; got {value!r}")
        check(self.relative_tolerance is not None, "baseline.relative_tolerance must be a number")
        check_choice(self.on_mismatch, ON_MISMATCH, "baseline.on_mismatch")
