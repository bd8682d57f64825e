"""Smooth ECE (Blasiok & Nakkiran 2023, "Smooth ECE: principled reliability diagrams via
kernel smoothing", sec. 3-4).

For scores ``f_i`` in [0, 1] and outcomes ``y_i`` in {0, 1}, with residuals ``r_i = f_i - y_i``
and the Gaussian kernel of width ``sigma`` reflected at 0 and 1 (``K_sigma``):

* smoothed residual ``R(t) = (1/n) sum_i r_i K_sigma(t, f_i)``, smoothed density
  ``D(t) = (1/n) sum_i K_sigma(t, f_i)``;
* ``smECE_sigma = int_0^1 |R(t)| dt / int_0^1 D(t) dt`` (eq. 4; ``|R| = |r_hat| D`` with
  ``r_hat = R / D`` the kernel regression of the residual on the score);
* ``smECE = smECE_sigma*`` at the fixed point ``sigma* = smECE_sigma*`` (sec. 4.1: the
  bandwidth is as large as the error it measures, so no tuning parameter is left). The map
  ``sigma -> smECE_sigma`` decreases, so the fixed point is unique; it is bracketed by
  bisection on [0, 1] and ``sigma*`` is the upper end of the final bracket (where
  ``sigma >= smECE_sigma``), with widths below ``MIN_SIGMA`` accepted.

Discretisation (the one of the authors' package ``relplot``, so the numbers agree with
``relplot.smECE`` to 1e-6): the rows are spread linearly onto a grid of ``G`` points on
[0, 1] (``G = max(2000, round(20 / sigma)) // 2 + 1``), the grid is extended by its two
mirror images, correlated with the Gaussian sampled on the grid over a window of width 1,
and read back by linear interpolation at ``max(200, round(10 / sigma))`` equally spaced
points; the integrals are sums over those points, the density with a floor of
``DENSITY_FLOOR`` (kernel units). Everything is vectorised; the cost is O(n + G log G) per
bandwidth (FFT correlation).

Multi-class models use the top-label view: confidence ``max_k p_ik`` against the
correctness ``1{argmax_k p_ik = y_i}`` (the paper's sec. 6 and relplot's
``multiclass_logits_to_confidences``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.signal import fftconvolve

from calaudit.metrics.ece import Notion, default_notion, scores_and_outcomes
from calaudit.metrics.inputs import accepts_1d

#: Bandwidths below this are accepted by the fixed-point search without evaluation.
MIN_SIGMA = 1e-3
#: Bisection steps of the fixed-point search on [0, 1] (bracket width 2^-10).
SEARCH_STEPS = 10
#: Evaluation points of the integrals (at least; ``round(10 / sigma)`` when larger).
EVAL_POINTS = 200
#: Additive floor of the smoothed density at the evaluation points (kernel units).
DENSITY_FLOOR = 1e-4


def grid_size(sigma: float) -> int:
    """Points of the smoothing grid for bandwidth ``sigma``."""
    return max(2000, round(20 / sigma)) // 2 + 1


def eval_points(sigma: float) -> NDArray[np.float64]:
    """Equally spaced evaluation points of the integrals, 0 and 1 included."""
    return np.linspace(0.0, 1.0, max(round(10 / sigma), EVAL_POINTS))


def spread_on_grid(scores: NDArray[np.float64], values: NDArray[np.float64],
                   size: int) -> NDArray[np.float64]:
    """Linear spreading ("cloud in cell"): row ``i`` gives ``(1 - w) v_i`` to the grid point
    left of ``f_i`` and ``w v_i`` to the one right of it. ``values`` is (n, q); returns
    (q, size)."""
    position = scores * (size - 1)
    left = np.clip(position.astype(np.int64), 0, size - 2)
    weight = (position - left)[:, None]
    q = values.shape[1]
    offsets = np.arange(q) * size
    flat = np.bincount((left[:, None] + offsets).ravel(),
                       ((1.0 - weight) * values).ravel(), minlength=q * size)
    flat += np.bincount((left[:, None] + 1 + offsets).ravel(), (weight * values).ravel(),
                        minlength=q * size)
    return flat.reshape(q, size)


def reflected_smooth(grid_values: NDArray[np.float64], sigma: float) -> NDArray[np.float64]:
    """Gaussian smoothing with reflection at 0 and 1 of grid values (q, G), on the grid.

    The grid is extended by its mirror images about both ends, then correlated with the
    Gaussian density of width ``sigma`` sampled at the grid's offsets ``u_j - 1/2``.
    """
    size = grid_values.shape[1]
    offsets = np.linspace(0.0, 1.0, size) - 0.5
    kernel = np.exp(-offsets ** 2 / (2 * sigma ** 2)) / (np.sqrt(2 * np.pi) * sigma)
    extended = np.concatenate([grid_values[:, :0:-1], grid_values, grid_values[:, -2::-1]],
                              axis=1)
    full = fftconvolve(extended, kernel[None, :], mode="valid", axes=1)
    start = size // 2
    return full[:, start:start + size]


def smoothed_curves(scores: NDArray[np.float64], residuals: NDArray[np.float64], sigma: float,
                    weights: NDArray[np.float64] | None = None
                    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Evaluation points ``t`` and, for each column of ``weights`` (n, q) (``None``: one
    unweighted column), the smoothed residual ``R(t)`` and density ``D(t)`` as (q, T)
    arrays (kernel units, ``D`` floored by ``DENSITY_FLOOR``)."""
    if weights is None:
        weights = np.ones((scores.shape[0], 1))
    size = grid_size(sigma)
    q = weights.shape[1]
    smooth = reflected_smooth(
        spread_on_grid(scores, np.hstack([residuals[:, None] * weights, weights]), size), sigma)
    t = eval_points(sigma)
    # linear interpolation from the grid to t, as one sparse-free matrix product
    grid = np.linspace(0.0, 1.0, size)
    left = np.clip(np.searchsorted(grid, t, side="right") - 1, 0, size - 2)
    frac = (t - grid[left]) / (grid[left + 1] - grid[left])
    read = smooth[:, left] * (1.0 - frac) + smooth[:, left + 1] * frac
    return t, read[:q], read[q:] + DENSITY_FLOOR


def smooth_ece_at(scores: NDArray[np.float64], outcomes: NDArray[np.float64], sigma: float,
                  weights: NDArray[np.float64] | None = None) -> NDArray[np.float64] | float:
    """``smECE_sigma``: the smooth ECE at a fixed bandwidth ``sigma`` (eq. 4); (q,) values
    for row weights (n, q) (bootstrap counts), a float without weights."""
    _, residual, density = smoothed_curves(scores, scores - outcomes, sigma, weights)
    values = np.abs(residual).sum(axis=1) / density.sum(axis=1)
    return float(values[0]) if weights is None else values


def fixed_point_sigma(scores: NDArray[np.float64], outcomes: NDArray[np.float64],
                      weights: NDArray[np.float64] | None = None
                      ) -> NDArray[np.float64] | float:
    """The bandwidth ``sigma*`` with ``smECE_sigma* = sigma*`` (sec. 4.1), by bisection; one
    per column of ``weights`` (all columns bisected together, one smoothing pass per
    distinct trial bandwidth)."""
    columns = np.ones((scores.shape[0], 1)) if weights is None else weights

    def wide_enough(sigmas: NDArray[np.float64]) -> NDArray[np.bool_]:
        out = sigmas < MIN_SIGMA
        for sigma in np.unique(sigmas[~out]):
            chosen = np.flatnonzero(sigmas == sigma)
            out[chosen] = sigma < smooth_ece_at(scores, outcomes, float(sigma),
                                                columns[:, chosen])
        return out

    q = columns.shape[1]
    high, low = np.ones(q), np.zeros(q)
    searching = ~wide_enough(high)
    for _ in range(SEARCH_STEPS):
        middle = (high + low) / 2
        wide = wide_enough(middle[searching])
        index = np.flatnonzero(searching)
        low[index[wide]] = middle[index[wide]]
        high[index[~wide]] = middle[index[~wide]]
    return float(high[0]) if weights is None else high


@dataclass(frozen=True)
class SmoothReliability:
    """The smoothed reliability diagram at bandwidth ``sigma``: at each point ``t``, the
    smoothed outcome rate ``mu(t) = t - R(t) / D(t)`` and the score density ``density(t)``
    (integrating to about 1 on [0, 1])."""

    sigma: float
    smece: float
    t: NDArray[np.float64]
    mu: NDArray[np.float64]
    density: NDArray[np.float64]

    def to_dict(self) -> dict[str, object]:
        return {"sigma": self.sigma, "smece": self.smece, "t": self.t.tolist(),
                "mu": self.mu.tolist(), "density": self.density.tolist()}


def smooth_reliability(scores: NDArray[np.float64], outcomes: NDArray[np.float64]
                       ) -> SmoothReliability:
    """smECE, its bandwidth and the smoothed reliability curve (paper sec. 5)."""
    scores = np.asarray(scores, dtype=np.float64)
    outcomes = np.asarray(outcomes, dtype=np.float64)
    sigma = fixed_point_sigma(scores, outcomes)
    t, residual, density = smoothed_curves(scores, scores - outcomes, sigma)
    residual, density = residual[0], density[0]
    value = float(np.abs(residual).sum() / density.sum())
    mu = t - residual / density
    mass = density.sum() * (t[1] - t[0])
    return SmoothReliability(sigma, value, t, mu, density / mass)


def smooth_ece_scores(scores: NDArray[np.float64], outcomes: NDArray[np.float64]) -> float:
    """smECE of scores in [0, 1] against 0/1 outcomes, bandwidth at its fixed point."""
    scores = np.asarray(scores, dtype=np.float64)
    outcomes = np.asarray(outcomes, dtype=np.float64)
    return smooth_ece_at(scores, outcomes, fixed_point_sigma(scores, outcomes))


def smooth_ece_replicates(scores: NDArray[np.float64], outcomes: NDArray[np.float64],
                          weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """smECE of each weighting of the rows (columns of ``weights``, (n, q)), each at its own
    fixed-point bandwidth: bootstrap replicates when the weights are resample counts."""
    sigmas = fixed_point_sigma(scores, outcomes, weights)
    out = np.empty(weights.shape[1])
    for sigma in np.unique(sigmas):
        chosen = np.flatnonzero(sigmas == sigma)
        out[chosen] = smooth_ece_at(scores, outcomes, float(sigma), weights[:, chosen])
    return out


@accepts_1d
def smooth_ece(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *,
               notion: Notion | None = None) -> float:
    """Smooth ECE (metric ``smece``): binary notion for two classes (positive-class
    probability against ``y == 1``), top-label otherwise (confidence against correctness).

    ``y_proba`` is (n,) for a binary model (positive-class probability) or (n, m).

    >>> import numpy as np
    >>> p = np.array([0.1, 0.3, 0.5, 0.7, 0.9] * 20)
    >>> y = np.array([0, 0, 1, 1, 1] * 20)
    >>> round(smooth_ece(y, p), 6)
    0.170748
    """
    scores, outcomes = scores_and_outcomes(y_true, y_proba,
                                           notion or default_notion(y_proba.shape[1]))
    return smooth_ece_scores(scores, outcomes)
