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
