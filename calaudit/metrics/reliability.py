"""Reliability bins: per bin ``b`` the rows ``n_b``, mean score ``conf_b`` and observed rate
``acc_b`` of scores ``s_i`` and 0/1 outcomes ``o_i`` (Guo et al. 2017; Naeini et al. 2015).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit.metrics.binned import BinnedOutcomes, BinSums
from calaudit.numerics.binning import Strategy
from calaudit.numerics.intervals import wilson_interval


@dataclass(frozen=True)
class ReliabilityBins:
    """Non-empty bins of a binned calibration estimate, in increasing score order.

    Attributes
    ----------
    lower, upper : bin edges (the bin is ``(lower, upper]``; the first includes 0)
    count : rows in the bin
    mean_score : mean predicted probability (confidence) in the bin
    observed_rate : fraction of events (correct predictions) in the bin
    rate_low, rate_high : 95% Wilson interval of ``observed_rate``
    """

    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    count: NDArray[np.int64]
    mean_score: NDArray[np.float64]
    observed_rate: NDArray[np.float64]
    rate_low: NDArray[np.float64]
    rate_high: NDArray[np.float64]

    @property
    def gap(self) -> NDArray[np.float64]:
        """``|acc_b - conf_b|`` per bin."""
        return np.abs(self.observed_rate - self.mean_score)

    def to_dict(self) -> dict[str, list[float] | list[int]]:
        return {
            "lower": self.lower.tolist(),
            "upper": self.upper.tolist(),
            "count": self.count.tolist(),
            "mean_score": self.mean_score.tolist(),
            "observed_rate": self.observed_rate.tolist(),
            "rate_low": self.rate_low.tolist(),
            "rate_high": self.rate_high.tolist(),
        }


def reliability_bins(scores: NDArray[np.float64], outcomes: NDArray[np.float64], *,
                     n_bins: int = 15, strategy: Strategy = "uniform") -> ReliabilityBins:
    """The non-empty bins of ``scores`` with counts, mean scores and observed rates."""
    return bins_table(BinnedOutcomes.build(scores, outcomes, n_bins=n_bins, strategy=strategy))


def bins_table(binned: BinnedOutcomes) -> ReliabilityBins:
    """The non-empty bins of ``binned`` with their Wilson intervals."""
    return bins_from_sums(binned.sums(), binned.edges)


def bins_from_sums(sums: BinSums, edges: NDArray[np.float64]) -> ReliabilityBins:
    """The non-empty bins of per-bin sums (bins of ``edges``), with Wilson intervals."""
    keep = sums.count > 0
    count = sums.count[keep]
    low, high = wilson_interval(sums.event[keep], count)
    return ReliabilityBins(
        lower=edges[:-1][keep],
        upper=edges[1:][keep],
        count=count.astype(np.int64),
        mean_score=sums.score[keep] / count,
        observed_rate=sums.event[keep] / count,
        rate_low=low,
        rate_high=high,
    )
