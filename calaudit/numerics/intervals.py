"""Closed-form confidence intervals for proportions."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calaudit.numerics.distributions import norm_ppf


def wilson_interval(successes: ArrayLike, trials: ArrayLike, confidence_level: float = 0.95
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson score interval (Wilson 1927), vectorised: with ``z = Phi^{-1}((1 + level) /
    2)``, ``p = k / n``, centre ``(p + z^2 / 2n) / (1 + z^2 / n)``, half-width ``z / (1 +
    z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2)``."""
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    z = norm_ppf(0.5 + confidence_level / 2.0)
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2.0 * n)) / denom
    half = z / denom * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)
