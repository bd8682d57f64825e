"""Calibration-error metrics of a row source (the estimators of :mod:`calaudit.metrics`),
with percentile bootstrap intervals on request (bins fixed at the full-data bins).

Row weights (``sample_weight``, docs/weights.md: the source's column ``w``) weight every
sum; a bootstrap replicate counts row ``i`` ``C[i, b] w_i`` times. The replicates are the
estimates' formulas on each resample's sums (:mod:`calaudit.metrics.row_bootstrap`), one
reduction over the rows whichever executor reads them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import registry
from calaudit.inference.bootstrap_ci import ci_params, intervals
from calaudit.metrics.binned import debiased_squared_from_sums, ece_from_sums, mce_from_sums
from calaudit.metrics.brier_decomposition import decomposition_from_sums, sum_decompositions
from calaudit.metrics.ece import default_notion
from calaudit.metrics.ece_variants import canonical_from_sums
from calaudit.metrics.log_loss import EPS
from calaudit.metrics.row_bootstrap import Draws, ReplicateSums, replicate_sums
from calaudit.metrics.row_summary import Binning, binned_summary, class_panels, weighted_source
from calaudit.metrics.smooth_bootstrap import smooth_ece_of_counts
from calaudit.metrics.smooth_ece import Smoother, reliability_of
from calaudit.numerics.binning import Strategy
from calaudit.results import MetricResult
from calaudit.scale import stream_seed

#: The block streams' name of the binned statistics' bootstrap counts.
STREAM = "binned_bootstrap"


def _add_intervals(metrics: Sequence[MetricResult],
                   replicates: dict[str, NDArray[np.float64]], ci_level: float,
                   n_resamples: int) -> tuple[MetricResult, ...]:
    """The metrics with the percentile intervals of their replicates."""
    cis = intervals(replicates, ci_level)
    return tuple(MetricResult(m.id, m.value, {**m.params, **ci_params(ci_level, n_resamples)},
                              ci=cis.get(m.id), title=m.title) for m in metrics)


def calibration_errors_of_rows(rows: Any, *, n_bins: int = 15, strategy: Strategy = "uniform",
                               ci_level: float | None = None, n_resamples: int = 1000,
                               rng: np.random.Generator | None = None
                               ) -> tuple[MetricResult, ...]:
    """``ECE = sum_b (n_b / n) |acc_b - conf_b|``, ``MCE = max_b |acc_b - conf_b|`` over the
    non-empty bins (Naeini et al. 2015; Guo et al. 2017, sec. 2), ``brier = (1/n) sum_i
    |p_i - e_{y_i}|^2`` and, for two classes, ``brier_binary = (1/n) sum_i (p_i - y_i)^2``
    (Brier 1950), of a row source (``y``, ``proba``, optionally the row weights ``w``:
    ``n_b`` is a bin's weight and the Brier scores are weighted means). ``ci_level``:
    percentile intervals of ``n_resamples`` resamples (block streams seeded from ``rng``,
    :mod:`calaudit.metrics.row_bootstrap`: the tasks that read the rows draw the counts)."""
    summary = binned_summary(rows, Binning.build(rows, n_bins, strategy))
    notion = default_notion(summary.m)
    metrics = _error_metrics(summary.sums(0), notion, n_bins, strategy, summary.brier,
                             summary.brier_binary if summary.m == 2 else None)
    if ci_level is None:
        return metrics
    boot = replicate_sums(rows, summary.binning, Draws(stream_seed(rng), STREAM, n_resamples))
    return _add_intervals(metrics, _error_replicates(boot), ci_level, n_resamples)


def _error_metrics(sums: Any, notion: str, n_bins: int, strategy: str, brier: float,
                   brier_binary: float | None) -> tuple[MetricResult, ...]:
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
    if brier_binary is not None:
        metrics.append(MetricResult(
            "brier_binary", brier_binary,
            {"definition": "mean (p - y)^2 of the positive class (scikit-learn)"},
            title=registry.title("brier_binary")))
    return tuple(metrics)


def _error_replicates(boot: ReplicateSums) -> dict[str, NDArray[np.float64]]:
    """The replicates of :func:`calibration_errors_of_rows`'s metrics."""
    sums, total = boot.sums(0), boot.total
    out = {"ece": ece_from_sums(sums), "mce": mce_from_sums(sums),
           "brier": boot.brier_sums[0] / total}
    if boot.m == 2:
        out["brier_binary"] = boot.brier_sums[1] / total
    return out


def _one(value: Any) -> float:
    """A float from a scalar or a one-column result."""
    return float(np.asarray(value).reshape(-1)[0])


def ece_variants_of_rows(rows: Any, *, n_bins: int = 15, strategy: Strategy = "uniform",
                         canonical_distance: str = "tv", classes: Sequence[str] | None = None,
                         ci_level: float | None = None, n_resamples: int = 1000,
                         rng: np.random.Generator | None = None,
                         debiased: bool = True) -> tuple[MetricResult, ...]:
    """The ECE variants, the Brier decomposition and the log loss of a row source (``y``,
    ``proba``, optionally the row weights ``w``); ``classes`` names the classes in
    ``params.per_class`` of ``ece_classwise`` (default ``"0" .. "m-1"``).
    ``debiased=False`` leaves ``ece_debiased`` out (its bias term needs frequency
    weights). The intervals: percentile intervals of replicates made from the resamples'
    sums, as in :func:`calibration_errors_of_rows`."""
    summary = binned_summary(rows, Binning.build(rows, n_bins, strategy))
    m = summary.m
    scalar = summary.sums(0)
    per_class = [summary.sums(k) for k in class_panels(m)]
    parts = sum_decompositions([decomposition_from_sums(*summary.moments(k))
                                for k in ((0,) if m == 2 else class_panels(m))])
    count, prob_sums, label_sums = summary.canonical_sums()
    values = {
        "ece_l2": ece_from_sums(scalar, "l2"),
        "ece_classwise": np.stack([ece_from_sums(b) for b in per_class]).mean(axis=0),
        "ece_canonical": canonical_from_sums(count, prob_sums, label_sums,
                                             canonical_distance),
        "ece_debiased": np.sqrt(np.maximum(debiased_squared_from_sums(scalar), 0.0)),
        "brier_reliability": parts.reliability, "brier_resolution": parts.resolution,
        "brier_uncertainty": parts.uncertainty, "log_loss": summary.log_loss}
    params = _variant_params(m, n_bins, strategy, canonical_distance, classes,
                             [_one(ece_from_sums(b)) for b in per_class], parts, count.size,
                             _one(debiased_squared_from_sums(scalar)), summary.clipped_rows)
    metrics = [MetricResult(key, float(value), params[key],
                            title=registry.title(key, default_notion(m)))
               for key, value in values.items() if debiased or key != "ece_debiased"]
    if ci_level is None:
        return tuple(metrics)
    boot = replicate_sums(rows, summary.binning, Draws(stream_seed(rng), STREAM, n_resamples))
    return _add_intervals(metrics, _variant_replicates(boot, canonical_distance), ci_level,
                          n_resamples)


def _variant_replicates(boot: ReplicateSums, canonical_distance: str
                        ) -> dict[str, NDArray[np.float64]]:
    """The replicates of :func:`ece_variants_of_rows`'s metrics (the estimates' formulas
    on each resample's sums)."""
    m = boot.m
    scalar = boot.sums(0)
    parts = sum_decompositions([decomposition_from_sums(*boot.moments(k), floats=False)
                                for k in ((0,) if m == 2 else class_panels(m))])
    return {
        "ece_l2": ece_from_sums(scalar, "l2"),
        "ece_classwise": np.stack([ece_from_sums(boot.sums(k))
                                   for k in class_panels(m)]).mean(axis=0),
        "ece_canonical": canonical_from_sums(*boot.canonical_sums(), canonical_distance),
        "ece_debiased": np.sqrt(np.maximum(debiased_squared_from_sums(scalar), 0.0)),
        "brier_reliability": parts.reliability, "brier_resolution": parts.resolution,
        "brier_uncertainty": parts.uncertainty, "log_loss": boot.log_loss_sums / boot.total}


def _variant_params(m: int, n_bins: int, strategy: str, canonical_distance: str,
                    classes: Sequence[str] | None, per_class_ece: list[float], parts: Any,
                    cells_used: int, debiased_squared: float, clipped: int
                    ) -> dict[str, dict[str, Any]]:
    """The ``params`` of each metric of :func:`ece_variants_of_rows`."""
    notion = default_notion(m)
    bins = {"n_bins": n_bins, "binning": strategy}
    decomposition = {**bins, "decomposes": "brier_binary" if m == 2 else "brier",
                     "within_bin_variance": _one(parts.within_variance),
                     "within_bin_covariance": _one(parts.within_covariance)}
    return {
        "ece_l2": {**bins, "notion": notion, "distance": "L2"},
        "ece_classwise": {**bins, "notion": "class-wise", "distance": "L1", "per_class": dict(
            zip(classes or [str(k) for k in range(m)], per_class_ece, strict=True))},
        "ece_canonical": {"n_bins_per_class": n_bins, "binning": "uniform grid",
                          "distance": canonical_distance.upper(),
                          "cells_used": int(cells_used),
                          "bin_rule": "ceil(n_bins * p), p = 0 in the first bin"},
        "ece_debiased": {**bins, "notion": notion, "squared": debiased_squared},
        "brier_reliability": decomposition, "brier_resolution": decomposition,
        "brier_uncertainty": decomposition,
        "log_loss": {"eps": EPS, "clipped_rows": int(clipped)},
    }


def smooth_ece_metric_of_rows(rows: Any, n_classes: int, *, ci_level: float | None = None,
                              n_resamples: int = 1000, rng: np.random.Generator | None = None
                              ) -> tuple[MetricResult, dict[str, Any]]:
    """The metric ``smece`` (binary notion for two classes, top-label otherwise; the
    fixed-point bandwidth in the params) and the smoothed reliability diagram at that
    bandwidth (``mu(t)`` and the score density) of a row source (``y``, ``proba`` of
    ``n_classes`` columns, optionally the weights ``w``, which weight every sum over rows);
    the interval's resamples drawn as in :func:`calibration_errors_of_rows`, their smECE
    by :mod:`calaudit.metrics.smooth_bootstrap`."""
    curve = reliability_of(Smoother.of_rows(rows))
    notion = default_notion(n_classes)
    metric = MetricResult("smece", curve.smece, {
        "notion": notion, "sigma": curve.sigma, "kernel": "reflected Gaussian",
        "bandwidth": "weighted fixed point sigma = smECE_sigma" if weighted_source(rows)
        else "fixed point sigma = smECE_sigma (Blasiok & Nakkiran 2023)"},
        title=registry.title("smece", notion))
    if ci_level is not None:
        draws = Draws(stream_seed(rng), STREAM, n_resamples)
        (metric,) = _add_intervals([metric], {"smece": smooth_ece_of_counts(rows, draws)},
                                   ci_level, n_resamples)
    return metric, {"notion": notion, **curve.to_dict()}
