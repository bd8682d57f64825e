"""What each metric and test means, in words: the registry's reading of an id
(:mod:`calaudit.registry`), shared by the terminal summary (``--explain``) and the
reports, so a metric is described the same way everywhere."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from calaudit import registry


@dataclass(frozen=True)
class Meaning:
    """``direction``: "lower is better", "higher is better", "closest to 1 is better" or
    "descriptive"; ``ideal``: the value of a perfectly calibrated model (text)."""

    direction: str
    ideal: str
    unit: str
    text: str


def metric_meaning(metric_id: str) -> Meaning:
    """Direction, ideal value, unit and a one-line reading of a metric id (a metric the
    registry does not know reads as an error: lower is better)."""
    entry = registry.metric(metric_id)
    if entry is None:
        return Meaning("lower is better", "0", "probability", "")
    return Meaning(entry.reading, entry.ideal, entry.unit, entry.meaning)


def clipped_note(metric: Mapping[str, Any]) -> str:
    """A note when a metric's value was clipped (e.g. ``ece_debiased`` below 0), else ""."""
    key = registry.CLIPPED.get(str(metric.get("id")))
    if key is None:
        return ""
    raw = (metric.get("params") or {}).get(key[0])
    if isinstance(raw, (int, float)) and raw < key[1]:
        return (f"clipped at {key[1]:g}: the unclipped estimate is {raw:.3g} (negative "
                f"when the error is below what sampling noise can resolve)")
    return ""


def test_meaning(test: Mapping[str, Any]) -> str:
    """One line: the null hypothesis, the method and how to read the p-values."""
    family = test.get("family") or "global"
    h0 = ("the model is calibrated within every covariate neighbourhood" if family == "local"
          else "the model is calibrated in every window, in time order" if family == "monitoring"
          else "the model is calibrated")
    method = test.get("method") or "-"
    return f"H0: {h0}; {method}."


P_VALUES_TEXT = ("p (raw): the test's own p-value; p (adjusted): after the multiple-testing "
                 "adjustment, the value compared with alpha to set the status.")
