"""One registry of the metric and test ids: what every output and the gate read about an id.

Each :class:`Entry` gives the title (``{notion}``: binary or top-label), which way is
better (``lower``, ``higher``, ``target``, or none), the ideal value, unit, a one-line
reading, why it may be absent, its baseline tolerance, its configuration section and,
for a test, whether it runs by default. A new statistic adds one entry here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class Direction(NamedTuple):
    """``better`` is ``lower``, ``higher`` or ``target`` (then ``target`` holds the value)."""

    better: str
    target: float | None = None


class Tolerance(NamedTuple):
    """Default allowed worsening against a baseline, on the metric's own scale:
    ``max(absolute, relative * |old|, noise)`` where ``noise`` is
    ``2 sqrt(sd_old^2 + sd_new^2)`` with ``sd`` the standard deviation of the estimate
    under calibration, read from the test named in ``noise_test`` (its null distribution,
    or its ``params.stderr``) when both results have it."""

    absolute: float = 0.0
    relative: float = 0.0
    noise_test: str | None = None


#: Probability-scale errors: 0.01 absolute.
PROBABILITY_SCALE = Tolerance(absolute=0.01)
#: Losses: 2 % of the old value.
LOSS = Tolerance(relative=0.02)
#: Squared (kernel) errors, orders of magnitude smaller than probabilities: 50 %.
SQUARED = Tolerance(relative=0.5)


@dataclass(frozen=True)
class Entry:
    """One metric or test id (module docstring)."""

    id: str
    kind: str
    title: str
    better: str = "lower"
    target: float | None = None
    unit: str = "probability"
    meaning: str = ""
    condition: str = ""
    tolerance: Tolerance = PROBABILITY_SCALE
    section: str = ""
    family: str = "global"
    #: a test that runs unless the configuration leaves it out
    default: bool = False

    @property
    def direction(self) -> Direction | None:
        """The better side (``None`` for a descriptive number)."""
        if self.better == "none":
            return None
        return Direction(self.better, self.target)

    @property
    def ideal(self) -> str:
        """The value of a perfectly calibrated model, as text."""
        if self.better == "target":
            return f"{self.target:g}"
        return "0" if self.better == "lower" else "-"

    @property
    def reading(self) -> str:
        """``lower is better``, ``closest to 1 is better``, ``higher is better`` or
        ``descriptive``."""
        if self.better == "target":
            return f"closest to {self.target:g} is better"
        return {"none": "descriptive"}.get(self.better, f"{self.better} is better")

    def heading(self, notion: str = "binary") -> str:
        """The title, with the view filled in."""
        return self.title.format(notion=notion)


def _metric(id: str, title: str, meaning: str, **kw) -> Entry:
    return Entry(id, "metric", title, meaning=meaning, **kw)


def _test(id: str, title: str, section: str = "global_tests", **kw) -> Entry:
    return Entry(id, "test", title, section=section, **kw)


_SQUARED_PROBABILITY = "squared probability"
_KERNEL = "squared probability (kernel)"
_BINARY_ONLY = "computed only for binary models"
_QUADRATIC = "not computed above skce.max_quadratic_n rows"
_SQUARED_ON = "computed only with [squared] enabled"

METRICS: dict[str, Entry] = {e.id: e for e in (
    _metric("ece", "Expected calibration error ({notion})",
            "average gap between confidence and accuracy over bins", section="binning"),
    _metric("mce", "Maximum calibration error ({notion})",
            "largest gap between predicted and observed rates over bins", section="binning"),
    _metric("brier", "Brier score (summed over classes)",
            "mean squared error of the probability vector (accuracy and calibration)",
            unit=_SQUARED_PROBABILITY, tolerance=LOSS),
    _metric("brier_binary", "Brier score (binary, scikit-learn convention)",
            "mean squared error of the positive-class probability",
            unit=_SQUARED_PROBABILITY, tolerance=LOSS, condition=_BINARY_ONLY),
    _metric("smece", "Smooth ECE ({notion})",
            "smooth ECE: kernel-smoothed gap between predictions and outcomes, no bins "
            "(Blasiok and Nakkiran 2023)"),
    _metric("ece_l2", "l2 calibration error ({notion})",
            "root mean squared gap between predicted and observed rates over bins",
            section="binning"),
    _metric("ece_classwise", "Class-wise ECE (one-vs-rest, averaged)",
            "binned ECE of each class one-vs-rest, averaged over classes", section="binning"),
    _metric("ece_canonical", "Canonical ECE (per-dimension grid)",
            "binned gap of the whole probability vector", section="ece"),
    _metric("ece_debiased", "Debiased l2 calibration error ({notion})",
            "l2 binned error with its sampling bias removed (clipped at 0)",
            section="binning"),
    _metric("brier_reliability", "Brier reliability (calibration term)",
            "calibration part of the Brier score (Murphy decomposition)",
            unit=_SQUARED_PROBABILITY, tolerance=SQUARED, section="binning"),
    _metric("brier_resolution", "Brier resolution",
            "how far bin rates spread from the base rate (discrimination)", better="higher",
            unit=_SQUARED_PROBABILITY, tolerance=LOSS, section="binning"),
    _metric("brier_uncertainty", "Brier uncertainty",
            "variance of the outcome: a property of the data, not the model", better="none",
            unit=_SQUARED_PROBABILITY),
    _metric("log_loss", "Log loss", "mean negative log-probability of the true class",
            unit="nats", tolerance=LOSS),
    _metric("calibration_in_the_large", "Calibration-in-the-large (logistic intercept)",
            "intercept of the logistic recalibration with slope 1 (0: predictions are right "
            "on average)", better="target", target=0.0, unit="log-odds",
            condition=_BINARY_ONLY),
    _metric("calibration_slope", "Calibration slope (logistic recalibration)",
            "slope of the logistic recalibration (1: neither over- nor under-confident; "
            "< 1: over-confident)", better="target", target=1.0, unit="ratio (no unit)",
            tolerance=Tolerance(absolute=0.05), condition=_BINARY_ONLY),
    _metric("skce_b", "SKCE, biased estimator",
            "squared kernel calibration error, biased estimator", unit=_KERNEL,
            tolerance=SQUARED, condition=_QUADRATIC, section="skce"),
    _metric("skce_uq", "SKCE, unbiased quadratic estimator",
            "squared kernel calibration error, unbiased quadratic estimator", unit=_KERNEL,
            tolerance=Tolerance(relative=0.5, noise_test="skce_consistency"),
            condition=_QUADRATIC, section="skce"),
    _metric("skce_ul", "SKCE, unbiased linear estimator",
            "squared kernel calibration error, unbiased linear estimator", unit=_KERNEL,
            tolerance=Tolerance(relative=0.5, noise_test="skce_ul_asymptotic"),
            section="skce"),
    _metric("skce_block", "SKCE, unbiased block estimator",
            "squared kernel calibration error, unbiased block estimator", unit=_KERNEL,
            tolerance=SQUARED, section="skce"),
    _metric("klce2", "Kernel local calibration error KLCE^2 (unbiased)",
            "kernel local calibration error: miscalibration within covariate neighbourhoods",
            unit=_KERNEL, tolerance=Tolerance(relative=0.5, noise_test="klce_consistency"),
            condition="computed only with covariates (--covariates)", section="local"),
    _metric("tce2", "Squared top-label calibration error TCE_2^2 (Gruber & Bach)",
            "squared top-label calibration error", unit=_SQUARED_PROBABILITY,
            tolerance=SQUARED, condition=_SQUARED_ON, section="squared"),
    _metric("cwce2", "Squared class-wise calibration error CWCE_2^2 (Gruber & Bach)",
            "squared class-wise calibration error, summed over classes",
            unit=_SQUARED_PROBABILITY, tolerance=SQUARED, condition=_SQUARED_ON,
            section="squared"),
    _metric("cce2", "Squared canonical calibration error CCE_2^2 (Gruber & Bach)",
            "squared canonical calibration error", unit=_SQUARED_PROBABILITY,
            tolerance=SQUARED, condition=_SQUARED_ON, section="squared"),
)}

TESTS: dict[str, Entry] = {e.id: e for e in (
    _test("skce_b_bound", "SKCE_b distribution-free bound"),
    _test("skce_uq_bound", "SKCE_uq distribution-free bound"),
    _test("skce_ul_bound", "SKCE_ul distribution-free bound"),
    _test("skce_ul_asymptotic", "SKCE_ul asymptotic normal test", default=True),
    _test("skce_uq_asymptotic", "SKCE_uq asymptotic test (Arcones-Gine bootstrap)", default=True),
    _test("skce_consistency", "SKCE_uq consistency resampling test", default=True),
    _test("ece_consistency", "ECE consistency resampling test ({notion})", default=True),
    _test("spiegelhalter", "Spiegelhalter's z test", default=True, condition=_BINARY_ONLY),
    _test("hosmer_lemeshow", "Hosmer-Lemeshow test", condition=_BINARY_ONLY),
    _test("kuiper", "Kuiper's test of the cumulative residuals ({notion})"),
    _test("local_consistency", "Local calibration test (aggregate of recalibration scores "
          "and KLCE)", section="local", family="local", default=True),
    _test("klce_consistency", "Local calibration test (KLCE, labels resampled from "
          "predictions)", section="local", family="local"),
    _test("klce_bootstrap", "Local calibration test (KLCE, residual bootstrap, Algorithm 1)",
          section="local", family="local"),
    _test("klce_permutation", "Local calibration test (KLCE, KiTE permutation null)",
          section="local", family="local"),
    _test("groups_bonferroni", "Local calibration: groups, Bonferroni minimum p-value",
          section="", family="local"),
    _test("calibration_eprocess", "Calibration over time (e-process over the windows)",
          section="monitoring", family="monitoring", better="lower", unit="e-value",
          meaning="evidence against calibration accumulated window by window (mean-one "
                  "under calibration); an alarm when it reaches 1/level, valid however "
                  "often it is looked at",
          condition="computed only with windows: --time-col/--window, --batch-col, or "
                    "calaudit monitor"),
)}

#: Estimates that are clipped to their range: (the param holding the raw value, bound).
CLIPPED = {"ece_debiased": ("squared", 0.0)}


def metric(metric_id: str) -> Entry | None:
    """The entry of a metric id (``None`` if calaudit does not compute it)."""
    return METRICS.get(metric_id)


def test(test_id: str) -> Entry | None:
    """The entry of a test id (``None`` if unknown)."""
    return TESTS.get(test_id)


test.__test__ = False  # not a pytest test function


def title(item_id: str, notion: str = "binary") -> str:
    """The title of a metric or test id, with the view filled in (the id if unknown)."""
    entry = METRICS.get(item_id) or TESTS.get(item_id)
    return entry.heading(notion) if entry else item_id


def known_metric_ids() -> tuple[str, ...]:
    """Every metric id calaudit computes (thresholds on other ids are configuration
    errors; also the candidates of "did you mean" suggestions)."""
    return tuple(sorted(METRICS))


def tests_of(section: str, default: bool | None = None) -> tuple[str, ...]:
    """The test ids governed by a configuration section, in registry order (``default``:
    only those that run, or do not run, by default)."""
    return tuple(e.id for e in TESTS.values()
                 if e.section == section and default in (None, e.default))
