"""Which way is better for each metric id: used by thresholds and baseline comparisons.

``lower``: an error or loss, smaller is better (ECE, Brier, SKCE, ...). ``higher``: larger
is better. ``target``: closest to a target value is better (a calibration slope of 1).
Every metric calaudit computes is listed here (``NO_DIRECTION`` for the one without a
better side): a threshold on any other id is a configuration error with a "did you mean".
A new stage that adds a metric adds one line here (and, for baselines, a default
tolerance in ``DEFAULT_TOLERANCES``).
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
#: Metrics calaudit computes that have no better direction (a property of the labels, not
#: of the model): never a threshold, never compared with a baseline.
NO_DIRECTION = frozenset({"brier_uncertainty"})

#: Why a known metric may be absent from a result (a threshold on it is then SKIPPED).
CONDITIONS = {
    "klce2": "computed only with covariates (--covariates)",
    "calibration_slope": "computed only for binary models",
    "calibration_in_the_large": "computed only for binary models",
    "brier_binary": "computed only for binary models",
    "tce2": "computed only with [squared] enabled",
    "cwce2": "computed only with [squared] enabled",
    "cce2": "computed only with [squared] enabled",
    "skce_b": "not computed above skce.max_quadratic_n rows",
    "skce_uq": "not computed above skce.max_quadratic_n rows",
}


class Tolerance(NamedTuple):
    """Default allowed worsening against a baseline, on the metric's own scale:
    ``max(absolute, relative * |old|, noise)`` where ``noise`` is
    ``2 sqrt(sd_old^2 + sd_new^2)`` with ``sd`` the standard deviation of the estimate
    under calibration, read from the test named in ``noise_test`` (its null distribution,
    or its ``params.stderr``) when both results have it."""

    absolute: float = 0.0
    relative: float = 0.0
    noise_test: str | None = None


#: Per-metric defaults (``baseline.tolerance`` unset). Probability-scale errors: 0.01
#: absolute; losses: 2 % of the old value; squared (kernel) errors, whose values are
#: orders of magnitude smaller: 50 % of the old value, and for unbiased estimators (which
#: fluctuate around 0 for a calibrated model) at least twice the sampling sd of the
#: difference.
PROBABILITY_SCALE = Tolerance(absolute=0.01)
DEFAULT_TOLERANCES = {
    **{m: PROBABILITY_SCALE for m in ("ece", "ece_l2", "ece_canonical", "ece_classwise",
                                      "ece_debiased", "mce", "smece",
                                      "calibration_in_the_large")},
    "calibration_slope": Tolerance(absolute=0.05),
    **{m: Tolerance(relative=0.02) for m in ("brier", "brier_binary", "log_loss",
                                             "brier_resolution")},
    **{m: Tolerance(relative=0.5) for m in ("skce_b", "brier_reliability", "tce2", "cwce2",
                                            "cce2", "skce_block")},
    "skce_uq": Tolerance(relative=0.5, noise_test="skce_consistency"),
    "klce2": Tolerance(relative=0.5, noise_test="klce_consistency"),
    "skce_ul": Tolerance(relative=0.5, noise_test="skce_ul_asymptotic"),
}

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
    """Every metric id calaudit computes (thresholds on other ids are configuration
    errors; also the candidates of "did you mean" suggestions)."""
    return tuple(sorted(LOWER_IS_BETTER | HIGHER_IS_BETTER | set(TARGETS) | NO_DIRECTION))


def default_tolerance(metric_id: str) -> Tolerance:
    """The per-metric default tolerance (``PROBABILITY_SCALE`` for unlisted ids)."""
    return DEFAULT_TOLERANCES.get(metric_id, PROBABILITY_SCALE)
