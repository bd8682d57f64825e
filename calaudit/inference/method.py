"""Exact or random-feature computation of a kernel test: the ``method`` rule.

``"exact"``: the pairwise engine (O(n^2) per pass); ``"features"``: random Fourier
features (O(n D), p-value still exact-conditional); ``"auto"``: features when the exact
path is estimated to take longer than ``exact_budget_seconds`` (or cannot run), with

    ``seconds = n^2 (columns / NOMINAL_FLOPS + fixed + DIM_SECONDS max(0, dims - BASE_DIMS))``

(``columns`` = classes x resamples; ``fixed`` :data:`KERNEL_SECONDS` or
:data:`LOCAL_STAGE_SECONDS`; ``dims`` the kernel's input columns). The constants are
single-core figures (``benchmarks/auto_estimate.py``). The outcome is recorded in
``params.computation``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calaudit.numerics.features import default_n_features
from calaudit.scale import ROW_BLOCK

#: How a features run draws (``params.computation.draws``, docs/scale.md).
DRAWS = ("per row block from (seed, stream, block index): labels by 32-bit integer "
         "thresholds; bootstrap counts exact multinomial factorised over the blocks")
#: How a features run computes (``params.computation.precision``).
PRECISION = ("feature map rounded to a grid; float32 block GEMMs exact (no rounding), "
             "so results do not depend on chunking, partitioning or workers")

#: Rate of the resampling GEMMs in the estimate (flops per second).
NOMINAL_FLOPS = 5e10
#: Seconds per entry (of n^2) of the SKCE's kernel evaluation (distance and ``exp``).
KERNEL_SECONDS = 25 / NOMINAL_FLOPS
#: Seconds per entry (of n^2) of the local stage's passes that do not grow with the
#: resamples: the test kernel's and the LCB's kernel evaluations, the curves and rows.
LOCAL_STAGE_SECONDS = 4e-8
#: Seconds per entry (of n^2) of each kernel input column past ``BASE_DIMS`` (the
#: distance's share of the kernel evaluation, which ``fixed`` covers up to ``BASE_DIMS``).
BASE_DIMS = 16
DIM_SECONDS = 25 / NOMINAL_FLOPS


def exact_seconds(n: int, columns: int, fixed: float = KERNEL_SECONDS, dims: int = 0
                  ) -> float:
    """Estimated seconds of the exact path (module docstring)."""
    per_entry = columns / NOMINAL_FLOPS + fixed + DIM_SECONDS * max(0, dims - BASE_DIMS)
    return float(n) * float(n) * per_entry


@dataclass(frozen=True)
class Computation:
    """The ``method`` rule's settings: ``method``, ``n_features`` (``D``; ``None``: the size
    rule) and ``exact_budget_seconds`` (``auto``'s budget for the exact path)."""

    method: str = "auto"
    n_features: int | None = None
    exact_budget_seconds: float = 10.0

    def __post_init__(self) -> None:
        if self.method not in ("auto", "exact", "features"):
            raise ValueError(f"method must be auto, exact or features; got {self.method!r}")


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
                  exact_possible: bool = True, limit_note: str = "",
                  fixed: float = KERNEL_SECONDS, dims: int = 0) -> MethodChoice:
    """The path of one test with ``columns`` resampled columns (classes x resamples) and
    a kernel on ``dims`` input columns under ``config`` (a :class:`Computation` or alike).
    ``rng`` gives the frequencies' seed (drawn whatever the outcome);
    ``exact_possible=False`` (``limit_note`` says why) sends ``auto`` to the features;
    ``fixed``: the per-entry seconds of the passes that do not grow with the resamples."""
    seed = int(rng.integers(0, 2**62))
    requested = config.method
    estimate = exact_seconds(n, columns, fixed, dims)
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
