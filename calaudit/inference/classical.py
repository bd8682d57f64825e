"""Classical calibration tests for binary outcomes.

**Spiegelhalter's z** (Spiegelhalter 1986): under calibration the Brier score has mean
``sum p_i (1 - p_i)`` and variance ``sum (1 - 2 p_i)^2 p_i (1 - p_i)``; the standardised
difference is ``z = sum (y_i - p_i)(1 - 2 p_i) / sqrt(sum (1 - 2 p_i)^2 p_i (1 - p_i))``,
two-sided p-value ``2 Phi(-|z|)`` (rms ``val.prob`` ``S:z``/``S:p``, pycaleva, calzone;
MAPIE's one-sided variant is not used).

**Hosmer-Lemeshow** (Hosmer & Lemeshow 1980), as R ResourceSelection ``hoslem.test``:
groups are the intervals between the distinct ``0, 1/g, ..., 1`` quantiles of ``p`` (type 7,
numpy's default), right-closed with the lowest value included; the statistic sums
``(O - E)^2 / E`` over both outcome columns (events and non-events) of every group, and is
referred to chi-square with ``G - 2`` degrees of freedom, ``G`` the number of groups realised.

Caveats (why ``hosmer_lemeshow`` is off by default): the result depends on the arbitrary
number and placement of groups (different software gives different p-values on the same
data); power is low for small n and for miscalibration that cancels within groups; with
large n it rejects for clinically irrelevant deviations; the chi-square approximation needs
expected counts of about 5 or more (INCONCLUSIVE otherwise, see
:mod:`calaudit.inference.applicability`); ``G - 2`` degrees of freedom are for the
development sample (external validation arguably uses ``G``). Prefer the SKCE tests, the
calibration slope / intercept and Spiegelhalter's z.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import stats


@dataclass(frozen=True)
class Spiegelhalter:
    z: float
    p_value: float
    variance: float


def spiegelhalter_test(y_true: NDArray[np.int64], p: NDArray[np.float64]) -> Spiegelhalter:
    """Spiegelhalter's z and its two-sided p-value (NaN when the variance is 0).

    >>> import numpy as np
    >>> r = spiegelhalter_test(np.array([0, 1, 1, 0]), np.array([0.2, 0.7, 0.9, 0.4]))
    >>> round(r.z, 6), round(r.p_value, 6)
    (-1.005038, 0.314879)
    """
    y = np.asarray(y_true, dtype=np.float64)
    centred = 1.0 - 2.0 * p
    variance = float(np.sum(centred * centred * p * (1.0 - p)))
    if variance <= 0.0:
        return Spiegelhalter(math.nan, math.nan, variance)
    z = float(np.sum((y - p) * centred) / math.sqrt(variance))
    return Spiegelhalter(z, float(2.0 * stats.norm.sf(abs(z))), variance)


@dataclass(frozen=True)
class HosmerLemeshow:
    statistic: float
    df: int
    p_value: float
    observed: NDArray[np.float64]   # (G, 2): non-events, events
    expected: NDArray[np.float64]   # (G, 2)


def hosmer_lemeshow_test(y_true: NDArray[np.int64], p: NDArray[np.float64], groups: int = 10
                         ) -> HosmerLemeshow:
    """Hosmer-Lemeshow statistic, degrees of freedom ``G - 2`` and p-value."""
    y = np.asarray(y_true, dtype=np.float64)
    breaks = np.unique(np.quantile(p, np.linspace(0.0, 1.0, groups + 1)))
    index = np.searchsorted(breaks[1:-1], p, side="left")
    size = max(breaks.size - 1, 1)
    events = np.bincount(index, weights=y, minlength=size)
    count = np.bincount(index, minlength=size).astype(np.float64)
    expected_events = np.bincount(index, weights=p, minlength=size)
    keep = count > 0
    observed = np.column_stack([count - events, events])[keep]
    expected = np.column_stack([count - expected_events, expected_events])[keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = float(np.sum((observed - expected) ** 2 / expected))
    df = int(keep.sum()) - 2
    p_value = float(stats.chi2.sf(statistic, df)) if df >= 1 else math.nan
    return HosmerLemeshow(statistic, df, p_value, observed, expected)
