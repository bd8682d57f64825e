"""Plain-language text of the report: how to read each section, and general notes.

Shared by the HTML and Markdown reports (plain text, no markup). Numbers that depend on
the audit (alpha, adjustment method, resamples) are filled in from the configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calaudit.report.views import Note

#: Each adjustment method: (its name in a sentence, what it guarantees).
METHODS = {
    "holm": ("Holm's step-down method",
             "it keeps the chance of any false alarm among the tests adjusted together at "
             "most alpha"),
    "bonferroni": ("the Bonferroni correction",
                   "it keeps the chance of any false alarm among the tests adjusted together "
                   "at most alpha"),
    "fdr_bh": ("the Benjamini-Hochberg procedure",
               "it keeps the expected share of false alarms among the rejected tests at most "
               "alpha"),
}

#: Which tests are adjusted together, per ``multiple_testing_scope``.
SCOPES = {
    "battery": "over all tests together",
    "primary": ("over the primary tests (the ones that decide the verdict) together, and "
                "over each family of diagnostic tests separately"),
    "family": "within each family of tests (global calibration; local calibration)",
}


def how_to_read(config: Mapping[str, Any]) -> dict[str, str]:
    """One short paragraph per section, keyed by section name."""
    alpha = config.get("alpha", 0.05)
    return {
        "verdict": (
            "The verdict is decided by the gate: the audit fails when any check has a status "
            "listed under 'fails on'. Tests are graded on their adjusted p-values; "
            "INCONCLUSIVE means a check could not decide, never that it passed."),
        "data": (
            "Check that the files, their fingerprints (SHA-256, or an object store's ETag) and "
            "the row counts are the ones "
            "you meant to audit. Rows excluded by a rule are not part of any number below."),
        "metrics": (
            "Estimates of how far the probabilities are from the observed frequencies. Each "
            "has its direction ('lower is better', 'higher is better', 'closest to 1 is "
            "better'), the value of a perfectly calibrated model ('ideal') and its unit. "
            "Estimates depend on their settings (bins, kernel), listed in the methods "
            "appendix; a value marked * was clipped to its range."),
        "tests": (
            f"Each test asks whether the data are compatible with a calibrated model. A test "
            f"FAILs when its adjusted p-value is at most alpha = {alpha}. 'p (raw)' is the "
            f"test's own p-value, 'p (adjusted)' the value after the multiple-testing "
            f"correction, which sets the status."),
        "reliability": (
            "Each dot is one bin of predictions: its horizontal position is the mean "
            "predicted probability, its height the observed frequency, the whisker a 95% "
            "interval for that frequency. On a calibrated model the dots lie near the dashed "
            "diagonal and inside the grey bars, which show where 95% of the bin's frequencies "
            "fall when the labels are redrawn from the predictions themselves. The lower "
            "panel shows how many rows have each predicted probability: bins with few rows "
            "are uncertain."),
        "reliability_per_class": (
            "One diagram per class, each treating 'is it this class?' as a yes/no question: "
            "predicted probability of the class against how often it is the true class."),
        "nulls": (
            "The grey histogram is what the test statistic looks like for a calibrated model "
            "(labels resampled from the predictions, or a bootstrap); the red line is the "
            "statistic of your data. The raw p-value is the share of the histogram at or to "
            "the right of the line (counted as (1 + k) / (1 + B), so it is never 0)."),
        "klce": (
            "The kernel local calibration error (KLCE) compares predictions with outcomes "
            "among rows that are close both in predicted probability and in the covariates. "
            "Its test asks whether the model is calibrated within every such neighbourhood; "
            "a global test can pass while this one fails."),
        "lcb": (
            "Every dot is one row's local calibration bias: the observed minus the predicted "
            "rate among similar rows (similar prediction and covariates). Above zero the "
            "model under-predicts, below zero it over-predicts. The lines are each group's "
            "smoothed bias along the covariate, with their uncertainty band. 'Similar' is set "
            "by bandwidths chosen for estimation (leave-one-out cross-validation, listed "
            "below), not the test's wider kernel, so a group's mean LCB estimates its bias; "
            "the group table's 'bias' column is the direct observed-minus-predicted check."),
        "bias": (
            "Each group's observed rate minus its mean prediction, with an interval, sorted "
            "from the most over-predicted (bottom) to the most under-predicted (top). Colour "
            "is the group's status; hollow markers are INCONCLUSIVE groups (too few rows or "
            "events to decide)."),
        "groups": (
            "One row per group of each covariate (numeric covariates in quantile bands) and "
            "per intersection. n and events are the evidence behind each number; groups "
            "marked INCONCLUSIVE are too small to judge, not calibrated."),
    }


def adjustment_summary(config: Mapping[str, Any]) -> str:
    """How p-values were adjusted, as a clause: "adjusted by Holm's step-down method over
    the primary tests ... together, and ..." or "not adjusted (...)"."""
    method = str(config.get("multiple_testing", "holm"))
    if method == "none":
        return "not adjusted (each test on its own at level alpha)"
    name = METHODS.get(method, (method, ""))[0]
    scope = SCOPES.get(str(config.get("multiple_testing_scope", "family")), SCOPES["family"])
    return f"adjusted by {name} {scope}"


def general_notes(config: Mapping[str, Any], n_tests: int) -> tuple[Note, ...]:
    """The "Reading this report" section."""
    alpha = config.get("alpha", 0.05)
    guarantee = METHODS.get(str(config.get("multiple_testing", "holm")), ("", ""))[1]
    return (
        Note("What a p-value means here", (
            "Every test starts from the assumption that the model is calibrated: that among "
            "the rows where it predicts, say, 30%, about 30% have the event. The p-value is "
            "the probability, under that assumption, of a test statistic at least as large "
            "as the one observed in these data.",
            f"A small p-value (at most alpha = {alpha} after adjustment) is evidence that "
            "the model is miscalibrated. A large p-value is not proof of calibration: it "
            "means these data do not show a miscalibration this test can detect with this "
            "many rows.",
        )),
        Note("Many tests at once", (
            f"This audit ran {n_tests} test(s). Running several tests raises the chance that "
            f"one of them rejects by luck, so p-values are {adjustment_summary(config)}"
            + (f"; {guarantee}." if guarantee else ".")
            + " Each test is graded on its adjusted p-value.",
        ) if n_tests else (
            "This audit ran no hypothesis tests: nothing here says whether the gaps shown "
            "could be chance. Run 'calaudit test' for p-values.",
        )),
        Note("What local calibration adds", (
            "Calibration is an average over everyone who received the same prediction. It "
            "can hide a group for which the model is too high and another for which it is "
            "too low: the errors cancel and the overall diagram looks fine.",
            "Local calibration asks the same question among similar people (for example, of "
            "the same age and group): among rows like this one with a 30% prediction, do "
            "about 30% have the event? The KLCE test checks this everywhere at once; the "
            "local calibration bias shows where it fails and in which direction.",
        )),
        Note("INCONCLUSIVE is not PASS", (
            "A check or group is INCONCLUSIVE when there are too few rows or events to "
            "decide. Treat it as not examined: collect more data for it, or state the gap "
            "in your file.",
        )),
        Note("What this report does not say", (
            "Calibration is not accuracy: a calibrated model can still rank cases poorly. "
            "The results hold for the data in this file; another population or period may "
            "differ. Bins, kernels and bandwidths are choices; the appendix records every "
            "one so that the audit can be repeated.",
        )),
    )
