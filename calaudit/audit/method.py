"""Exact or random-feature computation of a kernel test: the ``method`` rule.

``method = "exact"``: the pairwise engine (O(n^2) kernel entries per pass).
``method = "features"``: random Fourier features (:mod:`calaudit.numerics.features`,
O(n D) per pass), the test's p-value still exact-conditional.
``method = "auto"`` (default): features when the exact path of the test is estimated to
take longer than ``exact_budget_seconds`` (or cannot run, e.g. the SKCE above
``skce.max_quadratic_n``), else exact. The estimate is

    ``seconds = n^2 (columns + KERNEL_FLOPS) / NOMINAL_FLOPS``

(``n^2 / 2`` kernel entries, each evaluated once and multiplied by every resampled column
in a GEMM, 2 flops per entry and column; ``columns`` = classes x resamples). Every test
records the outcome in ``params.computation`` (method, requested, reason, ``D``, the
frequencies' seed and the approximation error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calaudit.numerics.features import default_n_features
from calaudit.numerics.row_blocks import ROW_BLOCK

#: How a features run draws (``params.computation.draws``, docs/scale.md).
DRAWS = ("per row block from (seed, stream, block index): labels by 32-bit integer "
         "thresholds; bootstrap counts exact multinomial factorised over the blocks")
#: How a features run computes (``params.computation.precision``).
PRECISION = ("feature map rounded to a grid; float32 block GEMMs exact (no rounding), "
             "so results do not depend on chunking, partitioning or workers")

#: Nominal double-precision rate of the estimate (two cores of the benchmark machine).
NOMINAL_FLOPS = 5e10
#: Cost of one kernel evaluation (distance and ``exp``) in flop equivalents.
KERNEL_FLOPS = 25


def exact_seconds(n: int, columns: int) -> float:
    """Estimated seconds of one exact resampling pass (module docstring)."""
    return float(n) * float(n) * (columns + KERNEL_FLOPS) / NOMINAL_FLOPS


@dataclass(frozen=True)
class MethodChoice:
    """Which path a test takes and why."""

    method: str
    requested: str
    reason: str
    n_features: int | None = None
    frequency_seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def features(self) -> bool:
        return self.method == "features"

    def to_params(self, **more: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.method, "requested": self.requested,
                               "reason": self.reason}
        if "estimated_exact_seconds" in self.extra:
            out["estimated_exact_seconds"] = self.extra["estimated_exact_seconds"]
        if self.features:
            out.update(n_features=self.n_features, frequency_seed=self.frequency_seed,
                       n_features_rule="given" if self.extra.get("given") else
                       "largest multiple of 64 with 2 n D columns <= 1e11, in [256, 2048]",
                       row_block=ROW_BLOCK, draws=DRAWS, precision=PRECISION)
        out.update(more)
        return out


def choose_method(config: Any, n: int, columns: int, rng: np.random.Generator,
                  exact_possible: bool = True, limit_note: str = "") -> MethodChoice:
    """The path of one test with ``columns`` resampled columns (classes x resamples).

    ``rng`` gives the integer seed of the frequencies (drawn whatever the outcome, so the
    stage's other streams never depend on it); ``exact_possible=False`` (with
    ``limit_note`` saying why) sends ``auto`` to the features.
    """
    seed = int(rng.integers(0, 2**62))
    requested = config.method
    estimate = exact_seconds(n, columns)
    timing = {"estimated_exact_seconds": estimate}
    if requested == "exact":
        return MethodChoice("exact", requested, "requested", extra=timing)
    if requested == "auto" and exact_possible and estimate <= config.exact_budget_seconds:
        return MethodChoice("exact", requested,
                            "estimated exact time <= exact_budget_seconds", extra=timing)
    if requested == "features":
        reason = "requested"
    elif not exact_possible:
        reason = limit_note
    else:
        reason = "estimated exact time > exact_budget_seconds"
    given = config.n_features is not None
    d = config.n_features if given else default_n_features(n, columns)
    return MethodChoice("features", requested, reason, int(d) + int(d) % 2, seed,
                        {"given": given, **timing})
