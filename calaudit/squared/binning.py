"""``h_bin`` (Gruber & Bach, eq. 23): products of per-bin mean residuals.

Scores: ``n_bins`` equal-width right-closed bins, ``phi(x) = acc(B) - conf(B)`` of the bin
of ``x`` on the training fold, ``h_bin(x, x') = phi(x) phi(x')`` (eq. 10 / 24). Probability
vectors (not in the paper): the cells of the per-dimension grid of ``ece_canonical`` and
the cell's mean residual vector. A bin with no training row gets the fold's mean residual
(the reference code's fallback); weighted rows take weighted means.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calaudit.numerics.binning import grid_cells, uniform_bin_index
from calaudit.squared.fitting import EvalSet
from calaudit.squared.risk import mean_diagonal, pairwise_risk
from calaudit.squared.targets import Problem


def cell_labels(train_points: NDArray[np.float64], eval_points: NDArray[np.float64],
                n_bins: int, simplex: bool) -> tuple[NDArray[np.intp], NDArray[np.intp], int]:
    """Bin (score) or grid cell (vector) of every training and evaluation row, as dense
    labels ``0 .. n_cells - 1`` shared by both sets."""
    if not simplex:
        return (uniform_bin_index(train_points[:, 0], n_bins),
                uniform_bin_index(eval_points[:, 0], n_bins), n_bins)
    cells, labels = grid_cells(np.vstack([train_points, eval_points]), n_bins)
    n_train = train_points.shape[0]
    return labels[:n_train], labels[n_train:], int(cells.shape[0])


def bin_features(train: Problem, eval_points: NDArray[np.float64],
                 n_bins: int) -> NDArray[np.float64]:
    """``phi(x)``: the training mean residual of the bin (cell) of each evaluation row."""
    train_cells, eval_cells, n_cells = cell_labels(train.points, eval_points, n_bins,
                                                   train.simplex)
    w = np.ones(train.points.shape[0]) if train.weights is None else train.weights.weights
    counts = np.bincount(train_cells, weights=w, minlength=n_cells)
    residuals = train.residuals * w[:, None]
    overall = residuals.sum(axis=0) / w.sum()
    sums = np.stack([np.bincount(train_cells, weights=col, minlength=n_cells)
                     for col in residuals.T], axis=1)
    means = np.tile(overall, (n_cells, 1))
    seen = counts > 0
    means[seen] = sums[seen] / counts[seen, None]
    return means[eval_cells]


class BinningPath:
    """``h_bin`` fitted on one training fold for every ``n_bins`` of the grid."""

    def __init__(self, train: Problem, grid: tuple[float, ...]) -> None:
        self.train = train
        self.grid = grid

    def features(self, points: NDArray[np.float64], index: int) -> NDArray[np.float64]:
        return bin_features(self.train, points, int(self.grid[index]))

    def risks(self, evalset: EvalSet) -> NDArray[np.float64]:
        problem = evalset.problem
        return np.array([pairwise_risk(problem.residuals, self.features(problem.points, i),
                                       weights=problem.weights)
                         for i in range(len(self.grid))])

    def estimate(self, evalset: EvalSet, index: int) -> float:
        return mean_diagonal(self.features(evalset.problem.points, index),
                             weights=evalset.problem.weights)
