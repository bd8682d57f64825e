"""Clinical calibration measures and classical calibration tests of binary models.

**Spiegelhalter's z** (Spiegelhalter 1986):
``z = sum (y_i - p_i)(1 - 2 p_i) / sqrt(sum (1 - 2 p_i)^2 p_i (1 - p_i))``, two-sided
p-value ``2 Phi(-|z|)`` (rms ``val.prob`` ``S:z``/``S:p``); on weighted rows the same
reduction with the weights and the null law of sampled labels (:func:`spiegelhalter`).

**Hosmer-Lemeshow** (Hosmer & Lemeshow 1980), as R ResourceSelection ``hoslem.test``:
groups between the distinct ``0, 1/g, ..., 1`` quantiles of ``p`` (type 7), right-closed
with the lowest value included; ``sum (O - E)^2 / E`` over events and non-events of every
group against chi-square with ``G - 2`` degrees of freedom (``G`` groups realised). Off by
default: it depends on the grouping, has low power for small n and rejects irrelevant
deviations for large n. Other than frequency weights:
:func:`calaudit.inference.weighted_tests.weighted_hosmer_lemeshow`.

Both tests' sums are reductions over :func:`calaudit.scale.task_ranges` (``np.sum`` of
elementwise products, no BLAS). The clinical metrics are the logistic recalibration of
:mod:`calaudit.metrics.clinical`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import registry, scale
from calaudit.data.weights import SampleWeights
from calaudit.inference import applicability as rules
from calaudit.inference.bootstrap_ci import intervals
from calaudit.inference.weighted_tests import null_columns, weighted_hosmer_lemeshow
from calaudit.metrics.clinical import CLIP as LOGIT_CLIP
from calaudit.metrics.clinical import (
    logistic_recalibration,
    logit_of,
    recalibration_of_counts,
    recalibration_of_rows,
)
from calaudit.metrics.row_bootstrap import Draws
from calaudit.numerics.binning import weighted_quantiles
from calaudit.numerics.distributions import chi2_sf, norm_sf
from calaudit.numerics.order_statistics import quantiles_of_rows
from calaudit.results import MetricResult, Status, TestResult
from calaudit.scale import ArrayRows, stream_seed, task_ranges


def _reduce(partial: Any, y: NDArray, p: NDArray, w: NDArray | None = None, **shared: Any
            ) -> dict[str, NDArray]:
    """``partial`` over the fixed row ranges of the columns ``y``, ``p`` (and ``w``)."""
    columns = {"y": y, "p": p} if w is None else {"y": y, "p": p, "w": w}
    with scale.resident(ArrayRows(columns)) as rows:
        return scale.map_sum(partial, task_ranges(p.size), {**shared, "rows": rows})


def spiegelhalter_partial(start: int, stop: int, *, rows: Any, weighted: bool = False
                          ) -> dict[str, NDArray]:
    """``[V, T, sum u q, sum u (1 - q)]`` over the rows ``[start, stop)`` of the row source
    ``rows``: columns ``y``, ``p`` and, ``weighted``, the null's ``q``, ``d``, ``r``, ``a``
    and ``u`` (:func:`spiegelhalter`; unweighted ``q = p`` and the rest 1). ``V``'s term
    ``a c^2 [q (1 - p)^2 + (1 - q) p^2 / r^2]`` (``c = 1 - 2p``) is summed as ``a c^2 p (1 -
    p) + a c^2 [(q - p) c + (1 - q) p^2 (1 / r^2 - 1)]``: unit weights add exact zeros."""
    read = rows.read(start, stop, ["y", "p"] + (list("qdrau") if weighted else []))
    y, p = np.asarray(read["y"], dtype=np.float64), read["p"]
    q, d, r, a, u = ([np.asarray(read[k], dtype=np.float64) for k in "qdrau"] if weighted
                     else (p, 1.0, 1.0, 1.0, 1.0))
    centred = 1.0 - 2.0 * p
    w = np.where(y > 0, d, d / r)
    extra = (q - p) * centred + (1.0 - q) * p * p * (1.0 / (r * r) - 1.0)
    return {"sums": np.array([np.sum(a * centred * centred * p * (1.0 - p)
                                     + a * centred * centred * extra),
                              np.sum(w * (y - p) * centred),
                              np.sum(u * q), np.sum(u * (1.0 - q))])}


def hosmer_lemeshow_partial(start: int, stop: int, *, rows: Any, inner: NDArray[np.float64],
                            size: int, weighted: bool = False) -> dict[str, NDArray]:
    """Per-group events, counts and expected events of the rows ``[start, stop)`` (groups
    ``searchsorted(inner, p, "left")``), each row counted ``w`` times when ``weighted``."""
    read = rows.read(start, stop, ["y", "p", "w"] if weighted else ["y", "p"])
    y, p = np.asarray(read["y"], dtype=np.float64), read["p"]
    w = np.asarray(read["w"], dtype=np.float64) if weighted else np.ones(p.size)
    index = np.searchsorted(inner, p, side="left")
    return {"events": np.bincount(index, weights=w * y, minlength=size),
            "count": np.bincount(index, weights=w, minlength=size),
            "expected": np.bincount(index, weights=w * p, minlength=size)}


@dataclass(frozen=True)
class Spiegelhalter:
    z: float
    p_value: float
    variance: float


def spiegelhalter_test(y_true: NDArray[np.int64], p: NDArray[np.float64]) -> Spiegelhalter:
    """Spiegelhalter's z and its two-sided p-value (NaN when the variance is 0).

    >>> import numpy as np
    >>> r = spiegelhalter_test(np.array([0, 1, 1, 0]), np.array([0.2, 0.7, 0.9, 0.4]))
    >>> round(r.z, 6), round(r.p_value, 6)
    (-1.005038, 0.314879)
    """
    y = np.asarray(y_true, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    if p.size == 0:  # no range to reduce over; the variance of no rows is 0
        return Spiegelhalter(math.nan, math.nan, 0.0)
    return _spiegelhalter_of(_reduce(spiegelhalter_partial, y, p)["sums"])


def spiegelhalter_of_rows(rows: Any, n: int) -> Spiegelhalter:
    """:func:`spiegelhalter_test` of the ``n`` rows of a row source (``y``, ``p``)."""
    if n == 0:
        return Spiegelhalter(math.nan, math.nan, 0.0)
    return _spiegelhalter_of(scale.map_sum(spiegelhalter_partial, task_ranges(n),
                                           {"rows": rows})["sums"])


def _spiegelhalter_of(sums: NDArray) -> Spiegelhalter:
    variance, score = sums[:2]
    variance = float(variance)
    if variance <= 0.0:
        return Spiegelhalter(math.nan, math.nan, variance)
    z = float(score / math.sqrt(variance))
    return Spiegelhalter(z, float(2.0 * norm_sf(abs(z))), variance)


@dataclass(frozen=True)
class HosmerLemeshow:
    statistic: float
    df: int
    p_value: float
    observed: NDArray[np.float64]   # (G, 2): non-events, events
    expected: NDArray[np.float64]   # (G, 2)


def hosmer_lemeshow_test(y_true: NDArray[np.int64], p: NDArray[np.float64],
                         groups: int = 10, counts: NDArray[np.float64] | None = None
                         ) -> HosmerLemeshow:
    """Hosmer-Lemeshow statistic, degrees of freedom ``G - 2`` and p-value. ``counts``
    (frequency weights): the test of the rows repeated ``counts_i`` times."""
    y = np.asarray(y_true, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    probabilities = np.linspace(0.0, 1.0, groups + 1)
    if counts is None:
        breaks = np.unique(np.quantile(p, probabilities))
    else:
        kept = counts > 0
        breaks = np.unique(weighted_quantiles(p[kept], counts[kept], probabilities, True))
    size = max(breaks.size - 1, 1)
    return _hosmer_lemeshow_of(_reduce(hosmer_lemeshow_partial, y, p, counts,
                                       inner=breaks[1:-1], size=size,
                                       weighted=counts is not None))


def _hosmer_lemeshow_of(sums: dict[str, NDArray]) -> HosmerLemeshow:
    events, count, expected_events = sums["events"], sums["count"], sums["expected"]
    keep = count > 0
    observed = np.column_stack([count - events, events])[keep]
    expected = np.column_stack([count - expected_events, expected_events])[keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = float(np.sum((observed - expected) ** 2 / expected))
    df = int(keep.sum()) - 2
    p_value = float(chi2_sf(statistic, df)) if df >= 1 else math.nan
    return HosmerLemeshow(statistic, df, p_value, observed, expected)


def spiegelhalter(y_true: NDArray[np.int64], p: NDArray[np.float64],
                  weights: SampleWeights | None = None) -> TestResult:
    """Spiegelhalter's z test, INCONCLUSIVE under the rules of ``applicability``.
    ``weights`` (docs/weights.md): ``T = sum_i w_i (y_i - p_i)(1 - 2 p_i)``, null mean 0,
    variance ``V = sum_i a_i (1 - 2 p_i)^2 [q_i (1 - p_i)^2 + (1 - q_i) p_i^2 / r_i^2]``
    (``q``, ``r``, ``a``: :mod:`calaudit.inference.weighted_tests`), ``z = T / sqrt(V)``."""
    if weights is None:
        # (1 - p).sum() without the n-row difference: numpy's own pairwise additions
        return spiegelhalter_result(spiegelhalter_test(y_true, p), y_true.size,
                                    (float(p.sum()), float(np.add.reduce(1 - p))))
    d = weights.design
    columns = {"y": np.asarray(y_true, dtype=np.float64), "p": p,
               **null_columns(weights, p, True), "u": weights.units(d),
               "a": d if weights.kind == "frequency" else d * d}
    with scale.resident(ArrayRows(columns)) as rows:
        sums = scale.map_sum(spiegelhalter_partial, task_ranges(p.size),
                             {"rows": rows, "weighted": True})["sums"]
    return spiegelhalter_result(
        _spiegelhalter_of(sums), y_true.size, (float(sums[2]), float(sums[3])),
        "Spiegelhalter z on weighted rows, two-sided normal",
        {"weights": weights.kind, "label_dependent": weights.label_dependent})


def spiegelhalter_result(result: Spiegelhalter, n: int, expected: tuple[float, float],
                         method: str = "Spiegelhalter z, two-sided normal",
                         params: dict[str, Any] | None = None) -> TestResult:
    """:func:`spiegelhalter` from its statistic, ``n`` and ``(sum p, sum 1 - p)``."""
    title = registry.title("spiegelhalter")
    reason = rules.too_few_rows(n) or rules.too_few_expected(*expected)
    if reason is None and not math.isfinite(result.z):
        reason = "zero variance: every prediction is 0, 1/2 or 1"
    return TestResult("spiegelhalter", result.z, result.z,
                      math.nan if reason else result.p_value, method,
                      params={"variance": result.variance, **(params or {})},
                      status=Status.INCONCLUSIVE if reason else None, message=reason or "",
                      title=title)


def hosmer_lemeshow(y_true: NDArray[np.int64], p: NDArray[np.float64],
                    groups: int = 10, weights: SampleWeights | None = None,
                    n_resamples: int = 1000, rng: np.random.Generator | None = None,
                    alpha: float = 0.05) -> TestResult:
    """Hosmer-Lemeshow test with the validity rules of ``applicability``. Frequency
    weights without label-dependent sampling: the test of the repeated rows; other
    weights: :func:`calaudit.inference.weighted_tests.weighted_hosmer_lemeshow` with
    ``n_resamples`` redraws from ``rng`` (docs/weights.md)."""
    if weights is not None and (weights.kind != "frequency" or weights.label_dependent):
        if rng is None:
            raise ValueError("the weighted Hosmer-Lemeshow test needs rng: its p-value is "
                             "Monte-Carlo")
        return weighted_hosmer_lemeshow(y_true, p, weights, groups=groups,
                                        n_resamples=n_resamples, alpha=alpha, rng=rng)
    counts = None if weights is None else np.asarray(weights.design, dtype=np.float64)
    return hosmer_lemeshow_result(hosmer_lemeshow_test(y_true, p, groups, counts), groups,
                                  y_true.size if counts is None else int(counts.sum()),
                                  counts is not None)


def hosmer_lemeshow_of_rows(rows: Any, n: int, groups: int = 10) -> TestResult:
    """:func:`hosmer_lemeshow` (unweighted) of the ``n`` rows of a row source (``y``,
    ``p``): the breaks are ``np.quantile(p, ...)``'s bytes from exact order-statistics
    reductions (:func:`calaudit.numerics.order_statistics.quantiles_of_rows`), the group
    sums the same reduction over the same ranges."""
    breaks = np.unique(quantiles_of_rows(rows, "p", np.linspace(0.0, 1.0, groups + 1)))
    size = max(breaks.size - 1, 1)
    sums = scale.map_sum(hosmer_lemeshow_partial, task_ranges(n),
                         {"rows": rows, "inner": breaks[1:-1], "size": size})
    return hosmer_lemeshow_result(_hosmer_lemeshow_of(sums), groups, n, False)


def hosmer_lemeshow_result(result: HosmerLemeshow, groups: int, n: int, frequency: bool
                           ) -> TestResult:
    """The test result of :func:`hosmer_lemeshow` (``n`` rows, counted with their
    ``frequency`` weights) from its statistic."""
    method = f"Hosmer-Lemeshow chi-square, {groups} quantile groups, df = G - 2"
    title = registry.title("hosmer_lemeshow")
    expected = result.expected
    params = {"groups_requested": groups, "groups": int(expected.shape[0]), "df": result.df,
              "caveat": "depends on the grouping; low power; see documentation"}
    if frequency:
        method += ", frequency weights (the repeated rows)"
        params["weights"] = "frequency"
    reason = rules.too_few_rows(n)
    if reason is None and result.df < 1:
        reason = f"only {expected.shape[0]} distinct groups: df = G - 2 < 1"
    if reason is None and (expected.min() < 1 or np.mean(expected < 5) > 0.2):
        reason = ("expected counts too small for the chi-square approximation "
                  f"(min {expected.min():.3g}, {np.mean(expected < 5):.0%} of cells below 5)")
    return TestResult("hosmer_lemeshow", result.statistic, result.statistic,
                      math.nan if reason else result.p_value, method, params=params,
                      status=Status.INCONCLUSIVE if reason else None, message=reason or "",
                      title=title)


def clinical_metrics(y_true: NDArray[np.int64], p: NDArray[np.float64], *,
                     ci_level: float = 0.95, ci_resamples: int | None = None,
                     rng: np.random.Generator | None = None,
                     sample_weight: NDArray[np.float64] | None = None,
                     information_scale: float = 1.0) -> tuple[MetricResult, ...]:
    """``calibration_in_the_large`` (``a`` in ``logit P(y=1) = a + logit(p)``) and
    ``calibration_slope`` (``b`` in ``logit P(y=1) = a + b logit(p)``) of positive-class
    probabilities ``p`` (:mod:`calaudit.metrics.clinical`), with Wald intervals at
    ``ci_level``, or percentile bootstrap intervals of ``ci_resamples`` resamples from
    ``rng`` (the Wald interval in ``params.wald_ci``). NaN unless both outcomes occur.
    ``sample_weight``: weighted fits (``information_scale``: see
    :func:`~calaudit.metrics.clinical.logistic_recalibration`), resamples weighted
    ``counts * w``."""
    present = y_true if sample_weight is None else y_true[sample_weight > 0]
    if not 0 < int(present.sum()) < present.size:
        return _needs_both_classes()
    fit = logistic_recalibration(y_true, p, sample_weight, information_scale)
    boot: dict = {}
    if ci_resamples is not None:
        columns = {"y": y_true, "logit": logit_of(np.asarray(p, dtype=np.float64))[0]}
        if sample_weight is not None:
            columns["w"] = np.asarray(sample_weight, dtype=np.float64)
        boot = _bootstrap(ArrayRows(columns), y_true.size, ci_level, ci_resamples, rng,
                          sample_weight is not None)
    return recalibration_metrics(fit, ci_level, boot, ci_resamples)


def _bootstrap(rows: Any, n: int, ci_level: float, n_resamples: int,
               rng: np.random.Generator, weighted: bool = False) -> dict:
    """The percentile intervals of CITL and slope from ``n_resamples`` resamples of the
    rows (``y``, ``logit``, ``weighted``: ``w``), counts from the block streams
    ``(stream_seed(rng), "clinical_bootstrap", block)``."""
    draws = Draws(stream_seed(rng), "clinical_bootstrap", n_resamples)
    citl, slope = recalibration_of_counts(rows, n, draws, weighted)
    return intervals({"citl": citl, "slope": slope}, ci_level)


def clinical_metrics_of_rows(rows: Any, n: int, events: int, clipped: int, *,
                             ci_level: float = 0.95, ci_resamples: int | None = None,
                             rng: np.random.Generator | None = None
                             ) -> tuple[MetricResult, ...]:
    """:func:`clinical_metrics` (unweighted) of the ``n`` rows of a row source (``y``,
    ``logit(clip(p))``; ``events`` positive, ``clipped`` clipped)."""
    if not 0 < events < n:
        return _needs_both_classes()
    boot = {} if ci_resamples is None else _bootstrap(rows, n, ci_level, ci_resamples, rng)
    return recalibration_metrics(recalibration_of_rows(rows, n, clipped), ci_level, boot,
                                 ci_resamples)


CLINICAL_IDS = ("calibration_in_the_large", "calibration_slope")


def _needs_both_classes() -> tuple[MetricResult, ...]:
    return tuple(MetricResult(key, math.nan, {"note": "needs both outcome classes"},
                              title=registry.title(key)) for key in CLINICAL_IDS)


def recalibration_metrics(fit: Any, ci_level: float, boot: dict, ci_resamples: int | None
                          ) -> tuple[MetricResult, ...]:
    """The two metrics of a recalibration ``fit`` (with ``boot``, the bootstrap
    intervals of ``ci_resamples`` resamples, else Wald's)."""
    out = []
    for metric_id, key in zip(CLINICAL_IDS, ("citl", "slope"), strict=True):
        title = registry.title(metric_id)
        params = {"se": fit.citl_se if key == "citl" else fit.slope_se, "ci_level": ci_level,
                  "logit_clip": LOGIT_CLIP, "clipped_rows": fit.clipped,
                  "model": ("logit P(y=1) = a + logit(p)" if key == "citl"
                            else "logit P(y=1) = a + b logit(p)")}
        if key == "slope":
            params["intercept"] = fit.slope_intercept
        wald = fit.interval(key, ci_level)
        if boot:
            params.update(ci_method="percentile bootstrap", wald_ci=wald,
                          ci_resamples=ci_resamples)
            ci = boot.get(key)
        else:
            params["ci_method"] = "wald"
            ci = wald
        out.append(MetricResult(metric_id, fit.citl if key == "citl" else fit.slope, params,
                                ci=ci, title=title))
    return tuple(out)
