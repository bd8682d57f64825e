"""The recalibration GLM fitted as a reduction over row chunks (no n x k matrix).

Binomial GLM with logit link and an offset, ``eta_i = o_i + x_i' beta``,
``q_i = expit(eta_i)``. Newton-Raphson, which for the canonical link is IRLS
(McCullagh & Nelder 1989, sec. 2.5; Agresti 2013, sec. 4.6.2)::

    H(beta) = sum_i q_i (1 - q_i) x_i x_i'        (= X' W X, the Fisher information)
    U(beta) = sum_i (y_i - q_i) x_i               (= X' W (z - o - X beta), the score)
    D(beta) = 2 sum_i [y_i softplus(-eta_i) + (1 - y_i) softplus(eta_i)]   (deviance, y 0/1)
    beta <- beta + t H^{-1} U

from ``beta = 0`` (the model's own predictions), ``t`` halved until the deviance does not
increase; stopped once a step moves no coefficient by more than ``STEP_TOL (1 + |beta|)``
(Newton converges quadratically, so the estimate is then exact to rounding); after
``MAX_ITER`` steps, or a non-finite estimate, :class:`FloatingPointError` ("did not
converge", e.g. separation). ``Cov(beta) = H^{-1}`` at the estimate (dispersion 1).

Every sum is a *reduction*: ``partial(start, stop, **shared)`` returns the sums over rows
``start:stop`` (the chunk's design is built from the coded form of
:func:`calaudit.attribution.design.coded_design`), the partials of the fixed ranges
:func:`part_ranges` (a function of ``n`` only) are added in range order, so the fit is the
same whoever computes the partials and memory is O(``PART_ROWS`` x columns). Checked
against ``statsmodels.GLM(..., family=Binomial(), offset=o)`` to 1e-10 in the tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import special

from calaudit.attribution.design import design_rows

#: Rows per partial sum (a constant: the ranges depend on n only).
PART_ROWS = 65_536
#: Newton stops once no coefficient moves by more than this times (1 + |beta|).
STEP_TOL = 1e-10
#: Newton steps at most.
MAX_ITER = 100
#: Step halvings at most within one Newton step.
MAX_HALVINGS = 40

Partial = Callable[..., dict[str, NDArray[np.float64]]]


@dataclass(frozen=True)
class Fit:
    """Deviance, coefficients and their covariance of one GLM fit."""

    deviance: float
    params: NDArray[np.float64]
    cov: NDArray[np.float64]


def part_ranges(n: int) -> list[tuple[int, int]]:
    """``[(0, PART_ROWS), (PART_ROWS, 2 PART_ROWS), ..., (., n)]``."""
    return [(start, min(start + PART_ROWS, n)) for start in range(0, n, PART_ROWS)]


def ordered_sum(partial: Partial, n: int, shared: dict[str, NDArray]) -> dict[str, NDArray]:
    """The partials of :func:`part_ranges` added in range order (a left fold)."""
    total: dict[str, NDArray] = {}
    for start, stop in part_ranges(n):
        for key, value in partial(start, stop, **shared).items():
            total[key] = total[key] + value if key in total else np.array(value, copy=True)
    return total


def glm_partial(start: int, stop: int, *, y: NDArray[np.float64],
                offset: NDArray[np.float64], codes: NDArray[np.intp],
                column_term: NDArray[np.intp], column_code: NDArray[np.intp],
                beta: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """Rows ``start:stop``: ``hessian`` (X'WX), ``score`` (X'(y - q)), ``deviance``."""
    x = design_rows(codes[start:stop], column_term, column_code)
    yy = y[start:stop]
    eta = offset[start:stop] + x @ beta
    q = special.expit(eta)
    deviance = 2.0 * np.sum(yy * np.logaddexp(0.0, -eta) + (1.0 - yy) * np.logaddexp(0.0, eta))
    return {"hessian": x.T @ (x * (q * (1.0 - q))[:, None]), "score": x.T @ (yy - q),
            "deviance": np.array([deviance])}


def fit_logistic(shared: dict[str, NDArray]) -> Fit:
    """The GLM of the module docstring; ``shared`` holds ``y``, ``offset`` and the coded
    design (``codes``, ``column_term``, ``column_code``) of the rows to fit."""
    n = int(shared["y"].size)
    beta = np.zeros(1 + shared["column_term"].size)

    def sums(b: NDArray[np.float64]) -> dict[str, NDArray]:
        return ordered_sum(glm_partial, n, {**shared, "beta": b})

    current = sums(beta)
    for _ in range(MAX_ITER):
        step = np.linalg.solve(current["hessian"], current["score"])
        if not np.all(np.isfinite(step)):
            break
        for _ in range(MAX_HALVINGS):
            trial = sums(beta + step)
            if trial["deviance"][0] <= current["deviance"][0] * (1.0 + 1e-12):
                break
            step = step / 2.0
        beta, current = beta + step, trial
        if np.max(np.abs(step)) <= STEP_TOL * (1.0 + np.max(np.abs(beta))):
            cov = np.linalg.inv(current["hessian"])
            if np.all(np.isfinite(beta)) and np.all(np.isfinite(cov)):
                return Fit(float(current["deviance"][0]), beta, cov)
            break
    raise FloatingPointError("the recalibration model did not converge")


def mean_partial(start: int, stop: int, *, offset: NDArray[np.float64],
                 codes: NDArray[np.intp], column_term: NDArray[np.intp],
                 column_code: NDArray[np.intp], beta: NDArray[np.float64]
                 ) -> dict[str, NDArray[np.float64]]:
    """Rows ``start:stop``: ``total`` (sum of ``q``) and ``gradient`` (sum of
    ``q (1 - q) x``), the pieces of a standardised mean and its delta-method gradient."""
    x = design_rows(codes[start:stop], column_term, column_code)
    q = special.expit(offset[start:stop] + x @ beta)
    return {"total": np.array([q.sum()]), "gradient": (q * (1.0 - q)) @ x}


def fitted(offset: NDArray[np.float64], coded: dict[str, NDArray],
           beta: NDArray[np.float64]) -> NDArray[np.float64]:
    """``expit(offset + x' beta)`` on every row of ``coded``, chunk by chunk."""
    out = np.empty(offset.size)
    for start, stop in part_ranges(offset.size):
        x = design_rows(coded["codes"][start:stop], coded["column_term"], coded["column_code"])
        out[start:stop] = special.expit(offset[start:stop] + x @ beta)
    return out
