"""The normal, Student t and chi-square functions of ``scipy.stats`` from the special
functions it evaluates (``ndtr``, ``ndtri``, ``stdtrit``, ``chdtrc``; the same bits,
``tests/test_distributions.py``), without importing ``scipy.stats`` (0.75 s).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

_SQRT_2PI = np.sqrt(2 * np.pi)


def norm_cdf(x: ArrayLike) -> NDArray[np.float64]:
    """``Phi(x)``, the standard normal distribution function."""
    return special.ndtr(x)


def norm_sf(x: ArrayLike) -> NDArray[np.float64]:
    """``1 - Phi(x) = Phi(-x)``, computed without cancellation."""
    return special.ndtr(-np.asarray(x, dtype=np.float64))[()]


def norm_ppf(q: ArrayLike) -> NDArray[np.float64]:
    """``Phi^{-1}(q)``, the standard normal quantile."""
    return special.ndtri(q)


def norm_pdf(x: ArrayLike) -> NDArray[np.float64]:
    """``phi(x) = exp(-x^2 / 2) / sqrt(2 pi)``."""
    x = np.asarray(x, dtype=np.float64)
    return (np.exp(-x ** 2 / 2.0) / _SQRT_2PI)[()]


def t_ppf(q: float, df: float) -> float:
    """The quantile of Student's t with ``df`` (real, > 0) degrees of freedom."""
    return float(special.stdtrit(df, q))


def chi2_sf(x: float, df: float) -> float:
    """``P(X > x)`` for ``X ~ chi^2_df``, the regularised upper incomplete gamma
    ``Q(df / 2, x / 2)``."""
    if math.isnan(x):
        return math.nan
    return float(special.chdtrc(df, x)) if x > 0 else 1.0
