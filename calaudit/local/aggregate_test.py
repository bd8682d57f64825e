"""``local_consistency``: the local aggregate test on the exact and the random-feature path.

Members, all on the redraws of the stream ``klce_consistency`` (so the KLCE member's
p-value is ``klce_consistency``'s):

* the KLCE^2 at the median-heuristic bandwidths (:mod:`calaudit.local.klce`);
* the recalibration score statistics (:mod:`calaudit.local.score_members`): one per
  covariate and one for all covariates together (the power against a bias by group that
  the median heuristic's wide covariate kernel dilutes).

They are combined by :func:`calaudit.local.aggregate.combine` with equal weights.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.local.aggregate import AggregateResult, MemberValues, combine
from calaudit.local.resampling import NullResult, consistency_test
from calaudit.local.score_draws import redrawn_sums
from calaudit.local.score_members import ScoreMembers
from calaudit.local.score_rows import level_codes, score_pass
from calaudit.numerics.kernels import Gram
from calaudit.numerics.pairwise import as_columns
from calaudit.scale import stream_seed

__all__ = ["KERNEL_MEMBER", "METHOD", "exact_aggregate", "feature_aggregate", "feature_seed",
           "level_codes", "member_values", "score_aggregate"]

KERNEL_MEMBER = "KLCE^2, median-heuristic bandwidths"
METHOD = ("labels redrawn from the predictions, y*_i ~ Cat(p_i), predictions and covariates "
          "fixed; members: a recalibration score statistic per covariate and for all "
          "covariates together, and KLCE^2; statistic A = max_j log(w_j / q_j) with q_j "
          "a member's tail probability; p = (1 + #{A* >= A}) / (1 + B)")


def member_values(scores: ScoreMembers, sums: NDArray[np.float64],
             top: NDArray[np.float64] | None, kernel: NDArray[np.float64],
             kernel_p: float) -> list[MemberValues]:
    values = scores.statistics(sums, top)
    out = [MemberValues(name, "score", values[k], float(df))
           for k, (name, df) in enumerate(zip(scores.names, scores.degrees_of_freedom(),
                                              strict=True))]
    return out + [MemberValues(KERNEL_MEMBER, "kernel", kernel, p_value=kernel_p)]


def _observed_sums(scores: ScoreMembers, r: NDArray[np.float64]
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
    columns = as_columns(np.asarray(r, dtype=np.float64))
    return scores.level_sums(columns), scores.top_sums(columns) if columns.ndim == 3 else None


def exact_aggregate(gram: Gram, r: NDArray[np.float64], proba: NDArray[np.float64],
                    scores: ScoreMembers, rng: np.random.Generator, n_resamples: int, *,
                    statistic: float | None = None, dtype: type = np.float64
                    ) -> tuple[AggregateResult, NullResult]:
    """The aggregate test and the KLCE consistency test it contains, from one exact kernel
    pass (:func:`calaudit.local.resampling.consistency_test`)."""
    return score_aggregate(scores, r, lambda observe: consistency_test(
        gram, r, proba, rng, n_resamples, statistic=statistic, dtype=dtype, observe=observe))


def score_aggregate(scores: ScoreMembers, r: NDArray[np.float64],
                    kernel_test: Callable[[Callable], NullResult]
                    ) -> tuple[AggregateResult, NullResult]:
    """The aggregate test of the kernel member ``kernel_test(observe)`` (a test that passes
    every batch of its redrawn residual columns to ``observe``) and the score members of
    the observed residuals ``r`` ((n,) or (n, m)) and of the same redraws."""
    batches: list[tuple[NDArray[np.float64], NDArray[np.float64] | None]] = []

    def observe(columns: NDArray[np.float64]) -> None:
        batches.append((scores.level_sums(columns),
                        scores.top_sums(columns) if columns.ndim == 3 else None))

    kernel = kernel_test(observe)
    sums0, top0 = _observed_sums(scores, r)
    sums = np.concatenate([sums0] + [b[0] for b in batches], axis=-1)
    top = None if top0 is None else np.concatenate([top0] + [b[1] for b in batches], axis=-1)
    values = np.concatenate([[kernel.statistic], kernel.null_distribution])
    return combine(member_values(scores, sums, top, values, kernel.p_value)), kernel


def feature_aggregate(kernel_statistic: float, kernel_null: NDArray[np.float64],
                      kernel_p: float, rows: Any, names: Sequence[str], sizes: Sequence[int],
                      labels: int, seed: int, n_resamples: int,
                      stream: str = "klce_consistency") -> AggregateResult:
    """The aggregate test on the random-feature path: the KLCE member from the feature
    test (its redraws from the block streams ``(seed, stream, block)``), the score
    members of covariates ``names`` (``sizes`` levels each) and their sums from one
    reduction of the row source ``rows`` (:mod:`calaudit.local.score_rows`: in memory or
    read by its tasks; ``labels``: 1 for a binary view, else the classes), their
    redraws drawn again (:func:`redrawn_sums`)."""
    with scale.resident(rows) as placed:
        found = score_pass(placed, names, sizes, labels)
        total = redrawn_sums(placed, labels, sum(sizes), seed, stream, n_resamples,
                             found.joint_top)
    redrawn = total["sums"] - found.expected[:, :, None]
    redrawn = redrawn[:, 0, :] if labels == 1 else redrawn
    sums = np.concatenate([found.observed, redrawn], axis=-1)
    top = None
    if found.joint_top:
        top_redrawn = total["top"] - found.top_expected[:, None]
        top = np.concatenate([found.top_observed, top_redrawn], axis=-1)
    values = np.concatenate([[kernel_statistic], kernel_null])
    return combine(member_values(found.members, sums, top, values, kernel_p))


def feature_seed(rng: np.random.Generator) -> int:
    """The block-stream seed a feature test draws from ``rng``, without consuming it."""
    return stream_seed(copy.deepcopy(rng))
