"""Clinical calibration measures of a binary risk model: logistic recalibration.

With ``l_i = logit(p_i)`` (Cox 1958; Steyerberg 2019, ch. 15; rms ``val.prob``;
CalibrationCurves ``val.prob.ci.2``):

* calibration-in-the-large (CITL): the intercept ``a`` of ``logit P(y=1) = a + l_i``
  (logistic regression with offset ``l``); ideal 0, positive = the model under-predicts;
* calibration slope: ``b`` in ``logit P(y=1) = a' + b l_i``; ideal 1, below 1 = predictions
  too extreme (over-fitting), above 1 = too moderate.

Maximum likelihood by Newton-Raphson with step halving (converged when a full Newton step
is below 1e-10 within 100 iterations and the information matrix is positive definite),
vectorised over weight columns so that bootstrap replicates (weights = counts) are fitted
together; every sum over rows is a reduction over fixed row ranges (issue 14), the same
bytes as one sum over all rows up to 65,536 rows. Wald intervals
``coef +- z_{(1+level)/2} se`` use the inverse observed information at the optimum.
Probabilities are clipped to ``[1e-12, 1 - 1e-12]`` before the logit (the count of clipped
rows is reported); a fit that does not converge (e.g. perfect separation) gives NaN.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from calaudit.numerics import scratch
from calaudit.numerics.blocked import BLOCK_ROWS
from calaudit.numerics.distributions import norm_ppf
from calaudit.numerics.row_blocks import SerialExecutor, task_ranges
from calaudit.numerics.row_sources import ArrayRows, resident

CLIP = 1e-12
MAX_ITER = 100
TOL = 1e-10


@dataclass(frozen=True)
class LogisticFit:
    """Coefficients (k, q), their covariance (q, k, k) and convergence (q,)."""

    coef: NDArray[np.float64]
    cov: NDArray[np.float64]
    converged: NDArray[np.bool_]


def _loglik(eta: NDArray[np.float64], y: NDArray[np.float64], w: NDArray[np.float64]
            ) -> NDArray[np.float64]:
    return (w * (y[:, None] * eta - np.logaddexp(0.0, eta))).sum(axis=0)


def fit_logistic(design: NDArray[np.float64], offset: NDArray[np.float64],
                 y: NDArray[np.float64], weights: NDArray[np.float64],
                 executor: Any = None) -> LogisticFit:
    """Weighted ML logistic regression ``logit P(y=1) = offset + design @ beta`` for every
    column of ``weights`` (n, q) at once. Every sum over rows (log-likelihood, score,
    information) is a reduction over the fixed ranges of ``task_ranges(n)``
    (:func:`newton_partial`, added in range order by ``executor``; up to ``TASK_ROWS``
    rows, one range: the sums over all rows at once)."""
    source = ArrayRows({"design": design, "offset": offset, "y": y, "weights": weights})
    return fit_logistic_rows(source, design.shape[1], weights.shape[1], executor)


def fit_logistic_rows(source: Any, k: int, q: int, executor: Any = None) -> LogisticFit:
    """:func:`fit_logistic` on the rows of a row source (``design`` (n, k), ``offset``,
    ``y``, ``weights`` (n, q); e.g. :class:`RecalibrationRows`, which makes each range's
    columns when a partial reads them)."""
    executor = executor or SerialExecutor()
    n = source.n
    with resident(executor, source) as rows:
        def sums(b: NDArray[np.float64], newton: bool) -> dict[str, NDArray[np.float64]]:
            return executor.map_sum(newton_partial, task_ranges(n),
                                    {"rows": rows, "beta": b, "newton": newton})

        beta = np.zeros((k, q))
        current = sums(beta, False)["loglik"]
        converged = np.zeros(q, dtype=bool)
        for _ in range(MAX_ITER):
            at = sums(beta, True)
            step = _solve(at["info"], at["grad"])
            step[:, converged] = 0.0
            scale = np.ones(q)
            for _ in range(40):
                trial = beta + step * scale
                value = sums(trial, False)["loglik"]
                worse = value < current - 1e-12 * np.abs(current)
                if not worse.any():
                    break
                scale = np.where(worse, scale / 2.0, scale)
            beta, current = trial, value
            converged |= (scale == 1.0) & (np.abs(step).max(axis=0) < TOL)
            if converged.all():
                break
        info = sums(beta, True)["info"]
    cov = np.full_like(info, np.nan)
    converged &= np.linalg.det(info) > 0
    if converged.any():
        cov[converged] = np.linalg.inv(info[converged])
    beta[:, ~converged] = np.nan
    return LogisticFit(beta, cov, converged)


def newton_partial(start: int, stop: int, *, rows: Any, beta: NDArray[np.float64],
                   newton: bool) -> dict[str, NDArray[np.float64]]:
    """Rows ``[start, stop)`` of the source ``rows`` (``design``, ``offset``, ``y``,
    ``weights``) at ``beta`` (k, q): ``loglik`` (q,) and, if ``newton``, the score
    ``grad`` (k, q) and the information ``info`` (q, k, k)."""
    part = rows.read(start, stop, ("design", "offset", "y", "weights"))
    design, y, weights = part["design"], part["y"], part["weights"]
    eta = part["offset"][:, None] + design @ beta
    out = {"loglik": _loglik(eta, y, weights)}
    if newton:
        pi = special.expit(eta)
        out["grad"] = design.T @ (weights * (y[:, None] - pi))
        out["info"] = np.einsum("nq,na,nb->qab", weights * pi * (1.0 - pi), design, design)
    return out


def _solve(info: NDArray[np.float64], grad: NDArray[np.float64]) -> NDArray[np.float64]:
    """Newton steps ``info_q^-1 grad_q``; singular systems give a zero step."""
    out = np.zeros_like(grad)
    for j in range(grad.shape[1]):
        try:
            out[:, j] = np.linalg.solve(info[j], grad[:, j])
        except np.linalg.LinAlgError:
            pass
    return out


@dataclass(frozen=True)
class Recalibration:
    """CITL and calibration slope with standard errors (NaN when the fit fails)."""

    citl: float
    citl_se: float
    slope: float
    slope_se: float
    slope_intercept: float
    clipped: int

    def interval(self, which: str, level: float) -> tuple[float, float] | None:
        """Wald interval of ``citl`` or ``slope``."""
        value, se = (self.citl, self.citl_se) if which == "citl" else (self.slope,
                                                                       self.slope_se)
        if not (np.isfinite(value) and np.isfinite(se)):
            return None
        z = float(norm_ppf(0.5 + level / 2.0))
        return value - z * se, value + z * se


def logit_of(p: NDArray[np.float64]) -> tuple[NDArray[np.float64], int]:
    """``logit(clip(p))`` and the number of clipped probabilities (computed a block of
    rows at a time into the result: 8 bytes a row, the same values)."""
    out = scratch.empty(p.shape[0])  # a working array (numerics.scratch)
    clipped = 0
    for start in range(0, p.shape[0], BLOCK_ROWS):
        part = p[start:start + BLOCK_ROWS]
        clipped += int(np.count_nonzero((part < CLIP) | (part > 1.0 - CLIP)))
        special.logit(np.clip(part, CLIP, 1.0 - CLIP), out=out[start:start + BLOCK_ROWS])
    return out, clipped


class RecalibrationRows:
    """The rows of the two recalibration fits as a row source, made range by range from
    the labels and ``logit(p)`` (16 bytes a row held, instead of every design column,
    offset and weight column: the same values, so the same sums).

    ``model="citl"``: design ``[1]``, offset ``logit(p)``; ``model="slope"``: design
    ``[1, logit(p)]``, offset 0; the weights are 1."""

    def __init__(self, y: NDArray, logit: NDArray[np.float64], model: str) -> None:
        self.y, self.logit, self.model, self.n = y, logit, model, logit.shape[0]

    def read(self, start: int, stop: int, names) -> dict[str, NDArray]:
        logit = self.logit[start:stop]
        ones = np.ones((stop - start, 1))
        columns = {"y": np.asarray(self.y[start:stop], dtype=np.float64), "weights": ones}
        if self.model == "citl":
            columns.update(design=ones, offset=logit)
        else:
            columns.update(design=np.column_stack([ones[:, 0], logit]),
                           offset=np.zeros(stop - start))
        return {name: columns[name] for name in names}


def recalibration_replicates(y: NDArray[np.float64], p: NDArray[np.float64],
                             weights: NDArray[np.float64]
                             ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """CITL and slope for every weight column (bootstrap replicates)."""
    logit, _ = logit_of(p)
    ones = np.ones((y.size, 1))
    citl = fit_logistic(ones, logit, y, weights).coef[0]
    slope = fit_logistic(np.column_stack([ones[:, 0], logit]), np.zeros(y.size), y,
                         weights).coef[1]
    return citl, slope


def logistic_recalibration(y_true: NDArray[np.int64], p: NDArray[np.float64],
                           executor: Any = None) -> Recalibration:
    """Calibration-in-the-large and calibration slope of positive-class probabilities
    (the fits' row sums reduced by ``executor``, default in this process).

    >>> import numpy as np
    >>> p = np.array([0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9])
    >>> r = logistic_recalibration(np.array([0, 0, 1, 0, 1, 0, 1, 1]), p)
    >>> round(r.citl, 6), round(r.slope, 4)
    (0.0, 1.0739)
    """
    y = np.asarray(y_true)
    logit, clipped = logit_of(np.asarray(p, dtype=np.float64))
    large = fit_logistic_rows(RecalibrationRows(y, logit, "citl"), 1, 1, executor)
    slope = fit_logistic_rows(RecalibrationRows(y, logit, "slope"), 2, 1, executor)
    return Recalibration(
        citl=float(large.coef[0, 0]), citl_se=float(np.sqrt(large.cov[0, 0, 0])),
        slope=float(slope.coef[1, 0]), slope_se=float(np.sqrt(slope.cov[0, 1, 1])),
        slope_intercept=float(slope.coef[0, 0]), clipped=clipped)
