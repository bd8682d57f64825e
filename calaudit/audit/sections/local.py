"""Settings of local calibration (KLCE tests, LCB, group table)."""

from __future__ import annotations

from dataclasses import dataclass, field

from calaudit import registry
from calaudit.audit.sections.common import (
    MULTIPLE_TESTING,
    check,
    check_choice,
    check_limits,
    positive,
)

LOCAL_TESTS = registry.tests_of("local")
KITE_NULLS = ("centred", "uncentred")
RESAMPLE_DTYPES = ("float32", "float64")


@dataclass(frozen=True)
class LocalConfig:
    """Local calibration (KLCE tests, LCB, group table); runs only with covariates.

    Kernels are Gaussian, ``exp(-d^2 / (2 s^2))``, bandwidth ``s`` (``None``: the median
    heuristic, ``docs/local-calibration.md``). ``kite_*`` set the KiTE-compatible
    ``klce_permutation`` test."""

    tests: tuple[str, ...] = field(
        default=registry.tests_of("local", default=True),
        metadata={"help": "local tests to run: " + ", ".join(LOCAL_TESTS) + " (none: only "
                          "the statistic and diagnostics); local_consistency aggregates "
                          "recalibration scores and KLCE^2 (klce_consistency is its kernel "
                          "member, from the same redraws)"})
    n_resamples: int = field(default=500, metadata={"help": "resamples of each local test"})
    resample_dtype: str = field(
        default="float32", metadata={"help": "precision of the resampled statistics of "
                                             "klce_consistency / klce_bootstrap: float32 "
                                             "(about 2x faster; the observed statistic is "
                                             "always float64) or float64"})
    prob_bandwidth: float | None = field(
        default=None, metadata={"help": "bandwidth s of the Gaussian prediction kernel "
                                        "exp(-|p - q|^2 / (2 s^2)); none = median heuristic"})
    cov_bandwidth: float | None = field(
        default=None, metadata={"help": "bandwidth s of the Gaussian covariate kernel on the "
                                        "encoded covariates; none = median heuristic"})
    lcb_prob_bandwidth: float | None = field(
        default=None, metadata={"help": "bandwidth s_p of the LCB estimate's prediction kernel; "
                                        "none = leave-one-out cross-validation"})
    lcb_cov_bandwidth: float | None = field(
        default=None, metadata={"help": "bandwidth s_x of the LCB estimate's covariate kernel; "
                                        "none = leave-one-out cross-validation"})
    lcb_cv_max_rows: int = field(
        default=2000, metadata={"help": "rows used by the LCB bandwidth cross-validation; "
                                        "larger data are subsampled with the seed"})
    diagnostics: bool = field(
        default=True, metadata={"help": "compute the diagnostics (LCB, group table, "
                                        "attribution); false: only the statistic and the "
                                        "local tests, which alone decide the verdict"})
    attribution: bool = field(
        default=True, metadata={"help": "fit the recalibration model that attributes "
                                        "miscalibration to covariates (diagnostic)"})
    median_max_rows: int = field(
        default=2000, metadata={"help": "rows used by the median heuristic; larger data are "
                                        "subsampled with the seed"})
    per_class: bool = field(
        default=True, metadata={"help": "multi-class: also test each class one-vs-rest"})
    min_group_rows: int = field(
        default=30, metadata={"help": "groups (and samples) with fewer rows are INCONCLUSIVE"})
    min_group_events: int = field(
        default=5, metadata={"help": "groups with fewer events or non-events are INCONCLUSIVE"})
    group_adjust: str = field(
        default="holm", metadata={"help": "adjustment across groups: "
                                          + ", ".join(MULTIPLE_TESTING)})
    n_bands: int = field(
        default=4, metadata={"help": "quantile bands of each numeric covariate in the group "
                                     "table"})
    intersections: bool = field(
        default=True, metadata={"help": "add pairwise intersections of covariate groups"})
    top_k: int = field(default=5, metadata={"help": "most biased groups listed"})
    group_ci_resamples: int = field(
        default=1000, metadata={"help": "bootstrap resamples of each group's bias interval"})
    confidence_level: float = field(
        default=0.95, metadata={"help": "level of bias intervals and LCB curve bands"})
    max_points: int = field(
        default=2000, metadata={"help": "observations kept (deterministic subsample) for the "
                                        "LCB scatter plot"})
    curve_points: int = field(
        default=40, metadata={"help": "grid points of each LCB curve"})
    kite_prob_kernel_width: float = field(
        default=0.1, metadata={"help": "klce_permutation: KiTE prob_kernel_width w, "
                                       "k = exp(-(p - q)^2 / w^2)"})
    kite_cov_gamma: float | None = field(
        default=None, metadata={"help": "klce_permutation: KiTE covariate RBF gamma, "
                                        "l = exp(-gamma |x - y|^2); none = 1 / number of "
                                        "covariates (KiTE's default when two-level "
                                        "categories are 0/1 columns)"})
    kite_standardize: bool = field(
        default=False, metadata={"help": "klce_permutation: standardise numeric covariates "
                                         "(KiTE uses them raw)"})
    kite_null: str = field(
        default="centred", metadata={"help": "klce_permutation null: centred (KiTE ELCE2) or "
                                             "uncentred (I-trustworthy notebooks)"})

    def __post_init__(self) -> None:
        check_limits(self, "local")
        check(not isinstance(self.tests, str),
               "local tests must be a list of test ids, not one string")
        tests = tuple(dict.fromkeys(self.tests))
        object.__setattr__(self, "tests", () if tests in (("none",), ("NONE",)) else tests)
        for test in self.tests:
            check(test in LOCAL_TESTS,
                   f"local tests: unknown test {test!r}; choose from {', '.join(LOCAL_TESTS)}")
        value = self.lcb_cv_max_rows
        check(isinstance(value, int) and not isinstance(value, bool) and value >= 10,
              f"local.lcb_cv_max_rows must be an integer >= 10; got {value!r}")
        for name in ("lcb_prob_bandwidth", "lcb_cov_bandwidth"):
            check(positive(getattr(self, name)),
                  f"local.{name} must be a positive number; got {getattr(self, name)!r}")
        check_choice(self.group_adjust, MULTIPLE_TESTING, "group adjustment")
        check(0.0 < self.confidence_level < 1.0,
              f"local.confidence_level must be in (0, 1); got {self.confidence_level!r}")
        check_choice(self.resample_dtype, RESAMPLE_DTYPES, "local.resample_dtype")
        check_choice(self.kite_null, KITE_NULLS, "local.kite_null")
