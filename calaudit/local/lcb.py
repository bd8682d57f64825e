"""Local calibration bias (Vashistha & Farahi, Proposition 3.8, eq. 7).

``LCB_j = sum_i r_i K_ij / sum_i K_ij`` with the KLCE product kernel
``K_ij = k(p_i, p_j) l(x_i, x_j)`` (the sum includes ``i = j``, as eq. 7). Positive: the
model under-predicts there. Binary residuals are ``y - p``; multi-class uses the top-label
residual ``1{y = argmax p} - max p``. Also the pointwise standard errors at the plotted rows
(:func:`row_products`) and the summary of the values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.numerics.kernels import gaussian_block
from calaudit.scale import ArrayRows, one_blas_thread, task_ranges

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


@dataclass(frozen=True)
class LocalBias:
    """LCB at every observation and the kernel weight sums ``D_j``."""

    values: NDArray[np.float64]
    weight_sums: NDArray[np.float64]


def top_label_residual(y_true: NDArray[np.int64], y_proba: NDArray[np.float64]
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(outcome, prediction)`` of the scalar view: binary ``(y == 1, p_1)``; multi-class
    top-label ``(y == argmax p, max p)``."""
    p = np.asarray(y_proba, dtype=np.float64)
    y = np.asarray(y_true)
    if p.shape[1] == 2:
        return (y == 1).astype(np.float64), p[:, 1].copy()
    top = p.argmax(axis=1)
    return (y == top).astype(np.float64), p.max(axis=1)


def summarize(values: NDArray[np.float64], weights: Any = None) -> dict:
    """``local.lcb.summary``: mean, mean |LCB|, sd, min, max and quantiles; ``weights``
    (:class:`calaudit.local.weighted_lcb.LcbWeights`): of the weighted law."""
    if weights is not None:
        return weights.summary(values, QUANTILES)
    return {
        "mean": float(values.mean()),
        "mean_abs": float(np.abs(values).mean()),
        "sd": float(values.std()),
        "min": float(values.min()),
        "max": float(values.max()),
        "quantiles": {str(q): float(v)
                      for q, v in zip(QUANTILES, np.quantile(values, QUANTILES), strict=True)},
    }


def plot_points(n: int, max_points: int, rng: np.random.Generator) -> NDArray[np.intp]:
    """Row indices of the scatter-plot subsample: all rows if ``n <= max_points``, else
    ``max_points`` rows drawn without replacement (seeded), in row order."""
    if n <= max_points:
        return np.arange(n)
    return np.sort(rng.choice(n, size=max_points, replace=False))


@dataclass(frozen=True)
class RowProducts:
    """Kernel products at a set of rows ``S`` (the plotted rows): ``se`` of ``LCB_j``,
    ``j in S``, and ``A[S] = K[S, :] @ V`` (the curves' weights at those rows)."""

    rows: NDArray[np.intp]
    se: NDArray[np.float64]
    curve_weights: NDArray[np.float64]


def row_products(features: NDArray[np.float64], rows: NDArray[np.intp],
                 r: NDArray[np.float64], weight_sums: NDArray[np.float64],
                 columns: NDArray[np.float64], chunk: int = 2048,
                 meat: NDArray[np.float64] | None = None,
                 centre: NDArray[np.float64] | None = None) -> RowProducts:
    """One rectangular pass over ``K[S, :]`` (``len(S) x n`` kernel entries, column chunks).

    ``LCB_j`` is linear in the residuals, so (HC0, as the curves)
    ``se_j = sqrt(sum_i K_ij^2 r_i^2) / D_j``; ``features`` are the Gram's scaled rows ``z``
    (``K_ij = exp(-|z_i - z_j|^2)``). Also ``K[S, :] @ columns`` (curve weights). Weighted
    rows: ``se_j = sqrt(sum_i K_ij^2 m_i r_i^2) / D_j`` with the meat weights ``meat`` and the
    weighted ``D_j``; with ``centre`` (``LCB_j`` at the rows ``S``) the linearised ratio's
    ``sum_i K_ij^2 m_i (r_i - LCB_j)^2`` instead."""
    z = np.asarray(features, dtype=np.float64)
    z = z[:, None] if z.ndim == 1 else z
    r = np.asarray(r, dtype=np.float64)  # a gathered column: read here (the exact path)
    r2 = r * r if meat is None else meat * r * r
    if centre is not None:  # sum K^2 m (r - c)^2 = sum K^2 m r^2 - 2 c sum K^2 m r + c^2 ...
        r2 = np.column_stack([r2, meat * r, meat])
    shared = {"rows": ArrayRows({"z": z, "r2": r2, "columns": columns}), "here": z[rows]}
    total = scale.map_sum(
        _row_products_partial, task_ranges(z.shape[0], chunk), shared)
    se2 = total["se2"]
    if centre is not None:
        se2 = np.maximum(se2[:, 0] - 2.0 * centre * se2[:, 1] + centre * centre * se2[:, 2],
                         0.0)
    return RowProducts(rows, np.sqrt(se2) / weight_sums[rows], total["weights"])


def _row_products_partial(start: int, stop: int, *, rows: Any, here: NDArray[np.float64]
                          ) -> dict[str, NDArray[np.float64]]:
    """The columns ``[start, stop)`` of :func:`row_products` (``rows``: a row source of
    ``z``, ``r2`` and ``columns``)."""
    read = rows.read(start, stop, ("z", "r2", "columns"))
    columns = read["columns"]
    with one_blas_thread():
        block = gaussian_block(here, read["z"])
        weights = (block @ columns if columns.shape[1]
                   else np.zeros((here.shape[0], 0)))
        np.multiply(block, block, out=block)
        return {"se2": block @ read["r2"], "weights": weights}
