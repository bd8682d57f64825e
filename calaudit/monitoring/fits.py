"""Logistic recalibration of one window's rows (Cox 1958; Steyerberg, *Clinical Prediction
Models*, 2nd ed. 2019, sec. 15.2), with ``l_i = logit(p_i)`` (``p`` clipped to
``[1e-12, 1 - 1e-12]``):

* calibration-in-the-large ``a`` in ``logit P(y=1) = a + l_i``: ideal 0, positive when the
  model under-predicts;
* calibration slope ``b`` in ``logit P(y=1) = a' + b l_i``: ideal 1, below 1 when the
  predictions are too extreme.

Maximum likelihood by :func:`calaudit.metrics.clinical.fit_logistic` (Newton-Raphson, IRLS;
McCullagh & Nelder 1989, sec. 2.5), Wald intervals ``beta +- z se``; no convergence: NaN."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit.metrics import clinical
from calaudit.metrics.clinical import logit_of
from calaudit.numerics.distributions import norm_ppf


@dataclass(frozen=True)
class Estimate:
    """A value with its interval (NaN when not estimable)."""

    value: float
    low: float
    high: float

    @classmethod
    def missing(cls) -> Estimate:
        return cls(float("nan"), float("nan"), float("nan"))

    def as_list(self) -> list[float | None]:
        """``[value, low, high]`` with None for NaN (JSON has no NaN)."""
        return [None if not np.isfinite(x) else float(x)
                for x in (self.value, self.low, self.high)]

    @classmethod
    def from_list(cls, values: list) -> Estimate:
        return cls(*(float("nan") if x is None else float(x) for x in values))


@dataclass(frozen=True)
class LogisticFit:
    """Coefficients, their covariance, and whether Newton converged."""

    coef: NDArray[np.float64]
    cov: NDArray[np.float64]
    converged: bool

    def estimate(self, k: int, level: float) -> Estimate:
        """Coefficient ``k`` with its Wald interval at ``level``."""
        if not self.converged:
            return Estimate.missing()
        half = norm_ppf(0.5 + level / 2.0) * np.sqrt(self.cov[k, k])
        return Estimate(float(self.coef[k]), float(self.coef[k] - half),
                        float(self.coef[k] + half))


def logit(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """``logit(clip(p, 1e-12, 1 - 1e-12))`` (:func:`calaudit.metrics.clinical.logit_of`)."""
    return logit_of(p)[0]


def newton_fit(design: NDArray[np.float64], y: NDArray[np.float64],
                 offset: NDArray[np.float64] | None = None) -> LogisticFit:
    """ML logistic regression ``logit P(y=1) = offset + design @ beta`` (module
    docstring), with unit weights."""
    n, k = design.shape
    fit = clinical.fit_logistic(design, np.zeros(n) if offset is None else offset,
                                np.asarray(y, dtype=np.float64), np.ones((n, 1)))
    beta, cov = fit.coef[:, 0], fit.cov[0]
    if not (fit.converged[0] and np.all(np.isfinite(beta)) and np.all(np.isfinite(cov))
            and np.all(np.diag(cov) > 0)):
        return LogisticFit(np.full(k, np.nan), np.full((k, k), np.nan), False)
    return LogisticFit(beta, cov, True)


def citl_fit(p: NDArray[np.float64], y: NDArray[np.float64]) -> LogisticFit:
    """Calibration-in-the-large: intercept with offset ``logit(p)``."""
    return newton_fit(np.ones((p.size, 1)), y, logit(p))


def slope_fit(p: NDArray[np.float64], y: NDArray[np.float64]) -> LogisticFit:
    """Calibration slope: coefficients ``(a', b)`` of ``[1, logit(p)]``."""
    return newton_fit(np.column_stack([np.ones(p.size), logit(p)]), y)
