"""The local calibration bias on weighted rows (docs/weights.md).

Row ``i`` weighs ``w_i`` (``d_i``, times ``1 / r_i`` for a negative under label-dependent
sampling) and holds ``t_i`` units (``d_i`` for frequency weights, else one) of weight
``u_i = w_i / t_i`` each. The LCB at row ``j`` is

    LCB_j = sum_i K_ij w_i r_i / D_j,        D_j = sum_i K_ij w_i,

its bandwidths from :mod:`calaudit.local.lcb_bandwidth`, its pointwise standard error for
frequency weights the repeated rows' (``se_j^2 = sum_i K_ij^2 w_i r_i^2 / D_j^2``), otherwise
the linearised ratio's:

    se_j = sqrt(sum_i K_ij^2 m_i (r_i - LCB_j)^2) / D_j,   m_i = t_i u_i^2 = w_i^2 / t_i

The summary is of the weighted law of the values (rows of weight 0 left out; weighted
quantiles by :func:`calaudit.numerics.binning.weighted_quantiles`); a group's ``mean_lcb``
is ``sum w LCB / sum w`` over its rows.

The per-group curves (:mod:`calaudit.local.lcb_curves`) multiply each row's Gaussian weight
by ``w_j``; their grid runs from the weighted 2nd to 98th percentile and their bandwidth is
Silverman's rule ``0.9 min(sd, IQR / 1.34) n^(-1/5)`` with ``n`` the sample size (units for
frequency weights, Kish's size otherwise) and ``sd^2 = sum w (x - mean)^2 / W n / (n - 1)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.data.weights import kish
from calaudit.numerics.binning import weighted_quantiles


@dataclass(frozen=True)
class LcbWeights:
    """Row weights ``w``, unit weights ``u``, meat weights ``m`` and units ``t`` of the
    LCB (module docstring); ``frequency``: the rows hold whole units (no sampling)."""

    w: NDArray[np.float64]
    u: NDArray[np.float64]
    m: NDArray[np.float64]
    t: NDArray[np.float64]
    frequency: bool

    @classmethod
    def of(cls, weights: Any, outcome: NDArray[np.float64]) -> LcbWeights:
        """From :class:`calaudit.data.weights.SampleWeights` and the scalar view's 0/1
        outcome (1: the positive class of label-dependent sampling)."""
        w = np.asarray(weights.of_labels(outcome), dtype=np.float64)
        u = weights.per_unit(w)
        return cls(w, u, w * u, np.asarray(weights.unit_split()[0], dtype=np.float64),
                   weights.repeated_rows)

    def count(self, rows: NDArray[np.intp]) -> int:
        """The units of ``rows`` (frequency weights), else their number."""
        return int(round(float(self.t[rows].sum()))) if self.frequency else int(rows.size)

    def summary(self, values: NDArray[np.float64], quantiles: Sequence[float]) -> dict:
        """``local.lcb.summary`` of the weighted law of ``values``."""
        keep = self.w > 0
        x, w = values[keep], self.w[keep]
        total = float(w.sum())
        mean = float(np.dot(w, x) / total)
        at = weighted_quantiles(x, w, np.asarray(quantiles), self.frequency)
        return {
            "mean": mean, "mean_abs": float(np.dot(w, np.abs(x)) / total),
            "sd": float(np.sqrt(max(float(np.dot(w, (x - mean) ** 2)) / total, 0.0))),
            "min": float(x.min()), "max": float(x.max()),
            "quantiles": {str(q): float(v) for q, v in zip(quantiles, at, strict=True)},
        }

    def size(self, rows: NDArray[np.intp]) -> float:
        """The sample size of ``rows``: their units (frequency weights, a whole number) or
        Kish's size of their weights."""
        return int(round(float(self.t[rows].sum()))) if self.frequency else kish(self.w[rows])

    def curve_grid(self, request: Any, points: int) -> tuple[NDArray[np.float64], float]:
        """The grid and Silverman bandwidth of a curve on the weighted law (module
        docstring; :func:`calaudit.local.lcb_curves.curve_grid` of the repeated rows for
        frequency weights)."""
        x, w = request.x, self.w[request.rows]
        low, high, q1, q3 = weighted_quantiles(x, w, np.array([0.02, 0.98, 0.25, 0.75]),
                                               self.frequency)
        keep = w > 0
        if high <= low:
            low, high = float(x[keep].min()), float(x[keep].max())
        grid = np.linspace(low, high, points) if high > low else np.array([float(low)])
        n = self.size(request.rows)
        mean = float(np.dot(w, x) / w.sum())
        sd = (float(np.sqrt(np.dot(w, (x - mean) ** 2) / w.sum() * n / (n - 1)))
              if n > 1 else 0.0)
        iqr = float(q3 - q1)
        spread = min(sd, iqr / 1.34) if iqr > 0 else sd
        return grid, (0.9 * spread * n ** (-0.2) if spread > 0 else 1.0)

    def group_mean(self, values: NDArray[np.float64], rows: NDArray[np.intp]) -> float:
        """``sum w LCB / sum w`` over ``rows`` (rows of weight 0 left out)."""
        rows = rows[self.w[rows] > 0]
        w = self.w[rows]
        return float(np.dot(w, values[rows]) / w.sum())
