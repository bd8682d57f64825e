"""Local calibration bias (Vashistha & Farahi, Proposition 3.8, eq. 7).

At an observation ``j``: ``LCB_j = sum_i r_i K_ij / sum_i K_ij`` with the KLCE product
kernel ``K_ij = k(p_i, p_j) l(x_i, x_j)`` -- a Nadaraya-Watson smoother of the residuals
over predictions and covariates (the sum includes ``i = j``, as eq. 7). Positive: the
model under-predicts there. Binary residuals are ``y - p``; multi-class uses the
top-label residual ``1{y = argmax p} - max p`` (the top-label view of the group table).
Both numerator and denominator come from one engine pass, ``K @ [r, 1]``.

Curves for the report (the paper's Figure 6, smoothed per group against a numeric
covariate): at grid points ``t`` the curve is the Gaussian Nadaraya-Watson average of the
group's LCB values, ``c(t) = sum_{j in g} w_j(t) LCB_j`` (``w`` normalised, bandwidth by
Silverman's rule). ``c(t)`` is linear in the residuals, ``c(t) = sum_i a_i(t) r_i`` with
``a_i(t) = sum_{j in g} w_j(t) K_ij / D_j`` (``D_j = sum_i K_ij``), so its standard error
given predictions and covariates is ``sqrt(sum_i a_i(t)^2 r_i^2)`` (heteroscedasticity-
robust, HC0); the band is ``c(t) -/+ z se(t)``. All ``a(t)`` come from one more engine pass
``K @ V`` with ``V_jt = w_j(t) / D_j``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from calaudit.numerics.kernels import Gram
from calaudit.numerics.pairwise import kernel_matmul

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


@dataclass(frozen=True)
class LocalBias:
    """LCB at every observation and the kernel weight sums ``D_j``."""

    values: NDArray[np.float64]
    weight_sums: NDArray[np.float64]


def local_calibration_bias(gram: Gram, r: NDArray[np.float64]) -> LocalBias:
    """eq. 7 at every observation, from ``K @ [r, 1]`` (no n x n matrix)."""
    both = kernel_matmul(gram, np.column_stack([r, np.ones_like(r)]))
    return LocalBias(both[:, 0] / both[:, 1], both[:, 1])


def top_label_residual(y_true: NDArray[np.int64], y_proba: NDArray[np.float64]
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(outcome, prediction)`` of the scalar view: binary ``(y == 1, p_1)``; multi-class
    top-label ``(y == argmax p, max p)``."""
    p = np.asarray(y_proba, dtype=np.float64)
    if p.shape[1] == 2:
        return (np.asarray(y_true) == 1).astype(np.float64), p[:, 1].copy()
    top = p.argmax(axis=1)
    return (np.asarray(y_true) == top).astype(np.float64), p.max(axis=1)


def summarize(values: NDArray[np.float64]) -> dict:
    """``local.lcb.summary``: mean, mean |LCB|, sd, min, max and quantiles."""
    return {
        "mean": float(values.mean()),
        "mean_abs": float(np.abs(values).mean()),
        "sd": float(values.std()),
        "min": float(values.min()),
        "max": float(values.max()),
        "quantiles": {str(q): float(v) for q, v in zip(QUANTILES, np.quantile(values, QUANTILES))},
    }


def silverman_bandwidth(x: NDArray[np.float64]) -> float:
    """``0.9 min(sd, IQR / 1.34) n^(-1/5)``; falls back to sd, then to 1."""
    sd = float(np.std(x, ddof=1)) if x.size > 1 else 0.0
    iqr = float(np.subtract(*np.percentile(x, [75, 25])))
    spread = min(sd, iqr / 1.34) if iqr > 0 else sd
    if spread <= 0:
        return 1.0
    return 0.9 * spread * x.size ** (-0.2)


@dataclass(frozen=True)
class CurveRequest:
    """One curve: the covariate values of the group's rows and their row indices."""

    covariate: str
    group_by: str | None
    group: str
    rows: NDArray[np.intp]
    x: NDArray[np.float64]


def grid_weights(x: NDArray[np.float64], points: int) -> tuple[NDArray[np.float64],
                                                                NDArray[np.float64], float]:
    """Grid (``points`` values from the 2nd to the 98th percentile) and row-normalised
    Gaussian weights ``w_j(t)`` (shape (points, len(x)))."""
    low, high = np.percentile(x, [2, 98])
    if high <= low:
        low, high = float(x.min()), float(x.max())
    grid = np.linspace(low, high, points) if high > low else np.array([float(low)])
    h = silverman_bandwidth(x)
    w = np.exp(-0.5 * ((grid[:, None] - x[None, :]) / h) ** 2)
    w /= np.maximum(w.sum(axis=1, keepdims=True), np.finfo(float).tiny)
    return grid, w, h


def lcb_curves(gram: Gram, bias: LocalBias, r: NDArray[np.float64],
               requests: list[CurveRequest], points: int, level: float) -> list[dict]:
    """Smoothed per-group LCB curves with pointwise bands (see module docstring).

    Returns one entry per ``(covariate, group_by)`` as in ``local.lcb.curves``.
    """
    if not requests:
        return []
    n = gram.n
    pieces = [grid_weights(req.x, points) for req in requests]
    v = np.zeros((n, sum(p[0].size for p in pieces)))
    start = 0
    for req, (grid, w, _) in zip(requests, pieces):
        v[req.rows, start:start + grid.size] = (w / bias.weight_sums[req.rows][None, :]).T
        start += grid.size
    a = kernel_matmul(gram, v)
    se_all = np.sqrt((a * a).T @ (r * r))
    z = float(stats.norm.ppf(0.5 + level / 2.0))
    curves: dict[tuple[str, str | None], dict] = {}
    start = 0
    for req, (grid, w, h) in zip(requests, pieces):
        centre = w @ bias.values[req.rows]
        se = se_all[start:start + grid.size]
        start += grid.size
        entry = curves.setdefault((req.covariate, req.group_by), {
            "covariate": req.covariate, "group_by": req.group_by, "groups": []})
        entry["groups"].append({
            "group": req.group, "n": int(req.rows.size), "bandwidth": h,
            "x": grid, "lcb": centre, "se": se,
            "low": centre - z * se, "high": centre + z * se})
    return list(curves.values())


def plot_points(n: int, max_points: int, rng: np.random.Generator) -> NDArray[np.intp]:
    """Row indices of the scatter-plot subsample: all rows if ``n <= max_points``, else
    ``max_points`` rows drawn without replacement (seeded), in row order."""
    if n <= max_points:
        return np.arange(n)
    return np.sort(rng.choice(n, size=max_points, replace=False))


def normal_quantile(level: float) -> float:
    """``Phi^{-1}((1 + level) / 2)``."""
    return float(stats.norm.ppf(0.5 + level / 2.0)) if 0 < level < 1 else math.nan
