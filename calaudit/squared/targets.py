"""Squared calibration errors as bilinear regression problems (Gruber & Bach, sec. 3.1).

Every target is one or more *problems*: inputs ``x_i`` (a score or a probability vector)
and residuals ``r_i = o_i - x_i``; the squared error is ``E[h*(x, x)]`` for ``h*(x, x') =
<E[r | x], E[r | x']>`` (eq. 12-13). The sign of ``r`` (the paper's ``p - e_y``) does not
matter.

* ``tce2``: top-label, ``x`` = confidence, outcome ``1{y = argmax_k p_k}`` (eq. 9);
* ``cwce2``: one problem per class ``k``: ``x = p_k``, outcome ``1{y = k}``, summed over
  classes (so ``CWCE_2^2 <= CCE_2^2``);
* ``cce2``: canonical, ``x = p``, outcome ``e_y`` (eq. 7).

Weighted rows: the squared error of the weighted empirical law (docs/weights.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit.metrics.ece import scores_and_outcomes
from calaudit.squared.risk import RowWeights

TARGETS = ("tce2", "cwce2", "cce2")


@dataclass(frozen=True)
class Problem:
    """One bilinear regression problem: ``points`` (n, d) (d = 1 a score, d = m a
    probability vector, ``simplex``), ``residuals`` (n, q), row ``weights`` (or None)."""

    name: str
    points: NDArray[np.float64]
    residuals: NDArray[np.float64]
    simplex: bool
    weights: RowWeights | None = None

    @property
    def n(self) -> int:
        return int(self.points.shape[0])

    @property
    def outcomes(self) -> NDArray[np.float64]:
        """``o_i = r_i + x_i``: the 0/1 outcome, or the one-hot label vector."""
        return self.residuals + self.points

    def take(self, rows: NDArray[np.intp]) -> Problem:
        """The same problem restricted to ``rows``."""
        weights = None if self.weights is None else self.weights.take(rows)
        return Problem(self.name, self.points[rows], self.residuals[rows], self.simplex,
                       weights)

    def training(self, rows: NDArray[np.intp]) -> Problem:
        """The training fold ``rows`` without its rows of weight 0 (no fit sees them)."""
        if self.weights is not None:
            rows = rows[self.weights.weights[rows] > 0]
        return self.take(rows)


def scalar_problem(name: str, scores: NDArray[np.float64], outcomes: NDArray[np.float64],
                   weights: RowWeights | None = None) -> Problem:
    """A problem with a score in [0, 1] and a 0/1 outcome."""
    x = np.asarray(scores, dtype=np.float64)[:, None]
    return Problem(name, x, np.asarray(outcomes, dtype=np.float64)[:, None] - x, False,
                   weights)


def problems_for(target: str, y_true: NDArray[np.int64], y_proba: NDArray[np.float64],
                 weights: RowWeights | None = None) -> tuple[Problem, ...]:
    """The problems whose squared errors add up to ``target``."""
    if target == "tce2":
        scores, outcomes = scores_and_outcomes(y_true, y_proba, "top-label")
        return (scalar_problem("top-label", scores, outcomes, weights),)
    if target == "cwce2":
        return tuple(scalar_problem(f"class {k}", y_proba[:, k], (y_true == k).astype(float),
                                    weights) for k in range(y_proba.shape[1]))
    if target == "cce2":
        onehot = np.zeros_like(y_proba, dtype=np.float64)
        onehot[np.arange(y_true.shape[0]), y_true] = 1.0
        points = np.asarray(y_proba, dtype=np.float64)
        return (Problem("canonical", points, onehot - points, True, weights),)
    raise ValueError(f"unknown target {target!r}; choose from {', '.join(TARGETS)}")
