"""The recalibration model and its tests (binomial GLM, logit link).

Model (binary: ``y`` the positive label and ``p`` its probability; multi-class: the
top-label view, ``y = 1{label = argmax p}`` and ``p = max p``)::

    logit P(y_i = 1) = logit(p_i) + b0 + sum_c beta_c' x_ic

``logit(p_i)`` is an offset (``p`` clipped to ``[1e-6, 1 - 1e-6]``), so ``b0`` is a global
shift and ``beta_c`` a shift that depends on covariate ``c`` (Cox 1958's recalibration
regression with covariate terms). Fitted by IRLS (:mod:`.irls`).

* **Likelihood-ratio tests** (Wilks): deviance of the model without ``c``'s columns minus
  the full model's, against chi^2 with as many degrees of freedom as ``c`` has columns
  (``given others``); and ``intercept + c`` against the intercept alone (``alone``).
* **Standardised level bias** (g-computation): the bias the model implies if every row had
  level ``l`` of ``c``, the other covariates as observed,
  ``B_c(l) = mean_i expit(logit p_i + x_i^(c=l)' beta) - mean_i p_i``, a difference in
  probability; delta-method standard error with ``grad = mean_i q_i (1 - q_i) x_i^(c=l)``,
  ``se^2 = grad' Cov(beta) grad``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from calaudit import scale
from calaudit.attribution.design import Cells, Term
from calaudit.attribution.irls import (
    PART_ROWS,
    Fit,
    fit_many,
    mean_partial,
    model_rows,
    ordered_sum,
    part_ranges,
    weight_columns,
)
from calaudit.numerics.distributions import chi2_sf

CLIP = 1e-6

__all__ = ["CLIP", "Fit", "ModelRows", "covariate_tests", "drop", "fit_glm", "fit_glms",
           "logit_offset", "lr_test", "placed", "standardised_bias", "standardised_biases"]


def logit_offset(prediction: NDArray[np.float64]) -> NDArray[np.float64]:
    """``logit(clip(p, 1e-6, 1 - 1e-6))``."""
    return special.logit(np.clip(prediction, CLIP, 1.0 - CLIP))


@dataclass(frozen=True)
class ModelRows:
    """The rows the model is fitted on: outcomes, offsets, cells of all the terms (built
    once; every sub-model's design is a function of the cell) and the mean prediction."""

    y: NDArray[np.float64]
    offset: NDArray[np.float64]
    cells: Cells
    mean_prediction: float
    #: the rows (``y``, ``offset``, ``cell``) as the run's reductions receive them,
    #: placed once for a block of fits (:func:`placed`); None: placed per fit
    source: Any = field(default=None, compare=False, repr=False)
    #: prior weights ``a`` and, for the sandwich covariance, meat weights ``m`` (None:
    #: unweighted, model-based covariance)
    w: NDArray[np.float64] | None = field(default=None, compare=False, repr=False)
    m: NDArray[np.float64] | None = field(default=None, compare=False, repr=False)
    #: the data's rows, over whose fixed ranges (:func:`~calaudit.attribution.irls.
    #: part_ranges`) the reductions run (-1: ``y.size``, every row used); ``used``: the
    #: rows used when ``y`` is not held (read by the tasks, :mod:`.rows`)
    extent: int = field(default=-1, compare=False, repr=False)
    used: int = field(default=-1, compare=False, repr=False)
    #: the used rows before each range's start (and in all), when not every row is used
    bounds: NDArray[np.int64] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def build(cls, y: NDArray[np.float64], offset: NDArray[np.float64],
              prediction: NDArray[np.float64], terms: Sequence[Term],
              rows: NDArray[np.intp], w: NDArray[np.float64] | None = None,
              m: NDArray[np.float64] | None = None) -> ModelRows:
        every = rows.size == y.size  # rows are sorted: then rows = 0..n-1, no copies
        pick = (lambda v: v) if every else (lambda v: None if v is None else v[rows])
        bounds = None if every else np.searchsorted(
            rows, [*(start for start, _ in part_ranges(y.size)), y.size]).astype(np.int64)
        mean = (float("nan") if not rows.size else _ranged_mean(pick(prediction), bounds)
                if w is None else float(np.dot(pick(w), pick(prediction)) / pick(w).sum()))
        return cls(pick(y), pick(offset), Cells.build(terms, rows), mean, w=pick(w),
                   m=pick(m), extent=y.size, bounds=bounds)

    @property
    def n_rows(self) -> int:
        """The rows the reductions' ranges run over."""
        return self.y.size if self.extent < 0 else self.extent

    @property
    def total(self) -> float:
        """The rows' number, or the sum of their weights."""
        if self.w is not None:
            return float(self.w.sum())
        return float(self.y.size if self.y is not None else self.used)

    @property
    def weights(self) -> tuple[str, ...]:
        return weight_columns(self.w, self.m)


@contextlib.contextmanager
def placed(data: ModelRows) -> Iterator[ModelRows]:
    """``data`` with its rows placed where the run's reductions run, once for every fit and
    standardised bias of the block, released when it exits; already placed: as it is."""
    if data.source is not None:
        yield data
        return
    rows = model_rows(data.y, data.offset, data.cells.cell, w=data.w, m=data.m)
    with scale.resident(rows if data.bounds is None else
                        UsedRows(rows, data.bounds, data.n_rows)) as placed_rows:
        yield replace(data, source=placed_rows)


def _ranged_mean(values: NDArray[np.float64], bounds: NDArray[np.int64] | None) -> float:
    """The mean of the used rows' ``values``, summed range by range of the data's rows
    (``bounds``; None: every row used) and added in range order (as a reduction)."""
    if bounds is None:
        return float(values.mean()) if values.size <= PART_ROWS else float(
            scale.fold({"s": np.array([np.sum(values[a:b])])}
                       for a, b in part_ranges(values.size))["s"][0] / values.size)
    sums = scale.fold({"s": np.array([np.sum(values[a:b])])}
                      for a, b in zip(bounds[:-1], bounds[1:], strict=True))
    return float(sums["s"][0] / values.size)


class UsedRows:
    """The used rows (:func:`~calaudit.attribution.irls.model_rows`) read by ranges of
    the data's rows: range ``[start, stop)`` gives the used rows among them (``bounds``:
    the used rows before each range's start, and in all)."""

    def __init__(self, rows: Any, bounds: NDArray[np.int64], n: int) -> None:
        self.rows, self.bounds, self.n = rows, bounds, int(n)

    def read(self, start: int, stop: int, names: Any) -> dict[str, NDArray]:
        last = len(self.bounds) - 1
        lo = self.bounds[start // PART_ROWS]
        hi = self.bounds[last if stop % PART_ROWS else min(stop // PART_ROWS, last)]
        return self.rows.read(int(lo), int(hi), names)


def fit_glm(data: ModelRows, terms: Sequence[Term]) -> Fit:
    """Binomial GLM of ``data.y`` with logit link, ``data.offset`` and the columns of
    ``terms`` (and the intercept), fitted by :func:`calaudit.attribution.irls.fit_many`."""
    with placed(data) as rows:
        result = fit_many(rows.n_rows, [data.cells.design(terms)], rows.source,
                          data.weights)
    if isinstance(result[0], Exception):
        raise result[0]
    return result[0]


def fit_glms(data: ModelRows, models: Sequence[Sequence[Term]]) -> list[Fit]:
    """:func:`fit_glm` of each model (a list of terms), fitted in lockstep
    (:func:`calaudit.attribution.irls.fit_many`); a model that cannot be fitted raises its
    error (the first in the order given)."""
    with placed(data) as rows:
        fits = fit_many(data.n_rows, [functools.partial(data.cells.design, terms)
                                      for terms in models], rows.source, data.weights)
    for fit in fits:
        if isinstance(fit, Exception):
            raise fit
    return fits  # type: ignore[return-value]


def lr_test(reduced: Fit, full: Fit, df: int) -> float:
    """Likelihood-ratio p-value ``P(chi^2_df >= D_reduced - D_full)``."""
    if df <= 0:
        return 1.0
    return float(chi2_sf(max(reduced.deviance - full.deviance, 0.0), df))


def drop(terms: Sequence[Term], name: str) -> list[Term]:
    return [t for t in terms if t.name != name]


def covariate_tests(data: ModelRows, terms: Sequence[Term]
                    ) -> tuple[Fit, dict[str, tuple[float, float]]]:
    """The full fit and, per covariate, ``(p given others, p alone, LR statistic given
    others)``; with a sandwich covariance (meat weights) Wald tests and statistic (module
    docstring)."""
    models = [list(terms), []]
    for term in terms:
        models += [drop(terms, term.name), [term]]
    full, null, *rest = fit_glms(data, models)
    out = {}
    first = 1
    for k, term in enumerate(terms):
        df = len(term.columns)
        if data.m is not None:
            given = wald_statistic(full, slice(first, first + df))
            alone = float(chi2_sf(wald_statistic(rest[2 * k + 1], slice(1, 1 + df)), df))
            out[term.name] = (float(chi2_sf(given, df)) if df else 1.0,
                              alone if df else 1.0, given)
        else:
            reduced, alone = rest[2 * k], lr_test(null, rest[2 * k + 1], df)
            out[term.name] = (lr_test(reduced, full, df), alone,
                              max(reduced.deviance - full.deviance, 0.0))
        first += df
    return full, out


def wald_statistic(fit: Fit, columns: slice) -> float:
    """``beta_c' V_cc^{-1} beta_c`` of the coefficients ``columns`` (0 for none)."""
    beta, cov = fit.params[columns], fit.cov[columns, columns]
    return float(beta @ np.linalg.solve(cov, beta)) if beta.size else 0.0


def standardised_bias(full: Fit, terms: Sequence[Term], data: ModelRows, name: str,
                      level: int, z: float) -> tuple[float, float, float]:
    """``(B_c(l), low, high)``: the standardised bias and its delta-method interval (the
    per-cell sums of ``q`` and ``q (1 - q)`` reduced over row chunks)."""
    return standardised_biases(full, terms, data, [(name, level)], z)[0]


def standardised_biases(full: Fit, terms: Sequence[Term], data: ModelRows,
                        levels: Sequence[tuple[str, int]], z: float
                        ) -> list[tuple[float, float, float]]:
    """:func:`standardised_bias` of every ``(covariate, level)`` of ``levels``, from one
    reduction over the rows (one ``C beta`` row per level)."""
    if not levels:
        return []
    etas = np.stack([data.cells.design(terms, level) @ full.params for level in levels])
    shared = {"weights": data.weights} if data.weights else {}
    with placed(data) as rows:
        sums = ordered_sum(mean_partial, data.n_rows, {"rows": rows.source, "cell_eta": etas,
                                                       **shared})
    out, total = [], data.total
    for k, level in enumerate(levels):
        bias = float(sums["total"][k].sum() / total - data.mean_prediction)
        grad = sums["slope"][k] @ data.cells.design(terms, level) / total
        se = float(np.sqrt(max(grad @ full.cov @ grad, 0.0)))
        out.append((bias, bias - z * se, bias + z * se))
    return out
