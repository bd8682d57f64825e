"""Audit configuration: frozen dataclasses, validated on construction.

Every field has a default; ``to_dict`` gives the resolved configuration recorded in the
JSON result. Families of checks own a nested section (``binning`` here; later issues add
``skce``, ``local`` ...).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from calaudit.exceptions import ConfigError
from calaudit.results import Status

MULTIPLE_TESTING = ("holm", "bonferroni", "fdr_bh", "none")
STRATEGIES = ("uniform", "quantile")
KERNELS = ("exponential", "gaussian", "laplacian")
CANONICAL_DISTANCES = ("tv", "l1", "l2")
#: Global test ids (design notes 2.5); ``hosmer_lemeshow`` runs only when asked for.
GLOBAL_TESTS = ("skce_b_bound", "skce_uq_bound", "skce_ul_bound", "skce_ul_asymptotic",
                "skce_uq_asymptotic", "skce_consistency", "ece_consistency", "spiegelhalter",
                "hosmer_lemeshow")
DEFAULT_GLOBAL_TESTS = GLOBAL_TESTS[:-1]


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


@dataclass(frozen=True)
class EceConfig:
    """ECE variants beyond the default binned ECE."""

    canonical_distance: str = field(
        default="tv", metadata={"help": "distance of the canonical ECE between mean "
                                        "prediction and label frequency: tv, l1 or l2"})

    def __post_init__(self) -> None:
        _check(self.canonical_distance in CANONICAL_DISTANCES,
               f"canonical_distance must be one of {', '.join(CANONICAL_DISTANCES)}; "
               f"got {self.canonical_distance!r}")


@dataclass(frozen=True)
class SkceConfig:
    """Squared kernel calibration error (SKCE) estimators and tests."""

    kernel: str = field(default="exponential", metadata={
        "help": "prediction kernel exp(-d/bandwidth): exponential (d = total variation), "
                "gaussian (d = squared Euclidean) or laplacian (d = L1)"})
    bandwidth: float | None = field(default=None, metadata={
        "help": "distance scale 1/gamma of the kernel; unset: median heuristic (median "
                "distance over all pairs, diagonal included)"})
    blocksize: int = field(default=10, metadata={
        "help": "block size of the block estimator skce_block (>= 2)"})
    max_quadratic_n: int = field(default=20_000, metadata={
        "help": "largest n for the quadratic estimators (skce_b, skce_uq) and their tests "
                "and for the exact median; above it they are skipped and the median is "
                "taken on a 5,000-row subsample"})

    def __post_init__(self) -> None:
        _check(self.kernel in KERNELS,
               f"kernel must be one of {', '.join(KERNELS)}; got {self.kernel!r}")
        _check(self.bandwidth is None or (isinstance(self.bandwidth, (int, float))
                                          and 0 < self.bandwidth < float("inf")),
               f"bandwidth must be a positive number; got {self.bandwidth!r}")
        _check(isinstance(self.blocksize, int) and self.blocksize >= 2,
               f"blocksize must be an integer >= 2; got {self.blocksize!r}")
        _check(isinstance(self.max_quadratic_n, int) and self.max_quadratic_n >= 2,
               f"max_quadratic_n must be an integer >= 2; got {self.max_quadratic_n!r}")


@dataclass(frozen=True)
class GlobalTestsConfig:
    """Which global calibration tests run (``calaudit test`` only)."""

    tests: tuple[str, ...] = field(default=DEFAULT_GLOBAL_TESTS, metadata={
        "help": "global test ids to run: " + ", ".join(GLOBAL_TESTS)})
    hosmer_lemeshow: bool = field(default=False, metadata={
        "help": "also run the Hosmer-Lemeshow test (binary; off by default, see docs)"})
    hosmer_lemeshow_groups: int = field(default=10, metadata={
        "help": "Hosmer-Lemeshow groups (quantiles of the predicted probability)"})

    def __post_init__(self) -> None:
        for test in self.tests:
            _check(test in GLOBAL_TESTS,
                   f"unknown global test {test!r}; choose from {', '.join(GLOBAL_TESTS)}")
        _check(isinstance(self.hosmer_lemeshow_groups, int) and self.hosmer_lemeshow_groups >= 3,
               f"hosmer_lemeshow_groups must be an integer >= 3; "
               f"got {self.hosmer_lemeshow_groups!r}")

    def enabled(self, test_id: str) -> bool:
        """Whether ``test_id`` runs."""
        return test_id in self.tests or (test_id == "hosmer_lemeshow" and self.hosmer_lemeshow)


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
    ci: bool = field(default=False, metadata={
        "help": "bootstrap percentile confidence intervals for every metric "
                "(n_resamples resamples; calaudit test only)"})
    ci_level: float = field(default=0.95, metadata={"help": "confidence level of intervals"})
    binning: BinningConfig = field(default_factory=BinningConfig)
    ece: EceConfig = field(default_factory=EceConfig)
    skce: SkceConfig = field(default_factory=SkceConfig)
    global_tests: GlobalTestsConfig = field(default_factory=GlobalTestsConfig)

    def __post_init__(self) -> None:
        _check(0.0 < self.alpha < 1.0, f"alpha must be in (0, 1); got {self.alpha!r}")
        _check(isinstance(self.seed, int) and self.seed >= 0,
               f"seed must be a non-negative integer; got {self.seed!r}")
        _check(isinstance(self.n_resamples, int) and self.n_resamples >= 1,
               f"n_resamples must be a positive integer; got {self.n_resamples!r}")
        _check(self.multiple_testing in MULTIPLE_TESTING,
               f"multiple_testing must be one of {', '.join(MULTIPLE_TESTING)}; "
               f"got {self.multiple_testing!r}")
        _check(0.0 < self.ci_level < 1.0, f"ci_level must be in (0, 1); got {self.ci_level!r}")
        valid = {s.value for s in Status}
        for status in self.fail_on:
            _check(status in valid,
                   f"fail_on: unknown status {status!r}; choose from {', '.join(sorted(valid))}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
