"""Logistic recalibration of one window's rows: calibration-in-the-large and slope.

With ``l_i = logit(p_i)`` (probabilities clipped to ``[1e-12, 1 - 1e-12]``; Cox 1958;
Steyerberg, *Clinical Prediction Models*, 2nd ed. 2019, sec. 15.2):

* calibration-in-the-large (CITL): ``a`` in ``logit P(y=1) = a + l_i`` (offset ``l``);
  ideal 0, positive: the model under-predicts;
* calibration slope: ``b`` in ``logit P(y=1) = a' + b l_i``; ideal 1, below 1: predictions
  too extreme.

Maximum likelihood by Newton-Raphson (the canonical link makes it IRLS; McCullagh & Nelder
1989, sec. 2.5) from ``beta = 0`` with step halving, converged when a step moves no
coefficient by more than 1e-10 (1 + |beta|); Wald intervals ``beta +- z se`` from the
inverse information. A fit that does not converge (separation, one class only) gives NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import special

from calaudit.numerics.distributions import norm_ppf

CLIP = 1e-12
MAX_ITER = 50
STEP_TOL = 1e-10


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
    """``logit(clip(p, 1e-12, 1 - 1e-12))``."""
    return special.logit(np.clip(p, CLIP, 1.0 - CLIP))


def fit_logistic(design: NDArray[np.float64], y: NDArray[np.float64],
                 offset: NDArray[np.float64] | None = None) -> LogisticFit:
    """ML logistic regression ``logit P(y=1) = offset + design @ beta`` (module
    docstring)."""
    offset = np.zeros(y.size) if offset is None else offset
    beta = np.zeros(design.shape[1])
    loglik, score, info = _pieces(design, y, offset, beta)
    for _ in range(MAX_ITER):
        try:
            step = np.linalg.solve(info, score)
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(step)):
            break
        for _ in range(40):
            trial = _pieces(design, y, offset, beta + step)
            if trial[0] >= loglik - 1e-12 * abs(loglik):
                break
            step = step / 2.0
        beta = beta + step
        loglik, score, info = trial
        if np.max(np.abs(step)) <= STEP_TOL * (1.0 + np.max(np.abs(beta))):
            return _finished(beta, info)
    return LogisticFit(np.full(design.shape[1], np.nan),
                       np.full((design.shape[1],) * 2, np.nan), False)


def _pieces(design: NDArray[np.float64], y: NDArray[np.float64],
            offset: NDArray[np.float64], beta: NDArray[np.float64]
            ) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
    eta = offset + design @ beta
    q = special.expit(eta)
    loglik = float(np.sum(y * eta - np.logaddexp(0.0, eta)))
    return loglik, design.T @ (y - q), design.T @ (design * (q * (1.0 - q))[:, None])


def _finished(beta: NDArray[np.float64], info: NDArray[np.float64]) -> LogisticFit:
    try:
        cov = np.linalg.inv(info)
    except np.linalg.LinAlgError:
        return LogisticFit(beta * np.nan, info * np.nan, False)
    ok = bool(np.all(np.isfinite(beta)) and np.all(np.isfinite(cov))
              and np.all(np.diag(cov) > 0))
    return LogisticFit(beta, cov, ok)


def citl_fit(p: NDArray[np.float64], y: NDArray[np.float64]) -> LogisticFit:
    """Calibration-in-the-large: intercept with offset ``logit(p)``."""
    return fit_logistic(np.ones((p.size, 1)), y, logit(p))


def slope_fit(p: NDArray[np.float64], y: NDArray[np.float64]) -> LogisticFit:
    """Calibration slope: coefficients ``(a', b)`` of ``[1, logit(p)]``."""
    return fit_logistic(np.column_stack([np.ones(p.size), logit(p)]), y)
