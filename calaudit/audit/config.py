"""Audit configuration: frozen dataclasses, validated on construction.

Every field has a default; ``to_dict`` gives the resolved configuration recorded in the
JSON result. Families of checks own a nested section (``binning``, ``local``; later issues
add ``skce`` ...). Field types stay TOML-friendly (int, float, str, bool, tuple of str,
None) and every field carries ``metadata["help"]``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from calaudit.exceptions import ConfigError
from calaudit.results import Status

MULTIPLE_TESTING = ("holm", "bonferroni", "fdr_bh", "none")
STRATEGIES = ("uniform", "quantile")
LOCAL_TESTS = ("klce_consistency", "klce_bootstrap", "klce_permutation")
KITE_NULLS = ("centred", "uncentred")
RESAMPLE_DTYPES = ("float32", "float64")


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


@dataclass(frozen=True)
class BinningConfig:
    """Binned estimators (ECE, MCE, reliability diagram)."""

    n_bins: int = field(default=15, metadata={"help": "number of bins"})
    strategy: str = field(default="uniform",
                          metadata={"help": "uniform (equal width) or quantile (equal mass)"})

    def __post_init__(self) -> None:
        _check(isinstance(self.n_bins, int) and self.n_bins >= 1,
               f"n_bins must be a positive integer; got {self.n_bins!r}")
        _check(self.strategy in STRATEGIES,
               f"binning must be one of {', '.join(STRATEGIES)}; got {self.strategy!r}")


def _positive(value: float | None) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                             and value > 0 and value < float("inf"))


@dataclass(frozen=True)
class LocalConfig:
    """Local calibration (KLCE tests, LCB, group table); runs only with covariates.

    Kernels are Gaussian, ``exp(-d^2 / (2 s^2))`` with bandwidth ``s`` (``None``: median
    heuristic, ``s^2`` = median of the non-zero squared distances between rows, taken per
    covariate and pooled by a median for the covariate kernel; see
    ``docs/local-calibration.md``). The ``kite_*`` fields set the KiTE-compatible
    ``klce_permutation`` test.
    """

    tests: tuple[str, ...] = field(
        default=("klce_consistency",),
        metadata={"help": "local tests to run: " + ", ".join(LOCAL_TESTS)})
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
                                        "l = exp(-gamma |x - y|^2); none = 1 / columns"})
    kite_standardize: bool = field(
        default=False, metadata={"help": "klce_permutation: standardise numeric covariates "
                                         "(KiTE uses them raw)"})
    kite_null: str = field(
        default="centred", metadata={"help": "klce_permutation null: centred (KiTE ELCE2) or "
                                             "uncentred (I-trustworthy notebooks)"})

    def __post_init__(self) -> None:
        _check(not isinstance(self.tests, str),
               "local tests must be a list of test ids, not one string")
        object.__setattr__(self, "tests", tuple(dict.fromkeys(self.tests)))
        for test in self.tests:
            _check(test in LOCAL_TESTS,
                   f"local tests: unknown test {test!r}; choose from {', '.join(LOCAL_TESTS)}")
        ints = {"n_resamples": 1, "median_max_rows": 10, "min_group_rows": 1,
                "min_group_events": 0, "n_bands": 1, "top_k": 0, "group_ci_resamples": 1,
                "max_points": 0, "curve_points": 2}
        for name, low in ints.items():
            value = getattr(self, name)
            _check(isinstance(value, int) and not isinstance(value, bool) and value >= low,
                   f"local.{name} must be an integer >= {low}; got {value!r}")
        for name in ("prob_bandwidth", "cov_bandwidth", "kite_cov_gamma"):
            _check(_positive(getattr(self, name)),
                   f"local.{name} must be a positive number; got {getattr(self, name)!r}")
        _check(_positive(self.kite_prob_kernel_width) and self.kite_prob_kernel_width is not None,
               f"local.kite_prob_kernel_width must be a positive number; "
               f"got {self.kite_prob_kernel_width!r}")
        _check(self.group_adjust in MULTIPLE_TESTING,
               f"group adjustment must be one of {', '.join(MULTIPLE_TESTING)}; "
               f"got {self.group_adjust!r}")
        _check(0.0 < self.confidence_level < 1.0,
               f"local.confidence_level must be in (0, 1); got {self.confidence_level!r}")
        _check(self.resample_dtype in RESAMPLE_DTYPES,
               f"local.resample_dtype must be one of {', '.join(RESAMPLE_DTYPES)}; "
               f"got {self.resample_dtype!r}")
        _check(self.kite_null in KITE_NULLS,
               f"local.kite_null must be one of {', '.join(KITE_NULLS)}; got {self.kite_null!r}")


@dataclass(frozen=True)
class AuditConfig:
    """Settings of one audit (design notes 2.1 and 2.4)."""

    alpha: float = field(default=0.05, metadata={"help": "test level"})
    seed: int = field(default=0, metadata={"help": "seed of every random choice"})
    n_resamples: int = field(default=1000, metadata={"help": "resamples of global tests"})
    multiple_testing: str = field(
        default="holm", metadata={"help": "adjustment across the battery: "
                                          + ", ".join(MULTIPLE_TESTING)})
    fail_on: tuple[str, ...] = field(default=("FAIL", "ERROR"),
                                     metadata={"help": "statuses that fail the gate"})
    run_tests: bool = field(default=True,
                            metadata={"help": "run hypothesis tests (false: estimates only)"})
    binning: BinningConfig = field(default_factory=BinningConfig)
    local: LocalConfig = field(default_factory=LocalConfig)

    def __post_init__(self) -> None:
        _check(0.0 < self.alpha < 1.0, f"alpha must be in (0, 1); got {self.alpha!r}")
        _check(isinstance(self.seed, int) and self.seed >= 0,
               f"seed must be a non-negative integer; got {self.seed!r}")
        _check(isinstance(self.n_resamples, int) and self.n_resamples >= 1,
               f"n_resamples must be a positive integer; got {self.n_resamples!r}")
        _check(self.multiple_testing in MULTIPLE_TESTING,
               f"multiple_testing must be one of {', '.join(MULTIPLE_TESTING)}; "
               f"got {self.multiple_testing!r}")
        valid = {s.value for s in Status}
        for status in self.fail_on:
            _check(status in valid,
                   f"fail_on: unknown status {status!r}; choose from {', '.join(sorted(valid))}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
