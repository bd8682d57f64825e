"""The recalibration GLM fitted by IRLS on per-cell sufficient sums, reduced over row chunks.

Binomial GLM with logit link and an offset, ``eta_i = o_i + x_i' beta``,
``q_i = expit(eta_i)``, the design row ``x_i = C[cell_i]`` a row of the cells x columns
matrix ``C`` (:class:`.design.Cells`). Newton-Raphson, i.e. IRLS for the canonical link
(McCullagh & Nelder 1989, sec. 2.5; Agresti 2013, sec. 4.6.2)::

    H(beta) = X' W X = C' diag(w_c) C,     w_c = sum_{cell_i = c} q_i (1 - q_i)
    U(beta) = X' (y - q) = C' r,           r_c = sum_{cell_i = c} (y_i - q_i)
    D(beta) = 2 sum_i [softplus(eta_i) - y_i eta_i]     (the deviance for 0/1 outcomes)
    beta <- beta + t H^{-1} U

from ``beta = 0``, ``t`` halved until the deviance does not increase; stopped once no
coefficient moves by more than ``STEP_TOL (1 + |beta|)``; after ``MAX_ITER`` steps, or a
non-finite estimate, :class:`FloatingPointError` ("did not converge", e.g. separation).
``Cov(beta) = H^{-1}`` at the estimate (dispersion 1).

Prior weights ``a_i`` (a column ``w``; docs/weights.md) multiply every row's terms. With a
column ``m`` (meat weights) the covariance is the sandwich ``H^{-1} (C' diag(m_c) C) H^{-1}``,
``m_c = sum_{cell_i = c} m_i (y_i - q_i)^2`` (HC0; statsmodels ``var_weights`` with
``cov_type="HC0"``).

``partial(start, stop, **shared)`` returns the per-cell sums over rows ``start:stop``; the
partials of :func:`part_ranges` are added in range order by :func:`calaudit.scale.map_sum`,
so the fit is the same bytes on every executor.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from calaudit import scale
from calaudit.scale import TASK_ROWS, ArrayRows, task_ranges

#: Rows per partial sum (a constant: the ranges depend on n only).
PART_ROWS = TASK_ROWS
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
    """The fixed row ranges of the fit's reductions (:func:`calaudit.scale.
    task_ranges` with ``PART_ROWS`` rows each)."""
    return task_ranges(n, PART_ROWS)


def ordered_sum(partial: Partial, n: int, shared: dict[str, Any]) -> dict[str, NDArray]:
    """The partials of :func:`part_ranges` added in range order (a left fold) by
    :func:`calaudit.scale.map_sum`."""
    return scale.map_sum(partial, part_ranges(n), shared)


def model_rows(y: NDArray[np.float64] | None, offset: NDArray[np.float64],
               cell: NDArray[np.int32], **weights: NDArray[np.float64] | None) -> ArrayRows:
    """The fit's row source: columns ``y`` (left out when None), ``offset``, ``cell`` and
    the prior and meat weights ``w``, ``m`` that are given."""
    columns = {"offset": offset, "cell": cell,
               **{k: v for k, v in weights.items() if v is not None}}
    return ArrayRows(columns if y is None else {"y": y, **columns})


def glm_partial(start: int, stop: int, *, rows: Any, cell_eta: NDArray[np.float64],
                weights: tuple[str, ...] = ()) -> dict[str, NDArray[np.float64]]:
    """Rows ``start:stop`` of the source ``rows`` (columns ``y``, ``offset``, ``cell`` and
    the ``weights`` columns), per cell: ``weight`` (sum of ``a q (1 - q)``), ``residual``
    (sum of ``a (y - q)``), with ``m`` ``meat`` (sum of ``m (y - q)^2``); and the
    ``deviance``. ``cell_eta = C beta`` (cells,), or (models, cells): then every output
    has one row per model."""
    part = rows.read(start, stop, ("y", "offset", "cell", *weights))
    sums = [_glm_sums(part["y"], part["offset"], part["cell"], eta, part.get("w"),
                      part.get("m")) for eta in np.atleast_2d(cell_eta)]
    return _stacked(sums, np.ndim(cell_eta) == 2)


def _glm_sums(yy: NDArray[np.float64], offset: NDArray[np.float64], cc: NDArray[np.int32],
              cell_eta: NDArray[np.float64], a: NDArray[np.float64] | None = None,
              meat: NDArray[np.float64] | None = None) -> dict[str, NDArray[np.float64]]:
    eta = offset + cell_eta[cc]
    q = special.expit(eta)
    if a is None:
        # np.sum, not a BLAS dot: the bits of a threaded dot depend on the BLAS thread count
        deviance = 2.0 * (np.sum(np.logaddexp(0.0, eta)) - np.sum(yy * eta))
        return {"weight": np.bincount(cc, q * (1.0 - q), minlength=cell_eta.size),
                "residual": np.bincount(cc, yy - q, minlength=cell_eta.size),
                "deviance": np.array([deviance])}
    deviance = 2.0 * np.sum(a * (np.logaddexp(0.0, eta) - yy * eta))
    out = {"weight": np.bincount(cc, a * q * (1.0 - q), minlength=cell_eta.size),
           "residual": np.bincount(cc, a * (yy - q), minlength=cell_eta.size),
           "deviance": np.array([deviance])}
    if meat is not None:
        out["meat"] = np.bincount(cc, meat * (yy - q) ** 2, minlength=cell_eta.size)
    return out


def _stacked(sums: list[dict[str, NDArray]], many: bool) -> dict[str, NDArray]:
    """One model's sums as they are; several models' stacked, one row each."""
    if not many:
        return sums[0]
    return {name: np.stack([s[name].reshape(-1) for s in sums]) for name in sums[0]}


#: What a fit that fails raises (no convergence, a singular information matrix).
FIT_ERRORS = (ValueError, FloatingPointError, np.linalg.LinAlgError)


Design = NDArray[np.float64] | Callable[[], NDArray[np.float64]]


def weight_columns(w: NDArray | None, m: NDArray | None) -> tuple[str, ...]:
    """The weight columns of the rows: ``()``, ``("w",)`` or ``("w", "m")``."""
    return () if w is None else ("w",) if m is None else ("w", "m")


def fit_many(n: int, designs: list[Design], rows: Any, weights: tuple[str, ...] = ()
             ) -> list[Fit | Exception]:
    """Several models on the same rows (``designs``: each cells x its columns, or a
    function that builds it) fitted in lockstep: each round, one reduction
    (:func:`glm_partial` with one ``C beta`` row per model still iterating) gives every
    model the sums its Newton step asks for (each model's steps are those of a fit alone).
    A design given as a function is built when it is used and dropped after. A model that
    fails gives its exception in place of the fit. ``weights``: the rows' weight columns
    (:func:`weight_columns`)."""
    builders = [design if callable(design) else (lambda design=design: design)
                for design in designs]
    steps = [_newton(build) for build in builders]
    results: list[Fit | Exception | None] = [None] * len(designs)
    wanted = {}
    for k, step in enumerate(steps):
        wanted[k] = next(step)
    while wanted:
        order = sorted(wanted)
        etas = np.stack([builders[k]() @ wanted[k] for k in order])
        shared = {"rows": rows, "cell_eta": etas}
        out = ordered_sum(glm_partial, n, {**shared, "weights": weights} if weights else shared)
        for j, k in enumerate(order):
            try:
                wanted[k] = steps[k].send({name: out[name][j] for name in out})
            except StopIteration as stop:
                results[k] = stop.value
                del wanted[k]
            except FIT_ERRORS as exc:
                results[k] = exc
                del wanted[k]
    return results  # type: ignore[return-value]


def _newton(build: Callable[[], NDArray[np.float64]]
            ) -> Generator[NDArray[np.float64], dict, Fit]:
    """Newton-Raphson with step halving from ``beta = 0``, as a generator: it yields each
    ``beta`` whose per-cell ``weight``, ``residual`` and ``deviance`` it needs and is sent
    them (:func:`fit_many` drives several at once); returns the :class:`Fit`. ``build()``
    gives the design (cells x columns) each time it is needed."""
    def sums(out: dict[str, NDArray]) -> dict[str, NDArray]:
        design = build()
        meat = ({} if "meat" not in out else
                {"meat": design.T @ (design * out["meat"][:, None])})
        return {"hessian": design.T @ (design * out["weight"][:, None]),
                "score": design.T @ out["residual"], "deviance": out["deviance"][0], **meat}

    beta = np.zeros(build().shape[1])
    current = sums((yield beta))
    for _ in range(MAX_ITER):
        step = np.linalg.solve(current["hessian"], current["score"])
        if not np.all(np.isfinite(step)):
            break
        for _ in range(MAX_HALVINGS):
            trial = sums((yield beta + step))
            if trial["deviance"] <= current["deviance"] * (1.0 + 1e-12):
                break
            step = step / 2.0
        beta, current = beta + step, trial
        if np.max(np.abs(step)) <= STEP_TOL * (1.0 + np.max(np.abs(beta))):
            cov = np.linalg.inv(current["hessian"])
            if "meat" in current:
                cov = cov @ current["meat"] @ cov
            if np.all(np.isfinite(beta)) and np.all(np.isfinite(cov)):
                return Fit(float(current["deviance"]), beta, cov)
            break
    raise FloatingPointError("the recalibration model did not converge")


def mean_partial(start: int, stop: int, *, rows: Any, cell_eta: NDArray[np.float64],
                 weights: tuple[str, ...] = ()) -> dict[str, NDArray[np.float64]]:
    """Rows ``start:stop`` of the source ``rows`` (columns ``offset``, ``cell``; ``w``
    with ``weights``), per cell: ``total`` (sum of ``a q``) and ``slope`` (sum of
    ``a q (1 - q)``), the pieces of a standardised mean and its delta-method gradient;
    ``cell_eta`` (cells,) or one row per model (models, cells), as in :func:`glm_partial`."""
    part = rows.read(start, stop, ("offset", "cell", *weights[:1]))
    cc, a = part["cell"], part.get("w")
    sums = []
    for eta in np.atleast_2d(cell_eta):
        q = special.expit(part["offset"] + eta[cc])
        slope = q * (1.0 - q)
        if a is not None:
            q, slope = a * q, a * slope
        sums.append({"total": np.bincount(cc, q, minlength=eta.size),
                     "slope": np.bincount(cc, slope, minlength=eta.size)})
    return _stacked(sums, np.ndim(cell_eta) == 2)


def fitted(offset: NDArray[np.float64], cell: NDArray[np.int32],
           cell_eta: NDArray[np.float64]) -> NDArray[np.float64]:
    """``expit(offset + eta of the row's cell)`` on every row, chunk by chunk."""
    out = np.empty(offset.size)
    for start, stop in part_ranges(offset.size):
        out[start:stop] = special.expit(offset[start:stop] + cell_eta[cell[start:stop]])
    return out
