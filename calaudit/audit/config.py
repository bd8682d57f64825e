"""Audit configuration: frozen dataclasses, validated on construction.

Every field has a default; ``to_dict`` gives the resolved configuration recorded in the
JSON result. Families of checks own a nested section (``binning``, ``skce``, ``local``,
...). The configuration layer (``calaudit.settings``) walks these dataclasses generically:
a section is a dataclass field, a keyed table (``[thresholds.ece]``) is a
``tuple[Dataclass, ...]`` field whose metadata names the key field, everything else is
a TOML scalar or a tuple of scalars with ``metadata={"help": ...}``. Validation lives in
``__post_init__`` and raises :class:`ConfigError`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from calaudit.audit.directions import BETTER_CHOICES, Direction, known_direction
from calaudit.exceptions import ConfigError
from calaudit.results import Status

MULTIPLE_TESTING = ("holm", "bonferroni", "fdr_bh", "none")
MULTIPLE_TESTING_SCOPES = ("family", "battery")
STRATEGIES = ("uniform", "quantile")
ON_MISMATCH = ("error", "warn")
KERNELS = ("exponential", "gaussian", "laplacian")
CANONICAL_DISTANCES = ("tv", "l1", "l2")
#: Global test ids (design notes 2.5); ``hosmer_lemeshow`` runs only when asked for.
GLOBAL_TESTS = ("skce_b_bound", "skce_uq_bound", "skce_ul_bound", "skce_ul_asymptotic",
                "skce_uq_asymptotic", "skce_consistency", "ece_consistency", "spiegelhalter",
                "hosmer_lemeshow")
DEFAULT_GLOBAL_TESTS = GLOBAL_TESTS[:-1]
LOCAL_TESTS = ("klce_consistency", "klce_bootstrap", "klce_permutation")
KITE_NULLS = ("centred", "uncentred")
RESAMPLE_DTYPES = ("float32", "float64")
SQUARED_TARGETS = ("tce2", "cwce2", "cce2")
SQUARED_ESTIMATORS = ("bin", "kde", "kkr", "ukkr")
SPECTRUM_METHODS = ("low_rank", "exact")


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


def _finite_or_none(value: object, name: str) -> None:
    _check(value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                             and math.isfinite(value)),
           f"{name} must be a finite number; got {value!r}")


@dataclass(frozen=True)
class ThresholdConfig:
    """Gate levels for one metric, keyed by its id: ``[thresholds.ece] warn = 0.03, fail = 0.05``.

    For a lower-is-better metric the value passes up to ``warn``, is ``WARN`` up to ``fail``
    and ``FAIL`` above it (a value equal to a level is on the good side). For
    ``better = "higher"`` the levels are minima. With a ``target`` (registered for
    ``calibration_slope``: 1) the levels bound the distance ``|value - target|``.
    ``tolerance`` overrides ``baseline.tolerance`` for this metric.
    """

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
        _check(isinstance(self.metric, str) and self.metric != "",
               f"threshold: metric id must be a non-empty string; got {self.metric!r}")
        where = f"thresholds.{self.metric}"
        for name in ("warn", "fail", "target", "tolerance"):
            _finite_or_none(getattr(self, name), f"{where}.{name}")
        _check(self.better in BETTER_CHOICES,
               f"{where}.better must be one of {', '.join(BETTER_CHOICES)}; "
               f"got {self.better!r}")
        _check(self.target is None or self.better == "auto",
               f"{where}: give either target or better, not both")
        _check(self.tolerance is None or self.tolerance >= 0,
               f"{where}.tolerance must be >= 0; got {self.tolerance!r}")
        direction = self.direction()
        if direction.better == "target":
            for name in ("warn", "fail"):
                value = getattr(self, name)
                _check(value is None or value >= 0,
                       f"{where}.{name} bounds |value - target| and must be >= 0; got {value!r}")
        if self.warn is not None and self.fail is not None:
            ordered = self.warn >= self.fail if direction.better == "higher" else (
                self.warn <= self.fail)
            _check(ordered, f"{where}: warn ({self.warn}) must be "
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
        return known_direction(self.metric) or Direction("lower")


@dataclass(frozen=True)
class GateConfig:
    """INCONCLUSIVE rules: with too little data no check is reported as PASS."""

    min_rows: int = field(default=50, metadata={
        "help": "fewer rows: PASS becomes INCONCLUSIVE"})
    min_events: int = field(default=5, metadata={
        "help": "fewer events (binary: rows of the rarer class; multi-class: the rarer of "
                "top-label hits and misses): PASS becomes INCONCLUSIVE"})

    def __post_init__(self) -> None:
        for name in ("min_rows", "min_events"):
            value = getattr(self, name)
            _check(isinstance(value, int) and not isinstance(value, bool) and value >= 0,
                   f"gate.{name} must be a non-negative integer; got {value!r}")


@dataclass(frozen=True)
class BaselineConfig:
    """Comparison with a previous result (``--baseline OLD.json``, ``calaudit compare``).

    A metric regresses when it is worse than in the baseline by more than
    ``max(tolerance, relative_tolerance * |old|)``; a check that newly has a status in
    ``fail_on`` regresses too.
    """

    path: str | None = field(default=None, metadata={
        "help": "JSON result to compare against", "path": True})
    tolerance: float = field(default=0.01, metadata={
        "help": "allowed absolute worsening of a metric"})
    relative_tolerance: float = field(default=0.0, metadata={
        "help": "allowed worsening relative to the baseline value"})
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
            _finite_or_none(value, f"baseline.{name}")
            _check(value >= 0, f"baseline.{name} must be >= 0; got {value!r}")
        _check(self.on_mismatch in ON_MISMATCH,
               f"baseline.on_mismatch must be one of {', '.join(ON_MISMATCH)}; "
               f"got {self.on_mismatch!r}")


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
        metadata={"help": "local tests to run: " + ", ".join(LOCAL_TESTS) + " (none: only "
                          "the statistic and diagnostics)"})
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
        tests = tuple(dict.fromkeys(self.tests))
        object.__setattr__(self, "tests", () if tests in (("none",), ("NONE",)) else tests)
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


def _grid_size(help_text: str) -> Any:
    return field(default=None, metadata={"help": help_text + " (None: the full grid of "
                                                 "Gruber & Bach, appendix B)"})


@dataclass(frozen=True)
class SquaredConfig:
    """Squared calibration errors with risk-based estimator selection (Gruber & Bach).

    Off by default: the pipeline fits every estimator on ``n_folds`` folds for its whole
    grid, which costs O(n^2) (``kde``) plus O(n r^2) (``kkr``/``ukkr``, r the kernel
    rank) per target and m times more for ``cwce2``: seconds at n = 1,000, about a minute
    of CPU for ``cce2`` at n = 10,000, against well under a second for the rest of the
    battery. ``--squared`` or ``enabled = true`` turns it on; ``max_rows`` optionally skips
    it (with a note in the metric's ``params``) on larger files.
    """

    enabled: bool = field(default=False, metadata={
        "help": "estimate squared calibration errors (the command-line --squared sets it)"})
    max_rows: int | None = field(default=None, metadata={
        "help": "skip them above this many rows (None: no limit)"})
    targets: tuple[str, ...] = field(default=SQUARED_TARGETS, metadata={
        "help": "squared errors to estimate: " + ", ".join(SQUARED_TARGETS)})
    estimators: tuple[str, ...] = field(default=SQUARED_ESTIMATORS, metadata={
        "help": "estimators compared by their cross-validated risk: "
                + ", ".join(SQUARED_ESTIMATORS)})
    n_folds: int = field(default=5, metadata={"help": "cross-validation folds"})
    test_fraction: float = field(default=0.2, metadata={
        "help": "share of rows held out for the final estimate"})
    bin_grid_size: int | None = _grid_size("numbers of bins tried by bin")
    kde_grid_size: int | None = _grid_size("bandwidths tried by kde")
    kkr_grid_size: int | None = _grid_size("ridge constants tried by kkr")
    ukkr_grid_size: int | None = _grid_size("ridge constants tried by ukkr")
    kernel_gamma: float = field(default=0.5, metadata={
        "help": "gamma of the Gaussian kernel exp(-gamma ||x - x'||^2) of kkr and ukkr"})
    kkr_lambda_exponent: float = field(default=-0.5, metadata={
        "help": "a in lambda = n^a * grid value for kkr (published code: -0.5)"})
    ukkr_lambda_exponent: float = field(default=-0.25, metadata={
        "help": "a in lambda = n^a * grid value for ukkr (published code: -0.25)"})
    spectrum: str = field(default="low_rank", metadata={
        "help": "kernel eigendecomposition for kkr/ukkr: low_rank (pivoted Cholesky, "
                "O(n r^2)) or exact (O(n^3) time, O(n^2) memory)"})
    rank_tolerance: float = field(default=1e-10, metadata={
        "help": "low_rank: stop when every residual kernel diagonal entry is below this"})
    max_rank: int = field(default=4000, metadata={"help": "low_rank: at most this rank"})

    def __post_init__(self) -> None:
        for name in self.targets:
            _check(name in SQUARED_TARGETS, f"squared: unknown target {name!r}; choose from "
                   + ", ".join(SQUARED_TARGETS))
        _check(len(self.estimators) > 0, "squared: at least one estimator is needed")
        for name in self.estimators:
            _check(name in SQUARED_ESTIMATORS, f"squared: unknown estimator {name!r}; "
                   "choose from " + ", ".join(SQUARED_ESTIMATORS))
        _check(self.max_rows is None or (isinstance(self.max_rows, int) and self.max_rows >= 1),
               f"squared.max_rows must be a positive integer or None; got {self.max_rows!r}")
        _check(isinstance(self.n_folds, int) and self.n_folds >= 2,
               f"squared.n_folds must be an integer >= 2; got {self.n_folds!r}")
        _check(0.0 < self.test_fraction < 1.0,
               f"squared.test_fraction must be in (0, 1); got {self.test_fraction!r}")
        for name in ("bin", "kde", "kkr", "ukkr"):
            size = getattr(self, f"{name}_grid_size")
            _check(size is None or (isinstance(size, int) and size >= 1),
                   f"squared.{name}_grid_size must be a positive integer or None; got {size!r}")
        _check(self.kernel_gamma > 0,
               f"squared.kernel_gamma must be > 0; got {self.kernel_gamma!r}")
        _check(self.spectrum in SPECTRUM_METHODS, "squared.spectrum must be one of "
               + ", ".join(SPECTRUM_METHODS) + f"; got {self.spectrum!r}")
        _check(self.rank_tolerance >= 0,
               f"squared.rank_tolerance must be >= 0; got {self.rank_tolerance!r}")
        _check(isinstance(self.max_rank, int) and self.max_rank >= 1,
               f"squared.max_rank must be a positive integer; got {self.max_rank!r}")

    def grid_sizes(self) -> dict[str, int | None]:
        return {name: getattr(self, f"{name}_grid_size") for name in SQUARED_ESTIMATORS}

    @classmethod
    def from_options(cls, targets: str | None, estimators: str | None) -> SquaredConfig:
        """From the command line: ``--squared`` (``off``/``none``, ``all`` or a comma list
        of targets) and ``--squared-estimators`` (a comma list; alone it means
        ``--squared all``)."""
        chosen = _words(estimators) or SQUARED_ESTIMATORS
        if targets is None:
            return cls(enabled=estimators is not None, estimators=chosen)
        words = _words(targets)
        if words in ((), ("off",), ("none",)):
            return cls(enabled=False, estimators=chosen)
        if words == ("all",):
            words = SQUARED_TARGETS
        return cls(enabled=True, targets=words, estimators=chosen)


def _words(text: str | None) -> tuple[str, ...]:
    return tuple(w.strip().lower() for w in (text or "").split(",") if w.strip())


@dataclass(frozen=True)
class AuditConfig:
    """Settings of one audit (design notes 2.1 and 2.4)."""

    alpha: float = field(default=0.05, metadata={"help": "test level"})
    seed: int = field(default=0, metadata={"help": "seed of every random choice"})
    n_resamples: int = field(default=1000, metadata={"help": "resamples of global tests"})
    multiple_testing: str = field(
        default="holm", metadata={"help": "adjustment across the battery: "
                                          + ", ".join(MULTIPLE_TESTING)})
    multiple_testing_scope: str = field(
        default="family", metadata={
            "help": "family: adjust within each family of tests (global: is the model "
                    "calibrated? local: is it calibrated in every sub-population?); "
                    "battery: adjust all tests together (stricter)"})
    fail_on: tuple[str, ...] = field(default=("FAIL", "ERROR"),
                                     metadata={"help": "statuses that fail the gate"})
    exit_zero: bool = field(default=False, metadata={
        "help": "report without gating: exit 0 whatever the statuses"})
    run_tests: bool = field(default=True,
                            metadata={"help": "run hypothesis tests (false: estimates only)"})
    ci: bool = field(default=False, metadata={
        "help": "bootstrap percentile confidence intervals for every metric "
                "(n_resamples resamples; calaudit test only)"})
    ci_level: float = field(default=0.95, metadata={"help": "confidence level of intervals"})
    binning: BinningConfig = field(default_factory=BinningConfig)
    thresholds: tuple[ThresholdConfig, ...] = field(default=(), metadata={
        "help": "gate levels per metric: [thresholds.<metric id>]", "key": "metric"})
    gate: GateConfig = field(default_factory=GateConfig)
    baseline: BaselineConfig = field(default_factory=BaselineConfig)
    ece: EceConfig = field(default_factory=EceConfig)
    skce: SkceConfig = field(default_factory=SkceConfig)
    global_tests: GlobalTestsConfig = field(default_factory=GlobalTestsConfig)
    local: LocalConfig = field(default_factory=LocalConfig)
    squared: SquaredConfig = field(default_factory=SquaredConfig)

    def __post_init__(self) -> None:
        fail_on = self.fail_on.split(",") if isinstance(self.fail_on, str) else self.fail_on
        object.__setattr__(self, "fail_on",
                           tuple(str(s).strip().upper() for s in fail_on if str(s).strip()))
        _check(0.0 < self.alpha < 1.0, f"alpha must be in (0, 1); got {self.alpha!r}")
        _check(isinstance(self.seed, int) and self.seed >= 0,
               f"seed must be a non-negative integer; got {self.seed!r}")
        _check(isinstance(self.n_resamples, int) and self.n_resamples >= 1,
               f"n_resamples must be a positive integer; got {self.n_resamples!r}")
        _check(self.multiple_testing in MULTIPLE_TESTING,
               f"multiple_testing must be one of {', '.join(MULTIPLE_TESTING)}; "
               f"got {self.multiple_testing!r}")
        _check(self.multiple_testing_scope in MULTIPLE_TESTING_SCOPES,
               "multiple_testing_scope must be one of " + ", ".join(MULTIPLE_TESTING_SCOPES)
               + f"; got {self.multiple_testing_scope!r}")
        _check(0.0 < self.ci_level < 1.0, f"ci_level must be in (0, 1); got {self.ci_level!r}")
        valid = {s.value for s in Status}
        for status in self.fail_on:
            _check(status in valid,
                   f"fail_on: unknown status {status!r}; choose from {', '.join(sorted(valid))}")
        metrics = [t.metric for t in self.thresholds]
        duplicates = sorted({m for m in metrics if metrics.count(m) > 1})
        _check(not duplicates, f"thresholds: more than one entry for {', '.join(duplicates)}")

    def threshold(self, metric_id: str) -> ThresholdConfig | None:
        """The threshold entry of ``metric_id``, if any."""
        return next((t for t in self.thresholds if t.metric == metric_id), None)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
