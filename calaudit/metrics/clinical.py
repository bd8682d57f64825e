"""Clinical calibration measures of a binary risk model: logistic recalibration.

With ``l_i = logit(p_i)`` (Cox 1958; Steyerberg 2019, ch. 15; rms ``val.prob``;
CalibrationCurves ``val.prob.ci.2``):

* calibration-in-the-large (CITL): the intercept ``a`` of ``logit P(y=1) = a + l_i``
  (logistic regression with offset ``l``); ideal 0, positive = the model under-predicts;
* calibration slope: ``b`` in ``logit P(y=1) = a' + b l_i``; ideal 1, below 1 = predictions
  too extreme (over-fitting), above 1 = too moderate.

Maximum likelihood by Newton-Raphson with step halving (converged when a full step is
below 1e-10 within 100 iterations and the information is positive definite), vectorised
over weight columns (bootstrap replicates); row sums are ``np.sum`` of elementwise
products (no BLAS) over fixed row ranges. Wald intervals ``coef +- z_{(1+level)/2} se``
from the inverse observed information. Probabilities are clipped to ``[1e-12, 1 - 1e-12]``
before the logit; a fit that does not converge gives NaN.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from calaudit import scale
from calaudit.metrics.row_bootstrap import Draws
from calaudit.numerics.block_draws import totals_table
from calaudit.numerics.distributions import norm_ppf
from calaudit.scale import ArrayRows, task_ranges

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
                 y: NDArray[np.float64], weights: NDArray[np.float64]) -> LogisticFit:
    """Weighted ML logistic regression ``logit P(y=1) = offset + design @ beta`` for every
    column of ``weights`` (n, q) at once."""
    source = ArrayRows({"design": design, "offset": offset, "y": y, "weights": weights})
    with scale.resident(source) as rows:
        return fit_placed_many(rows, source.n, [(design.shape[1], None)], weights.shape[1])[0]


def fit_placed_many(rows: Any, n: int, models: Sequence[tuple[int, Any]],
                    q: int, totals: Any = None) -> list[LogisticFit]:
    """Several fits (``(k, view)``: ``k`` design columns, from the placed rows or made by
    a :class:`RecalibrationRows` ``view``) in lockstep, one reduction per round for every
    unfinished model's next trial (each as if fitted alone); ``totals``: the bootstrap
    totals table of views weighted by bootstrap counts (:class:`CountedRecalibration`)."""
    fits = [_Newton(k, q) for k, _ in models]
    while True:
        active = [j for j, fit in enumerate(fits) if not fit.done]
        if not active:
            return [fit.result() for fit in fits]
        sums = scale.map_sum(newton_partial, task_ranges(n), {
            "rows": rows, "betas": tuple(fits[j].trial for j in active),
            "views": tuple(models[j][1] for j in active), "totals": totals})
        for slot, j in enumerate(active):
            fits[j].update({key: sums[f"{key}{slot}"] for key in ("loglik", "grad", "info")})


class _Newton:
    """One fit's Newton-Raphson with step halving, a trial at a time (the accepted trial's
    pass gives the next step). Converged when a full step is below ``TOL``; at most
    ``MAX_ITER`` steps and 40 evaluations per step."""

    def __init__(self, k: int, q: int) -> None:
        self.beta, self.trial = np.zeros((k, q)), np.zeros((k, q))
        self.converged = np.zeros(q, dtype=bool)
        self.at: dict[str, NDArray[np.float64]] | None = None
        self.current = self.step = self.scale = None
        self.steps = self.tries = 0
        self.done = False

    def update(self, at: dict[str, NDArray[np.float64]]) -> None:
        """Take the pass at ``trial``; set the next trial (or ``done``)."""
        if self.at is None:  # the start, beta = 0
            self.at, self.current = at, at["loglik"]
            return self._next_step()
        value = at["loglik"]
        self.tries += 1
        worse = value < self.current - 1e-12 * np.abs(self.current)
        if worse.any() and self.tries < 40:
            self.scale = np.where(worse, self.scale / 2.0, self.scale)
            self.trial = self.beta + self.step * self.scale
            return None
        if worse.any():
            self.scale = np.where(worse, self.scale / 2.0, self.scale)
        self.beta, self.current, self.at = self.trial, value, at
        self.converged |= (self.scale == 1.0) & (np.abs(self.step).max(axis=0) < TOL)
        self.steps += 1
        if self.converged.all() or self.steps == MAX_ITER:
            self.done = True
            return None
        return self._next_step()

    def _next_step(self) -> None:
        self.step = _solve(self.at["info"], self.at["grad"])
        self.step[:, self.converged] = 0.0
        self.scale = np.ones(self.step.shape[1])
        self.tries = 0
        self.trial = self.beta + self.step * self.scale

    def result(self) -> LogisticFit:
        info, beta, converged = self.at["info"], self.beta.copy(), self.converged.copy()
        cov = np.full_like(info, np.nan)
        converged &= np.linalg.det(info) > 0
        if converged.any():
            cov[converged] = np.linalg.inv(info[converged])
        beta[:, ~converged] = np.nan
        return LogisticFit(beta, cov, converged)


def newton_partial(start: int, stop: int, *, rows: Any, betas: Sequence[NDArray[np.float64]],
                   views: Sequence[Any], totals: Any = None) -> dict[str, NDArray[np.float64]]:
    """Rows ``[start, stop)`` for every model ``j`` (columns ``design``, ``offset``, ``y``,
    ``weights`` of the source or of ``views[j]``; a view weighted by bootstrap counts
    gives them a row block at a time, added in block order) at ``betas[j]`` (k, q):
    ``loglik{j}`` (q,), score ``grad{j}`` (k, q), information ``info{j}`` (q, k, k).
    ``np.sum`` of elementwise products, not BLAS, whose last bits depend on its thread
    count."""
    out = {}
    names = ("design", "offset", "y", "weights")
    for j, (beta, view) in enumerate(zip(betas, views, strict=True)):
        if isinstance(view, CountedRecalibration):
            parts = view.blocks(rows, start, stop, totals)
        else:
            parts = iter([view.read(rows, start, stop) if view is not None else
                          rows.read(start, stop, names)])
        sums = _newton_sums(next(parts), beta)
        for part in parts:
            sums = {key: value + more for (key, value), more in zip(
                sums.items(), _newton_sums(part, beta).values(), strict=True)}
        out.update({f"{key}{j}": value for key, value in sums.items()})
    return out


def _newton_sums(part: dict[str, NDArray], beta: NDArray[np.float64]
                 ) -> dict[str, NDArray[np.float64]]:
    """:func:`newton_partial`'s sums of one part's rows."""
    design, y, weights = part["design"], part["y"], part["weights"]
    eta = part["offset"][:, None] + design[:, 0, None] * beta[0]
    for a in range(1, design.shape[1]):
        eta += design[:, a, None] * beta[a]
    pi = special.expit(eta)
    residual = weights * (y[:, None] - pi)
    return {"loglik": _loglik(eta, y, weights),
            "grad": np.stack([np.sum(design[:, a, None] * residual, axis=0)
                              for a in range(design.shape[1])]),
            "info": _information(weights * pi * (1.0 - pi), design)}


def _information(v: NDArray[np.float64], design: NDArray[np.float64]) -> NDArray[np.float64]:
    """``I[q, a, b] = sum_i v_iq x_ia x_ib`` (q, k, k), symmetric, by ``np.sum``."""
    k = design.shape[1]
    info = np.empty((v.shape[1], k, k))
    for a in range(k):
        va = v * design[:, a, None]
        for b in range(a, k):
            info[:, a, b] = info[:, b, a] = np.sum(va * design[:, b, None], axis=0)
    return info


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
    """``logit(clip(p))`` and the number of clipped probabilities."""
    clipped = int(np.count_nonzero((p < CLIP) | (p > 1.0 - CLIP)))
    return special.logit(np.clip(p, CLIP, 1.0 - CLIP)), clipped


@dataclass(frozen=True)
class RecalibrationRows:
    """The columns of a recalibration fit made range by range from ``y`` and ``logit(p)``
    (``weighted``: and ``weights`` (n, q), else 1): ``model="citl"`` design ``[1]``, offset
    ``logit(p)``; ``model="slope"`` design ``[1, logit(p)]``, offset 0."""

    model: str
    weighted: bool = False

    def read(self, rows: Any, start: int, stop: int) -> dict[str, NDArray]:
        names = ("y", "logit", "weights") if self.weighted else ("y", "logit")
        part = rows.read(start, stop, names)
        logit = part["logit"]
        ones = np.ones((stop - start, 1))
        columns = {"y": np.asarray(part["y"], dtype=np.float64),
                   "weights": part["weights"] if self.weighted else ones}
        if self.model == "citl":
            columns.update(design=ones, offset=logit)
        else:
            columns.update(design=np.column_stack([ones[:, 0], logit]),
                           offset=np.zeros(stop - start))
        return columns


@dataclass(frozen=True)
class CountedRecalibration:
    """:class:`RecalibrationRows` of the bootstrap resamples of ``draws``: the weights
    (rows, B) are each row block's counts (times the source's row weights ``w`` when
    ``weighted``), made by the task that reads the block (:meth:`blocks`)."""

    model: str
    draws: Draws
    weighted: bool = False

    def blocks(self, rows: Any, start: int, stop: int, totals: Any
               ) -> Iterator[dict[str, NDArray]]:
        """The columns of each row block of ``[start, stop)``, in block order."""
        whole = RecalibrationRows(self.model).read(rows, start, stop)
        w = rows.read(start, stop, ["w"])["w"] if self.weighted else None
        for block, lo, hi in scale.blocks(start, stop):
            at = slice(lo - start, hi - start)
            counts = self.draws.counts(totals, block, hi - lo)
            if w is not None:
                counts *= np.asarray(w[at], dtype=np.float64)[:, None]
            yield {**{key: value[at] for key, value in whole.items()}, "weights": counts}


def recalibration_of_counts(rows: Any, n: int, draws: Draws, weighted: bool = False
                            ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """CITL and slope of every bootstrap resample of ``draws`` of a row source (``y``,
    ``logit``; ``weighted``: ``w``, the resample counts times ``w``): the replicates."""
    q = draws.n_resamples
    with scale.resident(rows) as placed, scale.made(totals_table, draws.seed, draws.stream,
                                                    n, q) as totals:
        large, slope = fit_placed_many(placed, n, [
            (1, CountedRecalibration("citl", draws, weighted)),
            (2, CountedRecalibration("slope", draws, weighted))], q, totals)
    return large.coef[0], slope.coef[1]


def _both_fits(source: Any, n: int, q: int, weighted: bool
               ) -> tuple[LogisticFit, LogisticFit]:
    """The CITL and slope fits on the rows of ``source``, placed once, in lockstep."""
    with scale.resident(source) as rows:
        large, slope = fit_placed_many(rows, n, [
            (1, RecalibrationRows("citl", weighted)), (2, RecalibrationRows("slope", weighted))],
            q)
    return large, slope


def recalibration_replicates(y: NDArray[np.float64], p: NDArray[np.float64],
                             weights: NDArray[np.float64]
                             ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """CITL and slope for every weight column (bootstrap replicates)."""
    logit, _ = logit_of(p)
    source = ArrayRows({"y": y, "logit": logit, "weights": weights})
    large, slope = _both_fits(source, source.n, weights.shape[1], weighted=True)
    return large.coef[0], slope.coef[1]


def logistic_recalibration(y_true: NDArray[np.int64], p: NDArray[np.float64],
                           sample_weight: NDArray[np.float64] | None = None,
                           information_scale: float = 1.0) -> Recalibration:
    """Calibration-in-the-large and calibration slope of positive-class probabilities.

    ``sample_weight``: the weighted likelihood ``sum_i w_i log L_i`` (a GLM with
    ``freq_weights``); the standard errors come from the information of the weights
    ``information_scale * w`` (1: frequency weights; ``n_eff / sum w``: the weights
    rescaled to Kish's effective sample size, a GLM with those ``var_weights``).

    >>> import numpy as np
    >>> p = np.array([0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9])
    >>> r = logistic_recalibration(np.array([0, 0, 1, 0, 1, 0, 1, 1]), p)
    >>> round(r.citl, 6), round(r.slope, 4)
    (0.0, 1.0739)
    """
    y = np.asarray(y_true)
    logit, clipped = logit_of(np.asarray(p, dtype=np.float64))
    columns = {"y": y, "logit": logit}
    if sample_weight is not None:
        columns["weights"] = np.asarray(sample_weight, dtype=np.float64)[:, None]
    source = ArrayRows(columns)
    return _recalibration(*_both_fits(source, source.n, 1, sample_weight is not None),
                          clipped, information_scale)


def recalibration_of_rows(rows: Any, n: int, clipped: int) -> Recalibration:
    """:func:`logistic_recalibration` (unweighted) of a row source (``y``, ``logit``)."""
    return _recalibration(*_both_fits(rows, n, 1, False), clipped, 1.0)


def _recalibration(large: LogisticFit, slope: LogisticFit, clipped: int,
                   information_scale: float) -> Recalibration:
    return Recalibration(
        citl=float(large.coef[0, 0]),
        citl_se=float(np.sqrt(large.cov[0, 0, 0] / information_scale)),
        slope=float(slope.coef[1, 0]),
        slope_se=float(np.sqrt(slope.cov[0, 1, 1] / information_scale)),
        slope_intercept=float(slope.coef[0, 0]), clipped=clipped)
