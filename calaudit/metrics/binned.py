"""Binned calibration statistics from per-bin sums, for one weighting or many.

:class:`BinnedOutcomes` holds scores ``s_i``, 0/1 outcomes ``o_i`` and each row's bin; its
statistics take weights (``None``: the estimate; (n, q) bootstrap counts: ``q``
replicates). Per bin ``b`` with weight ``n_b``, mean score ``conf_b``, event rate ``acc_b``
(empty bins take no part):

* ``ECE_1 = sum_b (n_b / n) |acc_b - conf_b|`` (Naeini et al. 2015; Guo et al. 2017),
* ``ECE_2 = sqrt(sum_b (n_b / n) (acc_b - conf_b)^2)``, ``MCE = max_b |acc_b - conf_b|``,
* debiased ``sum_b (n_b / n) [(acc_b - conf_b)^2 - acc_b (1 - acc_b) / (n_b - 1)]`` over
  bins with ``n_b >= 2`` (Broecker 2012; Kumar et al. 2019, ``unbiased_square_ce``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit.numerics.binning import Strategy, bin_index
from calaudit.numerics.tabulate import Cells


@dataclass(frozen=True)
class BinSums:
    """Per-bin weight, score sum and event sum: arrays (bins,) or (bins, q)."""

    count: NDArray[np.float64]
    score: NDArray[np.float64]
    event: NDArray[np.float64]

    def means(self) -> tuple[NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64]]:
        """Mask of non-empty bins, mean score and event rate (0 where empty)."""
        filled = self.count > 0
        safe = np.where(filled, self.count, 1.0)
        return filled, self.score / safe, self.event / safe

    def total(self) -> NDArray[np.float64]:
        return self.count.sum(axis=0)


@dataclass(frozen=True)
class BinnedOutcomes:
    """Scores, 0/1 outcomes and bin memberships (bins fixed by the full data)."""

    scores: NDArray[np.float64]
    outcomes: NDArray[np.float64]
    cells: Cells
    edges: NDArray[np.float64]

    @classmethod
    def build(cls, scores: NDArray[np.float64], outcomes: NDArray[np.float64], *,
              n_bins: int, strategy: Strategy) -> BinnedOutcomes:
        """Bins of :func:`~calaudit.numerics.binning.bin_index` (quantile edges from these
        scores)."""
        index, edges = bin_index(scores, n_bins, strategy)
        return cls(scores, outcomes, Cells(index, edges.size - 1), edges)

    def sums(self, weights: NDArray[np.float64] | None = None,
             outcomes: NDArray[np.float64] | None = None) -> BinSums:
        """Per-bin sums; ``outcomes`` (n, q) replaces the outcomes column by column
        (consistency resampling), ``weights`` (n, q) weights the rows (bootstrap)."""
        cells = self.cells
        if outcomes is not None:
            count = cells.sums(None)
            score = cells.sums(self.scores)
            event = np.asarray(cells.membership @ outcomes)
            return BinSums(count[:, None], score[:, None], event)
        return BinSums(cells.sums(None, weights), cells.sums(self.scores, weights),
                       cells.sums(self.outcomes, weights))


def ece_from_sums(sums: BinSums, norm: str = "l1") -> NDArray[np.float64]:
    """``ECE_1`` (``norm="l1"``) or ``ECE_2`` (``norm="l2"``) from per-bin sums."""
    filled, conf, acc = sums.means()
    gap = np.where(filled, np.abs(acc - conf), 0.0)
    if norm == "l1":
        return (sums.count * gap).sum(axis=0) / sums.total()
    if norm == "l2":
        return np.sqrt((sums.count * gap * gap).sum(axis=0) / sums.total())
    raise ValueError(f"unknown norm {norm!r}")


def mce_from_sums(sums: BinSums) -> NDArray[np.float64]:
    """``max_b |acc_b - conf_b|`` over non-empty bins."""
    filled, conf, acc = sums.means()
    return np.where(filled, np.abs(acc - conf), -np.inf).max(axis=0)


def debiased_squared_from_sums(sums: BinSums) -> NDArray[np.float64]:
    """Bias-corrected squared l2 error: each bin's ``(acc - conf)^2`` minus ``acc (1 - acc)
    / (n_b - 1)``, bins with ``n_b < 2`` as 0 (Kumar et al. 2019). May be negative."""
    filled, conf, acc = sums.means()
    usable = filled & (sums.count >= 2)
    safe = np.where(usable, sums.count - 1.0, 1.0)
    term = (acc - conf) ** 2 - acc * (1.0 - acc) / safe
    return (sums.count * np.where(usable, term, 0.0)).sum(axis=0) / sums.total()


def finish(values: NDArray[np.float64], weights: NDArray[np.float64] | None
           ) -> float | NDArray[np.float64]:
    """A float when no weights were given (the estimate), else the (q,) replicates."""
    return float(values) if weights is None else np.asarray(values, dtype=np.float64)
