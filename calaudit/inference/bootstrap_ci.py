"""Percentile bootstrap intervals (Efron & Tibshirani 1993, ch. 13) of bootstrap
replicates: a statistic of resample ``b`` is the statistic of the data weighted by the
counts ``C[:, b]`` (the replicates' reductions: :mod:`calaudit.metrics.row_bootstrap`).
Binned statistics keep the full data's bins.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray


def percentile_interval(replicates: NDArray[np.float64], level: float = 0.95
                        ) -> tuple[float, float] | None:
    """``(q_{(1-level)/2}, q_{(1+level)/2})`` of the finite replicates; ``None`` when
    fewer than half are finite (e.g. a model fit that failed on most resamples)."""
    finite = replicates[np.isfinite(replicates)]
    if finite.size < max(2, replicates.size // 2):
        return None
    low, high = np.quantile(finite, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(low), float(high)


def intervals(replicates: Mapping[str, NDArray[np.float64]], level: float
              ) -> dict[str, tuple[float, float] | None]:
    """:func:`percentile_interval` of every statistic."""
    return {key: percentile_interval(values, level) for key, values in replicates.items()}


def ci_params(level: float, n_resamples: int) -> dict[str, object]:
    """How an interval was made, recorded in a metric's ``params``."""
    return {"ci_method": "percentile bootstrap", "ci_level": level, "ci_resamples": n_resamples}
