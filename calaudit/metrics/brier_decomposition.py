"""Murphy's decomposition of the Brier score, on binned forecasts.

For forecasts ``p_i`` of binary outcomes ``o_i`` grouped in bins ``b`` (weight ``n_b``,
mean forecast ``pbar_b``, event rate ``obar_b``, overall rate ``obar``), Murphy (1973):

* reliability ``REL = sum_b (n_b/n) (pbar_b - obar_b)^2`` (calibration; lower is better),
* resolution ``RES = sum_b (n_b/n) (obar_b - obar)^2`` (higher is better),
* uncertainty ``UNC = obar (1 - obar)``.

``BS = REL - RES + UNC`` is exact only for forecasts constant within bins; the within-bin
terms ``WBV = (1/n) sum_i (p_i - pbar_b(i))^2`` and ``WBC = (2/n) sum_i (o_i - obar_b(i))
(p_i - pbar_b(i))`` complete it (Stephenson, Coelho & Jolliffe 2008): ``BS = REL - RES +
UNC + WBV - WBC``. Multi-class: the sum of the class-wise decompositions; binary: the
positive class (``brier_binary``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit.metrics.binned import BinnedOutcomes
from calaudit.metrics.ece_variants import classwise_outcomes
from calaudit.metrics.inputs import accepts_1d
from calaudit.numerics.binning import Strategy


@dataclass(frozen=True)
class BrierDecomposition:
    """Terms of ``BS = reliability - resolution + uncertainty + within_variance
    - within_covariance``; floats, or (q,) arrays for weighted replicates."""

    reliability: float | NDArray[np.float64]
    resolution: float | NDArray[np.float64]
    uncertainty: float | NDArray[np.float64]
    within_variance: float | NDArray[np.float64]
    within_covariance: float | NDArray[np.float64]

    @property
    def brier(self) -> float | NDArray[np.float64]:
        return (self.reliability - self.resolution + self.uncertainty
                + self.within_variance - self.within_covariance)


def decompose_binned(binned: BinnedOutcomes, weights: NDArray[np.float64] | None = None
                     ) -> BrierDecomposition:
    """The five terms for one binary forecast, from weighted per-bin sums."""
    cells, p, o = binned.cells, binned.scores, binned.outcomes
    count = cells.sums(None, weights)
    p_sum, o_sum = cells.sums(p, weights), cells.sums(o, weights)
    if weights is None:  # the products range by range (the same bytes, no n-row arrays)
        pp_sum = cells.sums_of(lambda a, b: p[a:b] * p[a:b])
        op_sum = cells.sums_of(lambda a, b: o[a:b] * p[a:b])
    else:
        pp_sum, op_sum = cells.sums(p * p, weights), cells.sums(o * p, weights)
    return decomposition_from_sums(count, p_sum, o_sum, pp_sum, op_sum, weights is None)


def decomposition_from_sums(count: NDArray[np.float64], p_sum: NDArray[np.float64],
                            o_sum: NDArray[np.float64], pp_sum: NDArray[np.float64],
                            op_sum: NDArray[np.float64], floats: bool = True
                            ) -> BrierDecomposition:
    """The five terms from per-bin weights ``n_b``, ``sum p``, ``sum o``, ``sum p^2`` and
    ``sum o p`` ((bins,) or (bins, q); ``floats``: the terms as floats)."""
    n = count.sum(axis=0)
    filled = count > 0
    safe = np.where(filled, count, 1.0)
    p_bar, o_bar = p_sum / safe, o_sum / safe
    rate = o_sum.sum(axis=0) / n
    rel = (count * (p_bar - o_bar) ** 2).sum(axis=0) / n
    res = (count * (o_bar - rate) ** 2).sum(axis=0) / n
    wbv = (pp_sum - count * p_bar ** 2).sum(axis=0) / n
    wbc = 2.0 * (op_sum - count * o_bar * p_bar).sum(axis=0) / n
    unc = rate * (1.0 - rate)
    if floats:
        return BrierDecomposition(float(rel), float(res), float(unc), float(wbv), float(wbc))
    return BrierDecomposition(rel, res, unc, wbv, wbc)


@accepts_1d
def brier_decomposition(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *,
                        n_bins: int = 15, strategy: Strategy = "uniform",
                        weights: NDArray[np.float64] | None = None) -> BrierDecomposition:
    """Decomposition of ``brier_binary`` (two classes) or of the summed ``brier``."""
    per_class = classwise_outcomes(y_true, y_proba, n_bins=n_bins, strategy=strategy)
    chosen = per_class[1:] if y_proba.shape[1] == 2 else per_class
    return sum_decompositions([decompose_binned(b, weights) for b in chosen])


def sum_decompositions(parts: list[BrierDecomposition]) -> BrierDecomposition:
    """Term-wise sum (the multi-class decomposition is the sum over classes)."""
    return BrierDecomposition(*(sum(getattr(p, name) for p in parts) for name in (
        "reliability", "resolution", "uncertainty", "within_variance", "within_covariance")))
