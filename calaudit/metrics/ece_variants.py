"""ECE variants beyond the top-label / binary ``ece`` of :mod:`calaudit.metrics.ece`.

* ``ece_l2``: the l2 (root-mean-square) binned calibration error of the same notion.
* ``ece_classwise``: one-vs-rest ECE of every class, averaged (Kull et al. 2019
  "class-wise"; Kumar et al. 2019 "marginal": ``(mean_k CE_k^p)^(1/p)``).
* ``ece_canonical``: canonical calibration (Widmann et al. 2019, sec. 4.3): ``sum_c (n_c /
  n) d(mean p_c, mean e_y c)`` over the non-empty cells of a per-dimension uniform grid,
  ``d`` = total variation by default (CalibrationErrors.jl ``ECE(UniformBinning(k),
  TotalVariation())``).
* ``ece_debiased``: ``sqrt(max(0, debiased squared error))`` (Broecker 2012; Kumar et al.
  2019). ``weights`` (n, q) give ``q`` bootstrap replicates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit.metrics.binned import (
    BinnedOutcomes,
    debiased_squared_from_sums,
    ece_from_sums,
    finish,
)
from calaudit.metrics.ece import Notion, indicator, notion_outcomes
from calaudit.metrics.inputs import accepts_1d
from calaudit.numerics.binning import Strategy, grid_cell_index
from calaudit.numerics.tabulate import Cells

CANONICAL_DISTANCES = ("tv", "l1", "l2")


def classwise_outcomes(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *,
                       n_bins: int = 15, strategy: Strategy = "uniform"
                       ) -> tuple[BinnedOutcomes, ...]:
    """One-vs-rest binned scores ``p_ik`` and outcomes ``1{y_i = k}`` for every class."""
    return tuple(
        BinnedOutcomes.build(y_proba[:, k], indicator(y_true, k),
                             n_bins=n_bins, strategy=strategy)
        for k in range(y_proba.shape[1])
    )


def classwise_from_outcomes(per_class: tuple[BinnedOutcomes, ...], norm: str = "l1",
                            weights: NDArray[np.float64] | None = None
                            ) -> NDArray[np.float64]:
    """``mean_k CE_k`` (l1) or ``sqrt(mean_k CE_k^2)`` (l2) over classes."""
    values = np.stack([ece_from_sums(b.sums(weights), norm) for b in per_class])
    if norm == "l1":
        return values.mean(axis=0)
    return np.sqrt((values ** 2).mean(axis=0))


@accepts_1d
def expected_calibration_error_l2(
    y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *, n_bins: int = 15,
    strategy: Strategy = "uniform", notion: Notion | None = None,
    weights: NDArray[np.float64] | None = None,
) -> float | NDArray[np.float64]:
    """``sqrt(sum_b (n_b/n) (acc_b - conf_b)^2)`` for the binary or top-label notion.

    >>> import numpy as np
    >>> p = np.array([[0.8, 0.2], [0.3, 0.7], [0.4, 0.6], [0.9, 0.1]])
    >>> round(expected_calibration_error_l2(np.array([0, 1, 0, 0]), p, n_bins=2), 6)
    0.15
    """
    binned = notion_outcomes(y_true, y_proba, n_bins=n_bins, strategy=strategy, notion=notion)
    return finish(ece_from_sums(binned.sums(weights), "l2"), weights)


@accepts_1d
def classwise_ece(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *, n_bins: int = 15,
                  strategy: Strategy = "uniform", norm: str = "l1",
                  weights: NDArray[np.float64] | None = None) -> float | NDArray[np.float64]:
    """Class-wise ECE: every class's one-vs-rest binned ECE, averaged over classes.

    For two classes this averages the ECE of ``p_1`` and of ``p_0 = 1 - p_1``.
    """
    per_class = classwise_outcomes(y_true, y_proba, n_bins=n_bins, strategy=strategy)
    return finish(classwise_from_outcomes(per_class, norm, weights), weights)


@accepts_1d
def debiased_ece(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *, n_bins: int = 15,
                 strategy: Strategy = "uniform", notion: Notion | None = None,
                 weights: NDArray[np.float64] | None = None) -> float | NDArray[np.float64]:
    """Debiased l2 ECE ``sqrt(max(0, debiased squared error))`` (Kumar et al. 2019)."""
    binned = notion_outcomes(y_true, y_proba, n_bins=n_bins, strategy=strategy, notion=notion)
    squared = debiased_squared_from_sums(binned.sums(weights))
    return finish(np.sqrt(np.maximum(squared, 0.0)), weights)


@dataclass(frozen=True)
class CanonicalBins:
    """Rows of a probability matrix grouped by per-dimension uniform grid cell."""

    y_proba: NDArray[np.float64]
    y_true: NDArray[np.int64]
    cells: Cells

    @classmethod
    def build(cls, y_true: NDArray[np.int64], y_proba: NDArray[np.float64], n_bins: int
              ) -> CanonicalBins:
        return cls(y_proba, y_true, Cells.of(grid_cell_index(y_proba, n_bins)))

    def ece(self, distance: str = "tv", weights: NDArray[np.float64] | None = None
            ) -> NDArray[np.float64]:
        """Weighted canonical ECE; one value per column of ``weights``."""
        m = self.y_proba.shape[1]
        count = self.cells.sums(None, weights)
        prob_sums = np.stack([self.cells.sums(self.y_proba[:, k], weights) for k in range(m)],
                             axis=1)
        y = self.y_true
        if weights is None:  # each class's indicator range by range (the same sums)
            label_sums = np.stack(
                [self.cells.sums_of(lambda a, b, k=k: (y[a:b] == k).astype(np.float64))
                 for k in range(m)], axis=1)
        else:
            label_sums = np.stack(
                [self.cells.sums((y == k).astype(np.float64), weights) for k in range(m)],
                axis=1)
        return canonical_from_sums(count, prob_sums, label_sums, distance)

    def ece_for_labels(self, labels: NDArray[np.intp], distance: str = "tv"
                       ) -> NDArray[np.float64]:
        """Canonical ECE with the labels replaced column by column (labels (n, q))."""
        m = self.y_proba.shape[1]
        n, q = labels.shape
        count = self.cells.sums(None)
        prob_sums = np.stack([self.cells.sums(self.y_proba[:, k]) for k in range(m)], axis=1)
        flat = (np.arange(q)[None, :] * self.cells.n_cells + self.cells.index[:, None]) * m
        tallies = np.bincount((flat + labels).ravel(), minlength=q * self.cells.n_cells * m)
        label_sums = tallies.reshape(q, self.cells.n_cells, m).transpose(1, 2, 0)
        return canonical_from_sums(count[:, None], prob_sums[:, :, None],
                                    label_sums.astype(np.float64), distance)


def canonical_from_sums(count: NDArray[np.float64], prob_sums: NDArray[np.float64],
                         label_sums: NDArray[np.float64], distance: str
                         ) -> NDArray[np.float64]:
    """``sum_c n_c d(pbar_c, ybar_c) / sum_c n_c`` from sums of shape (cells, m[, q])."""
    filled = count > 0
    safe = np.where(filled, count, 1.0)[:, None]
    diff = (prob_sums - label_sums) / safe
    if distance == "tv":
        d = 0.5 * np.abs(diff).sum(axis=1)
    elif distance == "l1":
        d = np.abs(diff).sum(axis=1)
    elif distance == "l2":
        d = np.sqrt((diff * diff).sum(axis=1))
    else:
        raise ValueError(f"unknown canonical ECE distance {distance!r}")
    return (count * np.where(filled, d, 0.0)).sum(axis=0) / count.sum(axis=0)


@accepts_1d
def canonical_ece(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *, n_bins: int = 10,
                  distance: str = "tv", weights: NDArray[np.float64] | None = None
                 ) -> float | NDArray[np.float64]:
    """Canonical ECE on a per-dimension uniform grid of ``n_bins`` bins per class.

    Cells use CalibrationErrors.jl's convention: coordinate ``p`` in bin ``ceil(n_bins p)``,
    ``p = 0`` in bin 1 (right-closed bins). ``distance`` is ``tv`` (default; the two-class
    value equals the usual binary ECE with the same bins), ``l1`` or ``l2``.

    >>> import numpy as np
    >>> p = np.array([[0.0, 1.0], [0.5, 0.5], [0.5, 0.5], [1.0, 0.0]])
    >>> canonical_ece(np.array([1, 1, 0, 0]), p, n_bins=10)
    0.0
    """
    bins = CanonicalBins.build(y_true, y_proba, n_bins)
    return finish(bins.ece(distance, weights), weights)
