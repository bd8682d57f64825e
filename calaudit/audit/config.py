"""Audit configuration: frozen dataclasses with defaults, validated in ``__post_init__``
(:class:`ConfigError`); ``to_dict`` gives the resolved configuration the JSON records.
``calaudit.settings`` walks them generically (:mod:`calaudit.settings.schema`)."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any

from calaudit.audit.sections.common import (
    MULTIPLE_TESTING,
    check,
    check_choice,
    check_limits,
    positive,
)
from calaudit.audit.sections.gate import ON_MISMATCH, BaselineConfig, GateConfig, ThresholdConfig
from calaudit.audit.sections.global_tests import (
    CANONICAL_DISTANCES,
    DEFAULT_GLOBAL_TESTS,
    GLOBAL_TESTS,
    KERNELS,
    EceConfig,
    GlobalTestsConfig,
    SkceConfig,
)
from calaudit.audit.sections.local import KITE_NULLS, LOCAL_TESTS, RESAMPLE_DTYPES, LocalConfig
from calaudit.audit.sections.monitoring import MonitoringConfig
from calaudit.audit.sections.squared import (
    SPECTRUM_METHODS,
    SQUARED_ESTIMATORS,
    SQUARED_TARGETS,
    SquaredConfig,
)
from calaudit.numerics.random import one_seed
from calaudit.results import Status

__all__ = [
    "AuditConfig", "BinningConfig", "ThresholdConfig", "GateConfig", "BaselineConfig",
    "EceConfig", "SkceConfig", "GlobalTestsConfig", "LocalConfig", "SquaredConfig",
    "MonitoringConfig",
    "MULTIPLE_TESTING", "MULTIPLE_TESTING_SCOPES", "STRATEGIES", "ON_MISMATCH", "KERNELS",
    "CANONICAL_DISTANCES", "GLOBAL_TESTS", "DEFAULT_GLOBAL_TESTS", "LOCAL_TESTS",
    "KITE_NULLS", "RESAMPLE_DTYPES", "SQUARED_TARGETS", "SQUARED_ESTIMATORS",
    "SPECTRUM_METHODS", "METHODS",
]

MULTIPLE_TESTING_SCOPES = ("primary", "battery", "family")
METHODS = ("auto", "exact", "features")
STRATEGIES = ("uniform", "quantile")


@dataclass(frozen=True)
class BinningConfig:
    """Binned estimators (ECE, MCE, reliability diagram)."""

    n_bins: int = field(default=15, metadata={"help": "number of bins"})
    strategy: str = field(default="uniform",
                          metadata={"help": "uniform (equal width) or quantile (equal mass)"})

    def __post_init__(self) -> None:
        check_limits(self, "binning")
        check_choice(self.strategy, STRATEGIES, "binning")


@dataclass(frozen=True)
class AuditConfig:
    """Settings of one audit.

    The seed is ``random_state`` in Python (``AuditConfig(random_state=1)``, as
    scikit-learn); ``seed`` (its name in configuration files and ``--seed``) and ``rng``
    (scipy's name) are accepted as aliases.
    """

    alpha: float = field(default=0.05, metadata={"help": "test level"})
    seed: int = field(default=0, metadata={"help": "seed of every random choice"})
    n_resamples: int = field(default=1000, metadata={"help": "resamples of global tests"})
    multiple_testing: str = field(
        default="holm", metadata={"help": "adjustment across the battery: "
                                          + ", ".join(MULTIPLE_TESTING)})
    multiple_testing_scope: str = field(
        default="primary", metadata={
            "help": "primary: one primary test per question (global, local) decides, the "
                    "primaries adjusted together, other tests are diagnostics (family-wise "
                    "error <= alpha); battery: every test gates, all adjusted together "
                    "(<= alpha, less power); family: every test gates, adjusted within its "
                    "family (gives up the guarantee: up to alpha per family)"})
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
    method: str = field(default="auto", metadata={
        "help": "how kernel statistics (SKCE, KLCE) are computed: exact (pairwise, O(n^2)), "
                "features (random Fourier features, O(n D)) or auto (features when the "
                "exact path's estimated time exceeds exact_budget_seconds)"})
    n_features: int | None = field(default=None, metadata={
        "help": "random Fourier features D of the features method; none = the size rule "
                "(docs/scale.md)"})
    exact_budget_seconds: float = field(default=10.0, metadata={
        "help": "method = auto: a test whose exact path is estimated to take longer "
                "(nominal 50 GFLOP/s) uses random features"})
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
    monitoring: MonitoringConfig = field(default_factory=MonitoringConfig)
    executor: Any = field(default=None, compare=False, repr=False, metadata={
        "setting": False,
        "help": "where row reductions run: an object with map_sum(partial, ranges, shared) "
                "(calaudit.scale.DaskExecutor); None runs them in this process. Not a "
                "setting and not recorded: the result is the same bytes either way"})

    def __post_init__(self) -> None:
        fail_on = self.fail_on.split(",") if isinstance(self.fail_on, str) else self.fail_on
        object.__setattr__(self, "fail_on",
                           tuple(str(s).strip().upper() for s in fail_on if str(s).strip()))
        check_limits(self, "")
        check(0.0 < self.alpha < 1.0, f"alpha must be in (0, 1); got {self.alpha!r}")
        check_choice(self.multiple_testing, MULTIPLE_TESTING, "multiple_testing")
        check_choice(self.multiple_testing_scope, MULTIPLE_TESTING_SCOPES,
                     "multiple_testing_scope")
        check(0.0 < self.ci_level < 1.0, f"ci_level must be in (0, 1); got {self.ci_level!r}")
        check_choice(self.method, METHODS, "method")
        check(positive(self.exact_budget_seconds) and self.exact_budget_seconds is not None,
              f"exact_budget_seconds must be a positive number; "
              f"got {self.exact_budget_seconds!r}")
        valid = {s.value for s in Status} - {Status.NO_CHECKS.value}
        for status in self.fail_on:
            check(status in valid,
                   f"fail_on: unknown status {status!r}; choose from {', '.join(sorted(valid))}")
        metrics = [t.metric for t in self.thresholds]
        duplicates = sorted({m for m in metrics if metrics.count(m) > 1})
        check(not duplicates, f"thresholds: more than one entry for {', '.join(duplicates)}")
        check(self.executor is None or callable(getattr(self.executor, "map_sum", None)),
              f"executor must have a map_sum(partial, ranges, shared) method; "
              f"got {type(self.executor).__name__}")

    @property
    def random_state(self) -> int:
        """The seed of every random choice (``seed`` in files and ``--seed``)."""
        return self.seed

    def threshold(self, metric_id: str) -> ThresholdConfig | None:
        """The threshold entry of ``metric_id``, if any."""
        return next((t for t in self.thresholds if t.metric == metric_id), None)

    def to_dict(self) -> dict[str, Any]:
        """The settings, as recorded in the JSON result (without the executor)."""
        values = dataclasses.asdict(dataclasses.replace(self, executor=None))
        return {f.name: values[f.name] for f in dataclasses.fields(self)
                if f.metadata.get("setting", True)}


def _accept_seed_aliases(init):
    """``AuditConfig(random_state=...)`` (scikit-learn's name, the API's) and ``rng=...``
    (scipy's) are aliases of the ``seed`` field (the configuration key and ``--seed``)."""

    @functools.wraps(init)
    def __init__(self, *args: Any, random_state: int | None = None, rng: int | None = None,
                 **kwargs: Any) -> None:
        if random_state is not None or rng is not None:
            kwargs["seed"] = one_seed(random_state=random_state, rng=rng,
                                      seed=kwargs.get("seed"))
        init(self, *args, **kwargs)

    return __init__


AuditConfig.__init__ = _accept_seed_aliases(AuditConfig.__init__)  # type: ignore[method-assign]
