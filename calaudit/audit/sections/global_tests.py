"""Settings of the global battery: ECE variants, the SKCE kernel, which tests run."""

from __future__ import annotations

from dataclasses import dataclass, field

from calaudit import registry
from calaudit.audit.sections.common import check, check_choice, check_limits

KERNELS = ("exponential", "gaussian", "laplacian")
CANONICAL_DISTANCES = ("tv", "l1", "l2")
#: Global test ids, in report order (:mod:`calaudit.registry`); ``hosmer_lemeshow`` runs
#: only when asked for.
GLOBAL_TESTS = registry.tests_of("global_tests")
#: The tests run by default. The distribution-free bounds (``*_bound``) run only when asked
#: for: they are valid at any n but could not reject in simulation below a few thousand
#: rows (each reports the smallest p-value it can reach at this n in
#: ``params.smallest_p_value``).
DEFAULT_GLOBAL_TESTS = registry.tests_of("global_tests", default=True)


@dataclass(frozen=True)
class EceConfig:
    """ECE variants beyond the default binned ECE."""

    canonical_distance: str = field(
        default="tv", metadata={"help": "distance of the canonical ECE between mean "
                                        "prediction and label frequency: tv, l1 or l2"})

    def __post_init__(self) -> None:
        check_choice(self.canonical_distance, CANONICAL_DISTANCES, "canonical_distance")


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
        check_limits(self, "skce")
        check_choice(self.kernel, KERNELS, "kernel")


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
        check_limits(self, "global_tests")
        for test in self.tests:
            check(test in GLOBAL_TESTS,
                   f"unknown global test {test!r}; choose from {', '.join(GLOBAL_TESTS)}")

    def enabled(self, test_id: str) -> bool:
        """Whether ``test_id`` runs."""
        return test_id in self.tests or (test_id == "hosmer_lemeshow" and self.hosmer_lemeshow)
