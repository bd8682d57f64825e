"""Calibration-error metrics of one data set (the estimators of :mod:`calaudit.metrics`),
each with its percentile bootstrap interval on request (:mod:`calaudit.inference.
bootstrap_ci`: one set of resamples per function, bins fixed at the full-data bins).

Row weights (``sample_weight``, docs/weights.md) take the bootstrap's path: every
statistic here is written for a matrix of row weights, so the weighted estimate is the
statistic of the one column ``w`` and its bootstrap replicates those of ``counts * w``.
Binned estimators weight each bin by its total weight."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import registry
from calaudit.inference.bootstrap_ci import Statistics, bootstrap_replicates, ci_params, intervals
from calaudit.metrics.binned import debiased_squared_from_sums, ece_from_sums, mce_from_sums
from calaudit.metrics.brier import brier_score, brier_score_binary
from calaudit.metrics.brier_decomposition import decompose_binned, sum_decompositions
from calaudit.metrics.ece import default_notion, notion_outcomes, scores_and_outcomes
from calaudit.metrics.ece_variants import CanonicalBins, classwise_from_outcomes, classwise_outcomes
from calaudit.metrics.inputs import residuals_of
from calaudit.metrics.log_loss import EPS, clipped_rows, log_loss
from calaudit.metrics.smooth_ece import Smoother, smooth_ece_replicates, smooth_reliability
from calaudit.numerics.binning import Strategy
from calaudit.results import MetricResult


def weighted(statistics: Statistics, sample_weight: NDArray[np.float64] | None) -> Statistics:
    """``statistics`` of row-weight matrices ``W``, as ``statistics(W * w)`` for row
    weights ``w`` (unchanged without them)."""
    if sample_weight is None:
        return statistics
    return lambda weights: statistics(weights * sample_weight[:, None])


def estimates(statistics: Statistics, sample_weight: NDArray[np.float64] | None
              ) -> dict[str, Any]:
    """The estimates: ``statistics(None)`` unweighted, else of the one weight column."""
    if sample_weight is None:
        return dict(statistics(None))
    return {key: float(np.asarray(value).reshape(-1)[0])
            for key, value in statistics(sample_weight[:, None]).items()}


def _with_intervals(metrics: Sequence[MetricResult], statistics: Statistics, n: int,
                    ci_level: float | None, n_resamples: int, rng: np.random.Generator | None,
                    sample_weight: NDArray[np.float64] | None = None
                    ) -> tuple[MetricResult, ...]:
    """The metrics, with ``ci_level`` the percentile intervals of the bootstrap replicates
    of ``statistics`` (keyed by metric id; rows weighted by ``sample_weight``)."""
    if ci_level is None:
        return tuple(metrics)
    statistics = weighted(statistics, sample_weight)
    cis = intervals(bootstrap_replicates(statistics, n, rng, n_resamples), ci_level)
    return tuple(MetricResult(m.id, m.value, {**m.params, **ci_params(ci_level, n_resamples)},
                              ci=cis.get(m.id), title=m.title) for m in metrics)


def calibration_errors(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *,
                       n_bins: int = 15, strategy: Strategy = "uniform",
                       ci_level: float | None = None, n_resamples: int = 1000,
                       rng: np.random.Generator | None = None,
                       sample_weight: NDArray[np.float64] | None = None
                       ) -> tuple[MetricResult, ...]:
    """``ECE = sum_b (n_b / n) |acc_b - conf_b|``, ``MCE = max_b |acc_b - conf_b|`` over the
    non-empty bins (Naeini et al. 2015; Guo et al. 2017, sec. 2), ``brier = (1/n) sum_i
    |p_i - e_{y_i}|^2`` and, for two classes, ``brier_binary = (1/n) sum_i (p_i - y_i)^2``
    (Brier 1950). ``ci_level``: intervals from ``n_resamples`` resamples drawn with
    ``rng``. ``sample_weight``: ``n_b`` is a bin's weight and the Brier scores are weighted
    means (scikit-learn's ``brier_score_loss(sample_weight=)``)."""
    notion = default_notion(y_proba.shape[1])
    binary = y_proba.shape[1] == 2
    w = sample_weight
    # the Brier scores first: their (n, m) residual copy is freed before the bins
    if w is None:
        brier = brier_score(y_true, y_proba)
        brier_binary = brier_score_binary(y_true, y_proba) if binary else None
    else:
        brier = float((residuals_of(y_true, y_proba) ** 2).sum(axis=1) @ w / w.sum())
        brier_binary = (float((y_proba[:, 1] - (y_true == 1)) ** 2 @ w / w.sum())
                        if binary else None)
    binned = notion_outcomes(y_true, y_proba, n_bins=n_bins, strategy=strategy, notion=notion)
    sums = binned.sums() if w is None else binned.sums(w[:, None])
    params = {"notion": notion, "n_bins": n_bins, "binning": strategy, "distance": "L1",
              "bins_used": int((sums.count > 0).sum())}
    metrics = [
        MetricResult("ece", _one(ece_from_sums(sums)), params,
                     title=registry.title("ece", notion)),
        MetricResult("mce", _one(mce_from_sums(sums)), params,
                     title=registry.title("mce", notion)),
        MetricResult("brier", brier, {"definition": "mean squared error of the probability vector"},
                     title=registry.title("brier")),
    ]
    if binary:
        metrics.append(MetricResult(
            "brier_binary", brier_binary,
            {"definition": "mean (p - y)^2 of the positive class (scikit-learn)"},
            title=registry.title("brier_binary")))
    with_ci = ci_level is not None
    squared = (residuals_of(y_true, y_proba) ** 2).sum(axis=1) if with_ci else None
    positive = (y_proba[:, 1] - (y_true == 1)) ** 2 if binary and with_ci else None

    def statistics(weights: NDArray[np.float64]) -> dict[str, Any]:
        sums = binned.sums(weights)
        total = weights.sum(axis=0)
        out = {"ece": ece_from_sums(sums), "mce": mce_from_sums(sums),
               "brier": squared @ weights / total}
        if positive is not None:
            out["brier_binary"] = positive @ weights / total
        return out

    return _with_intervals(metrics, statistics, y_true.size, ci_level, n_resamples, rng, w)


def _one(value: Any) -> float:
    """A float from a scalar or a one-column result."""
    return float(np.asarray(value).reshape(-1)[0])


def ece_variants(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *,
                 n_bins: int = 15, strategy: Strategy = "uniform",
                 canonical_distance: str = "tv", classes: Sequence[str] | None = None,
                 ci_level: float | None = None, n_resamples: int = 1000,
                 rng: np.random.Generator | None = None,
                 sample_weight: NDArray[np.float64] | None = None,
                 debiased: bool = True) -> tuple[MetricResult, ...]:
    """The ECE variants, the Brier decomposition and the log loss (module docstring);
    ``classes`` names the classes in ``params.per_class`` of ``ece_classwise`` (default
    ``"0" .. "m-1"``). ``ci_level``: intervals from ``n_resamples`` resamples drawn with
    ``rng``. ``sample_weight`` weights the rows (module docstring); ``debiased=False``
    leaves ``ece_debiased`` out (its bias term needs frequency weights)."""
    m = y_proba.shape[1]
    notion = default_notion(m)
    w = sample_weight
    column = None if w is None else w[:, None]
    binning = {"n_bins": n_bins, "strategy": strategy}
    scalar = notion_outcomes(y_true, y_proba, **binning)
    # two classes: class 1 one-vs-rest is the binary notion's bins and outcomes (shared)
    per_class = ((*classwise_outcomes(y_true, y_proba[:, :1], **binning), scalar) if m == 2
                 else classwise_outcomes(y_true, y_proba, **binning))
    canonical = CanonicalBins.build(y_true, y_proba, n_bins)
    decomposed = per_class[1:] if m == 2 else per_class

    def statistics(weights: NDArray[np.float64] | None) -> dict[str, Any]:
        sums = scalar.sums(weights)
        parts = sum_decompositions([decompose_binned(b, weights) for b in decomposed])
        return {
            "ece_l2": ece_from_sums(sums, "l2"),
            "ece_classwise": classwise_from_outcomes(per_class, "l1", weights),
            "ece_canonical": canonical.ece(canonical_distance, weights),
            "ece_debiased": np.sqrt(np.maximum(debiased_squared_from_sums(sums), 0.0)),
            "brier_reliability": parts.reliability,
            "brier_resolution": parts.resolution,
            "brier_uncertainty": parts.uncertainty,
            "log_loss": log_loss(y_true, y_proba, weights=weights),
        }

    parts = sum_decompositions([decompose_binned(b, column) for b in decomposed])
    per_class_ece = [_one(ece_from_sums(b.sums(column))) for b in per_class]
    bins = {"n_bins": n_bins, "binning": strategy}
    decomposition = {**bins, "decomposes": "brier_binary" if m == 2 else "brier",
                     "within_bin_variance": _one(parts.within_variance),
                     "within_bin_covariance": _one(parts.within_covariance)}
    params = {
        "ece_l2": {**bins, "notion": notion, "distance": "L2"},
        "ece_classwise": {**bins, "notion": "class-wise", "distance": "L1", "per_class": dict(
            zip(classes or [str(k) for k in range(m)], per_class_ece, strict=True))},
        "ece_canonical": {"n_bins_per_class": n_bins, "binning": "uniform grid",
                          "distance": canonical_distance.upper(),
                          "cells_used": canonical.cells.n_cells,
                          "bin_rule": "ceil(n_bins * p), p = 0 in the first bin"},
        "ece_debiased": {**bins, "notion": notion,
                         "squared": _one(debiased_squared_from_sums(scalar.sums(column)))},
        "brier_reliability": decomposition, "brier_resolution": decomposition,
        "brier_uncertainty": decomposition,
        "log_loss": {"eps": EPS, "clipped_rows": clipped_rows(y_true, y_proba)},
    }
    metrics = [MetricResult(key, float(value), params[key],
                            title=registry.title(key, notion))
               for key, value in estimates(statistics, w).items()
               if debiased or key != "ece_debiased"]
    return _with_intervals(metrics, statistics, y_true.size, ci_level, n_resamples, rng, w)


def smooth_ece_metric(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *,
                      ci_level: float | None = None, n_resamples: int = 1000,
                      rng: np.random.Generator | None = None,
                      sample_weight: NDArray[np.float64] | None = None
                      ) -> tuple[MetricResult, dict[str, Any] | None]:
    """The metric ``smece`` (binary notion for two classes, top-label otherwise; the
    bandwidth is the fixed point ``sigma = smECE_sigma``, recorded in the params) and the
    smoothed reliability diagram at that bandwidth: the smoothed outcome rate ``mu(t)``
    and the score density. ``ci_level``: an interval from ``n_resamples`` resamples drawn
    with ``rng``. ``sample_weight``: every sum over rows weighted (the weighted fixed
    point); the diagram (unweighted) is then ``None``."""
    notion = default_notion(y_proba.shape[1])
    scores, outcomes = scores_and_outcomes(y_true, y_proba, notion)
    if sample_weight is not None:
        sigma, value = Smoother(scores, outcomes, sample_weight[:, None]).at_fixed_points()
        metric = MetricResult("smece", float(value[0]), {
            "notion": notion, "sigma": float(sigma[0]), "kernel": "reflected Gaussian",
            "bandwidth": "weighted fixed point sigma = smECE_sigma"},
            title=registry.title("smece", notion))
        (metric,) = _with_intervals(
            [metric], lambda weights: {"smece": smooth_ece_replicates(scores, outcomes,
                                                                      weights)},
            y_true.size, ci_level, n_resamples, rng, sample_weight)
        return metric, None
    curve = smooth_reliability(scores, outcomes)
    metric = MetricResult("smece", curve.smece, {
        "notion": notion, "sigma": curve.sigma, "kernel": "reflected Gaussian",
        "bandwidth": "fixed point sigma = smECE_sigma (Blasiok & Nakkiran 2023)"},
        title=registry.title("smece", notion))
    (metric,) = _with_intervals(
        [metric], lambda weights: {"smece": smooth_ece_replicates(scores, outcomes, weights)},
        y_true.size, ci_level, n_resamples, rng)
    return metric, {"notion": notion, **curve.to_dict()}
