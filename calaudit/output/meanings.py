"""What each metric and test means: direction, ideal value, unit and a one-line reading.

Shared by the terminal summary (``--explain``) and the reports, so a metric is described
the same way everywhere. Directions come from :mod:`calaudit.audit.directions` (the ones
thresholds and baselines use); this module only adds words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from calaudit.audit.directions import known_direction


@dataclass(frozen=True)
class Meaning:
    """``direction``: "lower is better", "higher is better", "closest to 1 is better" or
    "descriptive"; ``ideal``: the value of a perfectly calibrated model (text)."""

    direction: str
    ideal: str
    unit: str
    text: str


UNITS = {
    "log_loss": "nats", "calibration_in_the_large": "log-odds",
    "calibration_slope": "ratio (no unit)",
    "brier": "squared probability", "brier_binary": "squared probability",
    "brier_reliability": "squared probability", "brier_resolution": "squared probability",
    "brier_uncertainty": "squared probability", "ece_debiased": "probability",
    "ece_l2": "probability", "tce2": "squared probability", "cwce2": "squared probability",
    "cce2": "squared probability", "klce2": "squared probability (kernel)",
    "skce_b": "squared probability (kernel)",
    "skce_uq": "squared probability (kernel)",
    "skce_ul": "squared probability (kernel)",
    "skce_block": "squared probability (kernel)",
}
TEXTS = {
    "ece": "average gap between confidence and accuracy over bins",
    "smece": "smooth ECE: kernel-smoothed gap between predictions and outcomes, no bins "
             "(Blasiok and Nakkiran 2023)",
    "ece_l2": "root mean squared gap between predicted and observed rates over bins",
    "ece_classwise": "binned ECE of each class one-vs-rest, averaged over classes",
    "ece_canonical": "binned gap of the whole probability vector",
    "ece_debiased": "l2 binned error with its sampling bias removed (clipped at 0)",
    "mce": "largest gap between predicted and observed rates over bins",
    "brier": "mean squared error of the probability vector (accuracy and calibration)",
    "brier_binary": "mean squared error of the positive-class probability",
    "brier_reliability": "calibration part of the Brier score (Murphy decomposition)",
    "brier_resolution": "how far bin rates spread from the base rate (discrimination)",
    "brier_uncertainty": "variance of the outcome: a property of the data, not the model",
    "log_loss": "mean negative log-probability of the true class",
    "calibration_in_the_large": "intercept of the logistic recalibration with slope 1 "
                                "(0: predictions are right on average)",
    "calibration_slope": "slope of the logistic recalibration (1: neither over- nor "
                         "under-confident; < 1: over-confident)",
    "skce_b": "squared kernel calibration error, biased estimator",
    "skce_uq": "squared kernel calibration error, unbiased quadratic estimator",
    "skce_ul": "squared kernel calibration error, unbiased linear estimator",
    "skce_block": "squared kernel calibration error, unbiased block estimator",
    "klce2": "kernel local calibration error: miscalibration within covariate "
             "neighbourhoods",
}
DESCRIPTIVE = frozenset({"brier_uncertainty"})
#: Estimates that are clipped to their range; the reports say so next to the value.
CLIPPED = {"ece_debiased": ("squared", 0.0)}


def metric_meaning(metric_id: str) -> Meaning:
    """Direction, ideal value, unit and a one-line reading of a metric id."""
    unit = UNITS.get(metric_id, "probability")
    text = TEXTS.get(metric_id, "")
    if metric_id in DESCRIPTIVE:
        return Meaning("descriptive", "-", unit, text)
    direction = known_direction(metric_id)
    if direction is None:
        return Meaning("lower is better", "0", unit, text)
    if direction.better == "target":
        return Meaning(f"closest to {direction.target:g} is better", f"{direction.target:g}",
                       unit, text)
    if direction.better == "higher":
        return Meaning("higher is better", "-", unit, text)
    return Meaning("lower is better", "0", unit, text)


def clipped_note(metric: Mapping[str, Any]) -> str:
    """A note when a metric's value was clipped (e.g. ``ece_debiased`` below 0), else ""."""
    key = CLIPPED.get(str(metric.get("id")))
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
          else "the model is calibrated")
    method = test.get("method") or "-"
    return f"H0: {h0}; {method}."


P_VALUES_TEXT = ("p (raw): the test's own p-value; p (adjusted): after the multiple-testing "
                 "adjustment, the value compared with alpha to set the status.")
