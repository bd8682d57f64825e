"""Settings of the squared calibration errors (Gruber & Bach)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from calaudit.audit.sections.common import check, check_choice, check_limits

SQUARED_TARGETS = ("tce2", "cwce2", "cce2")
SQUARED_ESTIMATORS = ("bin", "kde", "kkr", "ukkr")
SPECTRUM_METHODS = ("low_rank", "exact")


def _grid_size(help_text: str) -> Any:
    return field(default=None, metadata={"help": help_text + " (None: the full grid of "
                                                 "Gruber & Bach, appendix B)"})


@dataclass(frozen=True)
class SquaredConfig:
    """Squared calibration errors with risk-based estimator selection (Gruber & Bach).

    Off by default: every estimator is fitted on ``n_folds`` folds over its grid, O(n^2)
    (``kde``) plus O(n r^2) (``kkr``/``ukkr``) per target, m times more for ``cwce2`` (about a
    CPU-minute for ``cce2`` at n = 10,000). ``max_rows`` skips it on larger files."""

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
        check_limits(self, "squared")
        for name in self.targets:
            check(name in SQUARED_TARGETS, f"squared: unknown target {name!r}; choose from "
                   + ", ".join(SQUARED_TARGETS))
        check(len(self.estimators) > 0, "squared: at least one estimator is needed")
        for name in self.estimators:
            check(name in SQUARED_ESTIMATORS, f"squared: unknown estimator {name!r}; "
                   "choose from " + ", ".join(SQUARED_ESTIMATORS))
        check(0.0 < self.test_fraction < 1.0,
               f"squared.test_fraction must be in (0, 1); got {self.test_fraction!r}")
        check_choice(self.spectrum, SPECTRUM_METHODS, "squared.spectrum")
        check(self.rank_tolerance >= 0,
               f"squared.rank_tolerance must be >= 0; got {self.rank_tolerance!r}")

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
