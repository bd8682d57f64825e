"""Which way is better for each metric id: used by thresholds and baseline comparisons.

``lower``: an error or loss, smaller is better (ECE, Brier, SKCE, ...). ``higher``: larger
is better. ``target``: closest to a target value is better (a calibration slope of 1).
A metric missing here is treated as lower-is-better by thresholds (their ``better`` key
overrides it) and is not compared against a baseline unless its threshold says which way
is better. A new stage that adds a metric adds one line here.
"""

from __future__ import annotations

from typing import NamedTuple


class Direction(NamedTuple):
    """``better`` is ``lower``, ``higher`` or ``target`` (then ``target`` holds the value)."""

    better: str
    target: float | None = None


LOWER_IS_BETTER = frozenset({
    "ece", "smece", "ece_l2", "ece_canonical", "ece_classwise", "ece_debiased", "mce",
    "brier", "brier_binary", "brier_reliability", "log_loss",
    "skce_b", "skce_uq", "skce_ul", "skce_block", "klce2",
    "tce2", "cwce2", "cce2",
})
HIGHER_IS_BETTER = frozenset({"brier_resolution"})
TARGETS = {"calibration_slope": 1.0, "calibration_in_the_large": 0.0}

BETTER_CHOICES = ("auto", "lower", "higher")


def known_direction(metric_id: str) -> Direction | None:
    """The registered direction of ``metric_id``, or ``None`` if it is not registered."""
    if metric_id in LOWER_IS_BETTER:
        return Direction("lower")
    if metric_id in HIGHER_IS_BETTER:
        return Direction("higher")
    if metric_id in TARGETS:
        return Direction("target", TARGETS[metric_id])
    return None


def known_metric_ids() -> tuple[str, ...]:
    """Every registered metric id (for "did you mean" suggestions)."""
    return tuple(sorted(LOWER_IS_BETTER | HIGHER_IS_BETTER | set(TARGETS)))
