"""The recalibration model and its tests (statsmodels GLM, binomial family, logit link).

Model (binary: ``y`` the positive label and ``p`` its probability; multi-class: the
top-label view, ``y = 1{label = argmax p}`` and ``p = max p``)::

    logit P(y_i = 1) = logit(p_i) + b0 + sum_c beta_c' x_ic

``logit(p_i)`` is an offset (coefficient fixed at 1; ``p`` clipped to ``[1e-6, 1 - 1e-6]``),
so every coefficient measures a departure from the model's own predictions: ``b0`` a
global shift, ``beta_c`` a shift that depends on covariate ``c`` (Cox 1958's
recalibration regression with covariate terms). Fitted by IRLS (``statsmodels.GLM``).

* **Likelihood-ratio tests** (Wilks): deviance of the model without ``c``'s columns minus
  the full model's, against chi^2 with as many degrees of freedom as ``c`` has columns
  (``given others``); and ``intercept + c`` against the intercept alone (``alone``).
* **Standardised level bias** (g-computation): the bias the model implies if every row had
  level ``l`` of ``c``, the other covariates as observed,
  ``B_c(l) = mean_i expit(logit p_i + x_i^(c=l)' beta) - mean_i p_i``, a difference in
  probability; its standard error by the delta method,
  ``grad = mean_i q_i (1 - q_i) x_i^(c=l)``, ``se^2 = grad' Cov(beta) grad``.
  Differences between two levels of ``c`` are therefore adjusted for the other
  covariates; a covariate with no effect of its own shows the same bias at every level
  (the average bias its rows carry from the other covariates).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import special, stats

from calaudit.attribution.design import Term, design_matrix

CLIP = 1e-6


def logit_offset(prediction: NDArray[np.float64]) -> NDArray[np.float64]:
    """``logit(clip(p, 1e-6, 1 - 1e-6))``."""
    return special.logit(np.clip(prediction, CLIP, 1.0 - CLIP))


@dataclass(frozen=True)
class Fit:
    """Deviance, coefficients and their covariance of one GLM fit."""

    deviance: float
    params: NDArray[np.float64]
    cov: NDArray[np.float64]


def fit_glm(y: NDArray[np.float64], offset: NDArray[np.float64],
            x: NDArray[np.float64]) -> Fit:
    """Binomial GLM with logit link and ``offset`` (statsmodels IRLS)."""
    import statsmodels.api as sm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sm.GLM(y, x, family=sm.families.Binomial(), offset=offset).fit()
    params = np.asarray(res.params, dtype=np.float64)
    if not np.all(np.isfinite(params)):
        raise FloatingPointError("the recalibration model did not converge")
    return Fit(float(res.deviance), params, np.asarray(res.cov_params(), dtype=np.float64))


def lr_test(reduced: Fit, full: Fit, df: int) -> float:
    """Likelihood-ratio p-value ``P(chi^2_df >= D_reduced - D_full)``."""
    if df <= 0:
        return 1.0
    return float(stats.chi2.sf(max(reduced.deviance - full.deviance, 0.0), df))


def drop(terms: Sequence[Term], name: str) -> list[Term]:
    return [t for t in terms if t.name != name]


def covariate_tests(y: NDArray[np.float64], offset: NDArray[np.float64],
                    terms: Sequence[Term], rows: NDArray[np.intp]
                    ) -> tuple[Fit, dict[str, tuple[float, float]]]:
    """The full fit and, per covariate, ``(p given others, p alone, LR statistic given
    others)``."""
    yy, off = y[rows], offset[rows]
    full = fit_glm(yy, off, design_matrix(terms, rows))
    null = fit_glm(yy, off, design_matrix([], rows))
    out = {}
    for term in terms:
        df = len(term.columns)
        reduced = fit_glm(yy, off, design_matrix(drop(terms, term.name), rows))
        alone = lr_test(null, fit_glm(yy, off, design_matrix([term], rows)), df)
        out[term.name] = (lr_test(reduced, full, df), alone,
                          max(reduced.deviance - full.deviance, 0.0))
    return full, out


def standardised_bias(full: Fit, terms: Sequence[Term], rows: NDArray[np.intp],
                      offset: NDArray[np.float64], prediction: NDArray[np.float64],
                      name: str, level: int, z: float) -> tuple[float, float, float]:
    """``(B_c(l), low, high)``: the standardised bias and its delta-method interval."""
    x = design_matrix(terms, rows, (name, level))
    q = special.expit(offset[rows] + x @ full.params)
    bias = float(q.mean() - prediction[rows].mean())
    grad = (q * (1.0 - q)) @ x / rows.size
    se = float(np.sqrt(max(grad @ full.cov @ grad, 0.0)))
    return bias, bias - z * se, bias + z * se


def fitted_probabilities(y: NDArray[np.float64], offset: NDArray[np.float64],
                         terms: Sequence[Term], rows: NDArray[np.intp]
                         ) -> NDArray[np.float64]:
    """Fitted ``P(y = 1)`` on ``rows`` of the model with ``terms`` (and the intercept)."""
    x = design_matrix(terms, rows)
    fit = fit_glm(y[rows], offset[rows], x)
    return special.expit(offset[rows] + x @ fit.params)
