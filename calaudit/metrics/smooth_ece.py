"""Smooth ECE (Blasiok & Nakkiran 2023, "Smooth ECE: principled reliability diagrams via
kernel smoothing", sec. 3-4).

Scores ``f_i`` in [0, 1], outcomes ``y_i``, residuals ``r_i = f_i - y_i``, ``K_sigma`` the
Gaussian kernel reflected at 0 and 1:

* ``R(t) = (1/n) sum_i r_i K_sigma(t, f_i)``, ``D(t) = (1/n) sum_i K_sigma(t, f_i)``;
* ``smECE_sigma = int_0^1 |R(t)| dt / int_0^1 D(t) dt`` (eq. 4);
* ``smECE = smECE_sigma*`` at the fixed point ``sigma* = smECE_sigma*`` (sec. 4.1), found
  by bisection on [0, 1] (``sigma*`` the upper end of the last bracket; widths below
  ``MIN_SIGMA`` accepted).

Discretisation as ``relplot`` (agrees with ``relplot.smECE`` to 1e-6): rows spread linearly
onto ``G = max(2000, round(20 / sigma)) // 2 + 1`` grid points, the grid extended by its two
mirror images, correlated with the sampled Gaussian (FFT) and read back by linear
interpolation at ``max(200, round(10 / sigma))`` points; density floored by
``DENSITY_FLOOR``. Multi-class: top-label confidence against correctness (sec. 6).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import fft, sparse

from calaudit import scale
from calaudit.metrics.ece import Notion, default_notion, scores_and_outcomes
from calaudit.metrics.inputs import accepts_1d
from calaudit.metrics.row_summary import panel_columns, weighted_source, where_rows_are
from calaudit.scale import ArrayRows, task_ranges

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


def spread_matrix(scores: NDArray[np.float64], size: int) -> sparse.csr_array:
    """Linear spreading as a sparse (size, n) matrix: row ``i`` gives ``1 - w`` of its value
    to the grid point left of ``f_i`` and ``w`` to the right one (the definition;
    :func:`spread_rows` computes the product a block at a time)."""
    n = scores.shape[0]
    position = scores * (size - 1)
    left = np.clip(position.astype(np.int64), 0, size - 2)
    weight = position - left
    rows = np.concatenate([left, left + 1])
    data = np.concatenate([1.0 - weight, weight])
    columns = np.concatenate([np.arange(n), np.arange(n)])
    return sparse.csr_array((data, (rows, columns)), shape=(size, n))


def reflected_smooth(grid_values: NDArray[np.float64], sigma: float) -> NDArray[np.float64]:
    """Gaussian smoothing of grid values (q, G) reflected at 0 and 1: the grid extended by
    its mirror images, correlated with the Gaussian sampled at the offsets ``u_j - 1/2``."""
    size = grid_values.shape[1]
    offsets = np.linspace(0.0, 1.0, size) - 0.5
    kernel = np.exp(-offsets ** 2 / (2 * sigma ** 2)) / (np.sqrt(2 * np.pi) * sigma)
    extended = np.concatenate([grid_values[:, :0:-1], grid_values, grid_values[:, -2::-1]],
                              axis=1)
    full = convolve_rows_valid(extended, kernel)
    start = size // 2
    return full[:, start:start + size]


def convolve_rows_valid(rows: NDArray[np.float64], kernel: NDArray[np.float64]
                        ) -> NDArray[np.float64]:
    """``(rows[i] * kernel)[m - 1 : L]`` by real FFTs: the steps and bits of
    ``scipy.signal.fftconvolve(..., mode="valid", axes=1)``, without importing it (0.8 s)."""
    length, m = rows.shape[1], kernel.shape[0]
    full = length + m - 1
    fast = fft.next_fast_len(full, True)
    product = fft.rfftn(rows, [fast], axes=[1]) * fft.rfftn(kernel[None, :], [fast], axes=[1])
    convolved = fft.irfftn(product, [fast], axes=[1])[:, :full]
    return convolved[:, m - 1:length].copy()


def read_out(smooth: NDArray[np.float64], t: NDArray[np.float64]) -> NDArray[np.float64]:
    """Linear interpolation of grid values (q, G) at the points ``t``: (q, T)."""
    size = smooth.shape[1]
    grid = np.linspace(0.0, 1.0, size)
    left = np.clip(np.searchsorted(grid, t, side="right") - 1, 0, size - 2)
    frac = (t - grid[left]) / (grid[left + 1] - grid[left])
    return smooth[:, left] * (1.0 - frac) + smooth[:, left + 1] * frac


def spread_rows(scores: NDArray[np.float64], outcomes: NDArray[np.float64],
                weights: NDArray[np.float64] | None, size: int) -> NDArray[np.float64]:
    """``spread_matrix(scores, size) @ [r * W, W]`` ((size, 2q); ``r = f - y``, ``W`` the
    (n, q) weights or a column of ones), range by range (:func:`spread_block`)."""
    ranges = task_ranges(scores.shape[0])
    if not ranges:
        return np.zeros((size, 2 * (1 if weights is None else weights.shape[1])))
    columns = {"scores": scores, "outcomes": outcomes}
    if weights is not None:
        columns["weights"] = weights
    with scale.resident(ArrayRows(columns)) as rows:
        return scale.map_sum(spread_arrays_partial, ranges, {
            "rows": rows, "size": size, "weighted": weights is not None})["grid"]


def spread_arrays_partial(start: int, stop: int, *, rows: Any, size: int, weighted: bool
                          ) -> dict[str, NDArray]:
    """:func:`spread_block` of the rows ``[start, stop)``."""
    part = rows.read(start, stop, ["scores", "outcomes"] + (["weights"] if weighted else []))
    return {"grid": spread_block(part["scores"], part["outcomes"], part.get("weights"), size)}


def spread_block(scores: NDArray[np.float64], outcomes: NDArray[np.float64],
                 weights: NDArray[np.float64] | None, size: int) -> NDArray[np.float64]:
    """The spread of one block of rows onto the grid (one ``np.bincount`` per column)."""
    rows = scores.shape[0]
    weights = np.ones((rows, 1)) if weights is None else weights
    q = weights.shape[1]
    out = np.empty((size, 2 * q))
    position = np.asarray(scores, dtype=np.float64) * (size - 1)
    left = np.clip(position.astype(np.int64), 0, size - 2)
    weight = position - left
    values = np.hstack([(scores - outcomes)[:, None] * weights, weights])
    contribution = np.empty((rows, 2, 2 * q))
    np.multiply((1.0 - weight)[:, None], values, out=contribution[:, 0])
    np.multiply(weight[:, None], values, out=contribution[:, 1])
    points = np.stack([left, left + 1], axis=1).reshape(-1)
    terms = contribution.reshape(-1, 2 * q)
    for j in range(2 * q):
        out[:, j] = np.bincount(points, terms[:, j], minlength=size)
    return out


def spread_partial(start: int, stop: int, *, rows: Any, sizes: tuple[int, ...]
                   ) -> dict[str, NDArray]:
    """:func:`spread_block` onto each grid of ``sizes`` of the notion's scores and outcomes
    of the rows ``[start, stop)`` of a row source (weighted by its column ``w``, if any)."""
    weighted = weighted_source(rows)
    part = rows.read(start, stop, ["y", "proba"] + (["w"] if weighted else []))
    scores, outcomes = panel_columns(np.asarray(part["y"]),
                                     np.ascontiguousarray(part["proba"], dtype=np.float64))[0]
    scores = np.asarray(scores, np.float64)
    w = np.asarray(part["w"], dtype=np.float64)[:, None] if weighted else None
    return {str(size): spread_block(scores, outcomes, w, size) for size in sizes}


def search_sizes() -> frozenset[int]:
    """The grid sizes the fixed-point search can ask for (its trial bandwidths are
    multiples of ``2^-SEARCH_STEPS`` from ``MIN_SIGMA`` to 1)."""
    steps = 2 ** SEARCH_STEPS
    return frozenset(grid_size(j / steps) for j in range(1, steps + 1)
                     if j / steps >= MIN_SIGMA)


class Smoother:
    """Scores, outcomes and row weights (n, q) (``None``: ones; bootstrap counts: the
    replicates), with each grid size's spread of the weighted residuals and weights
    cached."""

    def __init__(self, scores: NDArray[np.float64] | None,
                 outcomes: NDArray[np.float64] | None,
                 weights: NDArray[np.float64] | None = None, rows: Any = None) -> None:
        self.scores = None if scores is None else np.asarray(scores, dtype=np.float64)
        self.outcomes = None if outcomes is None else np.asarray(outcomes, dtype=np.float64)
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64)
        self.rows = rows
        self._grids: dict[int, NDArray[np.float64]] = {}

    @classmethod
    def of_rows(cls, rows: Any) -> Smoother:
        """The smoother of a row source (one reduction per grid; weighted by the
        source's column ``w``, if any)."""
        return cls(None, None, rows=rows)

    @property
    def q(self) -> int:
        return 1 if self.weights is None else self.weights.shape[1]

    def grid_values(self, size: int) -> NDArray[np.float64]:
        """(2q, size): the weighted residuals (rows ``:q``) and weights (rows ``q:``)."""
        if size not in self._grids and self.rows is not None:
            # tasks that read their own rows: one pass for the wide bandwidths' grid, one
            # for all the narrow ones (each pass reads the files again)
            wide, sizes = grid_size(1.0), {size}
            own = getattr(self.rows, "reads_own_rows", False)
            if own and size != wide and size in search_sizes():
                sizes = set(search_sizes()) - {wide} - set(self._grids)
            with where_rows_are(self.rows):
                spread = scale.map_sum(spread_partial, task_ranges(self.rows.n), {
                    "rows": self.rows, "sizes": tuple(sorted(sizes))})
            self._grids.update({int(k): v.T for k, v in spread.items()})
        elif size not in self._grids:
            self._grids[size] = spread_rows(self.scores, self.outcomes, self.weights, size).T
        return self._grids[size]

    def chosen_grid(self, size: int, chosen: NDArray[np.intp]) -> NDArray[np.float64]:
        """(2k, size): the weighted residuals and weights of the ``k`` chosen columns."""
        grid = self.grid_values(size)
        return np.vstack([grid[chosen], grid[self.q + chosen]])

    def prepare(self, sigmas: NDArray[np.float64], columns: NDArray[np.intp]) -> None:
        """Called before the columns ``columns`` are evaluated at the bandwidths
        ``sigmas`` (one each): a subclass computing grids per column makes them here."""

    def curves(self, sigma: float, columns: NDArray[np.intp] | None = None
               ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """Points ``t``, smoothed residual ``R(t)`` and density ``D(t)`` ((k, T) for the
        ``k`` chosen weight columns; kernel units, ``D`` floored by ``DENSITY_FLOOR``)."""
        chosen = np.arange(self.q) if columns is None else np.asarray(columns)
        smooth = reflected_smooth(self.chosen_grid(grid_size(sigma), chosen), sigma)
        t = eval_points(sigma)
        read = read_out(smooth, t)
        return t, read[:chosen.size], read[chosen.size:] + DENSITY_FLOOR

    def values(self, sigma: float, columns: NDArray[np.intp] | None = None
               ) -> NDArray[np.float64]:
        """``smECE_sigma`` (eq. 4) of the chosen weight columns."""
        _, residual, density = self.curves(sigma, columns)
        return np.abs(residual).sum(axis=1) / density.sum(axis=1)

    def fixed_points(self) -> NDArray[np.float64]:
        """``sigma*`` with ``smECE_sigma* = sigma*`` (sec. 4.1) of every weight column, by
        bisection; all columns bisected together, one smoothing per distinct trial
        bandwidth."""

        def wide_enough(sigmas: NDArray[np.float64], columns: NDArray[np.intp]
                        ) -> NDArray[np.bool_]:
            out = sigmas < MIN_SIGMA
            self.prepare(sigmas[~out], columns[~out])
            for sigma in np.unique(sigmas[~out]):
                same = np.flatnonzero(sigmas == sigma)
                out[same] = sigma < self.values(float(sigma), columns[same])
            return out

        every = np.arange(self.q)
        high, low = np.ones(self.q), np.zeros(self.q)
        searching = np.flatnonzero(~wide_enough(high, every))
        for _ in range(SEARCH_STEPS):
            middle = (high[searching] + low[searching]) / 2
            wide = wide_enough(middle, searching)
            low[searching[wide]] = middle[wide]
            high[searching[~wide]] = middle[~wide]
        return high

    def at_fixed_points(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The bandwidths ``sigma*`` and the smooth ECE at them, per weight column."""
        sigmas = self.fixed_points()
        out = np.empty(self.q)
        self.prepare(sigmas, np.arange(self.q))
        for sigma in np.unique(sigmas):
            same = np.flatnonzero(sigmas == sigma)
            out[same] = self.values(float(sigma), same)
        return sigmas, out


def smooth_ece_at(scores: NDArray[np.float64], outcomes: NDArray[np.float64],
                  sigma: float) -> float:
    """``smECE_sigma``: the smooth ECE at a fixed bandwidth ``sigma`` (eq. 4)."""
    return float(Smoother(scores, outcomes).values(sigma)[0])


def fixed_point_sigma(scores: NDArray[np.float64], outcomes: NDArray[np.float64]) -> float:
    """The bandwidth ``sigma*`` with ``smECE_sigma* = sigma*`` (sec. 4.1)."""
    return float(Smoother(scores, outcomes).fixed_points()[0])


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


def smooth_reliability(scores: NDArray[np.float64], outcomes: NDArray[np.float64],
                       weights: NDArray[np.float64] | None = None) -> SmoothReliability:
    """smECE, its bandwidth and the smoothed reliability curve (paper sec. 5); ``weights``
    (n,): ``R(t) = sum_i w_i r_i K_sigma(t, f_i)``, ``D(t) = sum_i w_i K_sigma(t, f_i)``."""
    return reliability_of(Smoother(scores, outcomes, None if weights is None
                                   else np.asarray(weights, dtype=np.float64)[:, None]))


def reliability_of(smoother: Smoother) -> SmoothReliability:
    """:func:`smooth_reliability` of a :class:`Smoother`."""
    sigma = float(smoother.fixed_points()[0])
    t, residual, density = smoother.curves(sigma)
    residual, density = residual[0], density[0]
    value = float(np.abs(residual).sum() / density.sum())
    mu = t - residual / density
    mass = density.sum() * (t[1] - t[0])
    return SmoothReliability(sigma, value, t, mu, density / mass)


def smooth_ece_scores(scores: NDArray[np.float64], outcomes: NDArray[np.float64]) -> float:
    """smECE of scores in [0, 1] against 0/1 outcomes, bandwidth at its fixed point."""
    return float(Smoother(scores, outcomes).at_fixed_points()[1][0])


def smooth_ece_replicates(scores: NDArray[np.float64], outcomes: NDArray[np.float64],
                          weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """smECE of each weighting of the rows (columns of ``weights``, (n, q)), each at its own
    fixed-point bandwidth: bootstrap replicates when the weights are resample counts."""
    return Smoother(scores, outcomes, weights).at_fixed_points()[1]


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
