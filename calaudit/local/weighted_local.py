"""The local tests on weighted rows (docs/weights.md): the exact kernel, or random
features (:mod:`calaudit.local.weighted_features`) when the ``method`` rule
(:func:`calaudit.inference.method.choose_method`) sends the local stage there.

* The kernels: numeric covariates standardised by their weighted mean and sd, bandwidths by
  the median heuristic of the weighted law (pairs ``i < j`` counted ``d_i d_j`` times), the
  numeric covariates' bands at the weighted quantiles. All use the label-independent
  weights ``d``, so the kernel and the levels are fixed given the sampled rows.
* ``KLCE^2_w`` (:mod:`calaudit.local.weighted_klce`) and ``klce_consistency``, its
  Monte-Carlo test with labels redrawn from their law in the sample;
* ``local_consistency``: the aggregate test (:mod:`calaudit.local.aggregate`) of
  ``KLCE^2_w`` and the recalibration score statistics of the weighted residual sums ``R``
  (information from the null variance of ``R_i``,
  ``a_i (q_i (1 - p_i)^2 + (1 - q_i) p_i^2 / r_i^2)`` with ``a = d`` for frequency weights,
  ``d^2`` otherwise; multi-class: ``a_i (diag p_i - p_i p_i^T)``), from the same redraws.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.spatial.distance import pdist

from calaudit import registry
from calaudit.inference.method import LOCAL_STAGE_SECONDS, choose_method
from calaudit.local import aggregate_test as aggregate
from calaudit.local.aggregate import combine
from calaudit.local.bandwidth import GaussianBandwidth
from calaudit.local.encoding import encode_covariates
from calaudit.local.features import product_features
from calaudit.local.groups import Levels, covariate_levels, edge_bands
from calaudit.local.kernel import GaussianProductGram, product_gram
from calaudit.local.kernel_tests import APPROXIMATION_ROWS, inconclusive
from calaudit.local.lcb import plot_points
from calaudit.local.per_class import MAX_PER_CLASS
from calaudit.local.resampling import batched_forms
from calaudit.local.score_members import ScoreMembers
from calaudit.local.weighted_features import feature_resampled, klce_values, row_weights
from calaudit.local.weighted_klce import (
    VectorUnits,
    WeightedUnits,
    klce2_value,
    tie_tolerance,
    unit_sampler,
    weighted_klce2,
)
from calaudit.numerics.binning import weighted_quantiles
from calaudit.numerics.resampling import monte_carlo_pvalue
from calaudit.results import TestResult
from calaudit.scale import stream_seed

#: Local tests with a weighted version.
WEIGHTED_LOCAL_TESTS = ("local_consistency", "klce_consistency")
METHOD = ("consistency resampling, weighted: labels redrawn from their law in the sample "
          "(every unit of a frequency weight), weights following the redrawn labels; "
          "p = (1 + #{T* >= T}) / (1 + B)")
AGGREGATE_METHOD = (METHOD + "; members: a recalibration score statistic of the weighted "
                    "residual sums per covariate and for all covariates together, and "
                    "KLCE^2_w; statistic A = max_j log(w_j / q_j)")


def weighted_median(values: NDArray[np.float64], weights: NDArray[np.float64],
                    frequency: bool) -> float:
    """Median of ``values`` counted ``weights`` times: for whole-number weights the
    ``np.median`` of the repeated values, else :func:`weighted_rank_value` of half."""
    total = float(np.sum(weights))
    if not frequency:
        return weighted_rank_value(values, weights, total / 2.0, strict=False)
    units = int(round(total))
    ranks = (units // 2,) if units % 2 else (units // 2 - 1, units // 2)
    return float(np.mean([weighted_rank_value(values, weights, rank, strict=True)
                          for rank in ranks]))


def weighted_rank_value(values: NDArray[np.float64], weights: NDArray[np.float64],
                        target: float, strict: bool, sort_below: int = 4096) -> float:
    """The smallest value ``v`` whose weight ``W(<= v)`` exceeds ``target`` (``strict``)
    or reaches it: O(n) quickselect, the last ``sort_below`` values sorted."""
    def reached(weight: float) -> bool:
        return weight > target if strict else weight >= target

    below = 0.0
    while values.size > sort_below:
        pivot = np.partition(values, values.size // 2)[values.size // 2]
        less = values < pivot
        upto = values <= pivot
        if reached(below + float(weights[less].sum())):
            values, weights = values[less], weights[less]
        elif reached(below + float(weights[upto].sum())):
            return float(pivot)
        else:
            below += float(weights[upto].sum())
            values, weights = values[~upto], weights[~upto]
    order = np.argsort(values, kind="stable")
    cumulative = below + np.cumsum(weights[order])
    at = np.searchsorted(cumulative, target, side="right" if strict else "left")
    return float(values[order][min(at, values.size - 1)])


def median_nonzero_squared(x: NDArray[np.float64], weights: NDArray[np.float64],
                           frequency: bool) -> float:
    """The weighted median of the non-zero squared distances over pairs ``i < j`` (pair
    weight ``w_i w_j``); 0 if none."""
    squared = pdist(x, "sqeuclidean")
    i, j = np.triu_indices(x.shape[0], 1)
    pair = weights[i] * weights[j]
    keep = (squared > 0) & (pair > 0)
    return weighted_median(squared[keep], pair[keep], frequency) if keep.any() else 0.0


def weighted_bandwidth(features: Any, option: float | None, rng: np.random.Generator,
                       max_rows: int, weights: NDArray[np.float64], frequency: bool,
                       blocks: Any = None) -> GaussianBandwidth:
    """:func:`calaudit.local.bandwidth.choose_bandwidth` on the weighted law (the weighted
    median heuristic per covariate block, on at most ``max_rows`` rows)."""
    if option is not None:
        return GaussianBandwidth(float(option), "option")
    n = weights.size
    rows = np.arange(n) if n <= max_rows else np.sort(rng.choice(n, max_rows, replace=False))
    x = np.asarray(features[rows], dtype=np.float64).reshape(rows.size, -1)
    w = weights[rows]
    parts = [slice(0, x.shape[1])] if blocks is None else list(blocks)
    medians = [m for m in (median_nonzero_squared(x[:, b], w, frequency) for b in parts)
               if m > 0]
    median = float(np.median(medians)) if medians else 0.0
    if median <= 0:
        return GaussianBandwidth(1.0, "default", int(rows.size))
    source = "weighted median" if len(parts) == 1 else "weighted median per covariate"
    return GaussianBandwidth(math.sqrt(median), source, int(rows.size))


def weighted_levels(cov: Any, n_bands: int, weights: NDArray[np.float64],
                    frequency: bool) -> Levels:
    """A covariate's levels on the weighted law: categories, or bands between weighted
    quantiles (labels and codes as :func:`calaudit.local.groups.quantile_bands`)."""
    if cov.kind == "categorical":
        return covariate_levels(cov, n_bands)
    x = np.asarray(cov.values, dtype=np.float64)
    edges = weighted_quantiles(x, weights, np.linspace(0.0, 1.0, n_bands + 1), frequency)
    codes, labels = edge_bands(x, np.unique(edges))
    return Levels(cov.name, codes, labels, np.unique(edges))


def null_variance(units: WeightedUnits | VectorUnits) -> NDArray[np.float64]:
    """Binary: the null variance of each row's weighted residual sum ``R_i`` (module
    docstring); multi-class: the factor ``a_i = t_i f_i^2`` of its covariance
    ``a_i (diag p_i - p_i p_i^T)``."""
    a = units.t * units.f * units.f
    if isinstance(units, VectorUnits):
        return a
    p, q, r = units.p, units.q, units.r
    return a * (q * (1.0 - p) ** 2 + (1.0 - q) * p * p / (r * r))


def resampled(gram: GaussianProductGram, units: WeightedUnits | VectorUnits,
              y: NDArray[np.integer], scores: ScoreMembers, rng: np.random.Generator,
              n_resamples: int) -> tuple[float, NDArray, float, Any]:
    """``KLCE^2_w`` of labels ``y``, its null from ``n_resamples`` unit redraws, its
    Monte-Carlo p-value and the aggregate test of it and the score members on the same
    redraws, from one kernel pass (:func:`calaudit.local.resampling.batched_forms`)."""
    events = units.observed_events(y)
    residual = units.residuals(events)
    sums = units.sums(events, residual, gram.diagonal())
    found: list[NDArray[np.float64]] = []
    level_sums: list[NDArray[np.float64]] = []
    top_sums: list[NDArray[np.float64] | None] = []

    def observe(z: NDArray[np.float64]) -> None:
        level_sums.append(scores.level_sums(z))
        top_sums.append(scores.top_sums(z) if z.ndim == 3 else None)

    forms, null_forms = batched_forms(gram, unit_sampler(units, gram.diagonal(), found),
                                      n_resamples, rng, residual, observe=observe)
    observed = float(klce2_value(forms, sums)[0])
    null = klce2_value(null_forms, np.concatenate(found, axis=1))
    total, squares = float(sums[0, 0]), float(sums[1, 0])
    p_value = monte_carlo_pvalue(observed, null, atol=tie_tolerance(
        units, gram.n, total * total - squares))
    top = None
    if residual.ndim == 3 and scores.top is not None:
        top = np.concatenate([scores.top_sums(residual)] + top_sums, axis=-1)
    members = aggregate.member_values(scores, np.concatenate(
        [scores.level_sums(residual)] + level_sums, axis=-1), top,
        np.concatenate([[observed], null]), p_value)
    return observed, null, p_value, combine(members)


class WeightedLocalTests:
    """The local stage's kernels and tests on weighted rows (module docstring): the
    setup, then :meth:`run`. ``sample_size`` and ``events`` are the audit's weighted sample
    size and effective events (the INCONCLUSIVE rule)."""

    def __init__(self, data: Any, config: Any, streams: dict[str, np.random.Generator], *,
                 sample_size: float, events: float) -> None:
        self.data, self.config, self.local, self.streams = data, config, config.local, streams
        self.sample_size, self.events = sample_size, events
        weights = data.weights
        frequency = weights.kind == "frequency"
        d = np.asarray(weights.design, dtype=np.float64)
        binary = data.is_binary
        self.proba = np.array(data.y_proba[:, 1] if binary else data.y_proba)
        self.units = (WeightedUnits.of(weights, self.proba) if binary
                      else VectorUnits.of(weights, self.proba))
        lc = self.local
        self.encoded = encode_covariates(data.covariates, standardize=True, lazy=True,
                                         weights=d)
        self.levels = [weighted_levels(c, lc.n_bands, d, frequency) for c in data.covariates]
        self.prob_bw = weighted_bandwidth(self.proba, lc.prob_bandwidth,
                                          streams["bandwidth"], lc.median_max_rows, d,
                                          frequency)
        self.cov_bw = weighted_bandwidth(self.encoded.features, lc.cov_bandwidth,
                                         streams["bandwidth"], lc.median_max_rows, d,
                                         frequency, self.encoded.blocks)
        lazy = product_gram(self.proba.reshape(self.proba.shape[0], -1), self.prob_bw.gamma,
                            self.encoded.features, self.cov_bw.gamma, lazy=True)
        self.gram = GaussianProductGram(np.asarray(lazy.features))
        self.choice = choose_method(config, data.n, (1 if binary else data.n_classes)
                                    * lc.n_resamples, streams["features"],
                                    fixed=LOCAL_STAGE_SECONDS, dims=self.gram.features.shape[1])
        self.features = None if not self.choice.features else product_features(
            self.gram.features, self.choice.n_features, self.choice.frequency_seed)
        self.computation = self.choice.to_params()
        if self.features is not None:
            self.computation["approximation"] = self.approximation()

    def approximation(self) -> dict[str, Any]:
        """Feature vs exact ``KLCE^2_w`` of the observed labels on a seeded subsample of
        :data:`~calaudit.local.kernel_tests.APPROXIMATION_ROWS` rows, and the feature
        kernel's errors over its pairs."""
        rows = plot_points(self.data.n, APPROXIMATION_ROWS, self.streams["features"])
        z, y = self.gram.features[rows], self.data.y_true[rows]
        proba, weights = np.asarray(self.data.y_proba)[rows], row_weights(self.data.weights, rows)
        units = (WeightedUnits.of(weights, proba[:, 1]) if self.data.is_binary
                 else VectorUnits.of(weights, proba))
        exact = GaussianProductGram(z)
        feature = float(klce_values(self.features, z, y, proba, weights)[0])
        value = weighted_klce2(exact, y, units)
        diff = self.features.kernel_matrix(z, z) - exact.block(slice(0, rows.size),
                                                               slice(0, rows.size))
        return {"subsample_rows": int(rows.size), "exact": value, "features": feature,
                "difference": feature - value,
                "kernel_rms_error": float(np.sqrt(np.mean(diff * diff))),
                "kernel_max_error": float(np.max(np.abs(diff)))}

    def kernel_params(self) -> dict[str, Any]:
        weights = self.data.weights
        return {"covariates": list(self.data.covariate_names),
                "prob_kernel": self.prob_bw.to_dict(), "cov_kernel": self.cov_bw.to_dict(),
                "residual": "weighted y - p" if self.data.is_binary else "weighted e_y - p",
                "normalisation":
                    "1 / (A^2 - S2): pairs of distinct weighted units",
                "weights": weights.kind, "label_dependent": weights.label_dependent,
                "computation": self.computation}

    def too_small(self) -> str:
        """Why the weighted sample is too small for a local test ('' if it is not)."""
        lc = self.local
        if self.sample_size < lc.min_group_rows:
            return f"sample size {self.sample_size:.4g} < min_group_rows {lc.min_group_rows}"
        if self.events < lc.min_group_events:
            return (f"{self.events:.4g} effective events or non-events < min_group_events "
                    f"{lc.min_group_events}")
        return ""

    def statistic_only(self) -> float:
        if self.features is not None:
            return float(klce_values(self.features, self.gram.features, self.data.y_true,
                                     self.data.y_proba, self.data.weights)[0])
        return weighted_klce2(self.gram, self.data.y_true, self.units)

    def resampled(self) -> tuple[float, NDArray, float, Any]:
        """``KLCE^2_w``, its null, its p-value and the aggregate test, from one pass."""
        scores = ScoreMembers.of_levels(self.levels, self.proba, null_variance(self.units))
        rng = self.streams["klce_consistency"]
        if self.features is not None:
            return feature_resampled(self.features, self.gram.features, self.data.y_true,
                                     self.data.y_proba, self.data.weights, scores,
                                     self.levels, stream_seed(rng), self.local.n_resamples)
        return resampled(self.gram, self.units, self.data.y_true, scores, rng,
                         self.local.n_resamples)

    def class_features(self, gram: GaussianProductGram) -> Any:
        """The feature map of a one-vs-rest view's product kernel."""
        return product_features(gram.features, self.choice.n_features,
                                self.choice.frequency_seed)

    def per_class(self) -> list[dict[str, Any]]:
        """Multi-class: each class one-vs-rest (units labelled ``1{y = c}``, kernel on
        ``p_c``): ``KLCE^2_w`` and, when tests run, the weighted local aggregate test of
        that view (``p_value``) with its kernel member's p-value (``klce_p_value``)."""
        lc = self.local
        if self.data.is_binary or not lc.per_class or self.data.n_classes > MAX_PER_CLASS:
            return []
        weights, rng = self.data.weights, self.streams["per_class"]
        frequency = weights.kind == "frequency"
        testing = self.config.run_tests and not self.too_small()
        rows = []
        for c, name in enumerate(self.data.classes):
            p_c = np.array(self.data.y_proba[:, c])
            y_c = (self.data.y_true == c).astype(np.int64)
            units = WeightedUnits.of(weights, p_c)
            bw = weighted_bandwidth(p_c, lc.prob_bandwidth, rng, lc.median_max_rows,
                                    np.asarray(weights.design, np.float64), frequency)
            lazy = product_gram(p_c.reshape(-1, 1), bw.gamma, self.encoded.features,
                                self.cov_bw.gamma, lazy=True)
            gram = GaussianProductGram(np.asarray(lazy.features))
            row = {"class": name, "prob_kernel": bw.to_dict(), "p_value": None}
            if not testing:
                row["statistic"] = weighted_klce2(gram, y_c, units) if self.features is None \
                    else float(klce_values(self.class_features(gram), gram.features, y_c,
                                           np.column_stack([1.0 - p_c, p_c]), weights)[0])
                rows.append(row)
                continue
            scores = ScoreMembers.of_levels(self.levels, p_c, null_variance(units))
            if self.features is None:
                statistic, _, p_value, found = resampled(gram, units, y_c, scores, rng,
                                                         lc.n_resamples)
            else:
                statistic, _, p_value, found = feature_resampled(
                    self.class_features(gram), gram.features, y_c,
                    np.column_stack([1.0 - p_c, p_c]), weights, scores, self.levels,
                    stream_seed(rng), lc.n_resamples)
            row.update(statistic=statistic, p_value=found.p_value, klce_p_value=p_value,
                       deciding_member=found.deciding,
                       method="weighted local aggregate test, one-vs-rest")
            rows.append(row)
        return rows

    def run(self) -> tuple[list[TestResult], float]:
        """The requested tests (INCONCLUSIVE when the sample is too small) and
        ``KLCE^2_w``."""
        tests = [t for t in self.local.tests if t in WEIGHTED_LOCAL_TESTS]
        if not self.config.run_tests or not tests:
            return [], self.statistic_only()
        reason = self.too_small()
        params = self.kernel_params()
        if reason:
            statistic = self.statistic_only()
            return inconclusive(tests, statistic, dict.fromkeys(tests, METHOD), params,
                                self.config.alpha, reason), statistic
        statistic, null, p_value, found = self.resampled()
        out = []
        for test_id in tests:
            if test_id == "local_consistency":
                out.append(TestResult(
                    id=test_id, statistic=found.statistic, estimate=statistic,
                    p_value=found.p_value, method=AGGREGATE_METHOD,
                    n_resamples=self.local.n_resamples,
                    params={**params, "members": list(found.members),
                            "deciding_member": found.deciding, "klce2": statistic},
                    null_distribution=found.null_distribution,
                    title=registry.title(test_id), family="local"))
            else:
                out.append(TestResult(
                    id=test_id, statistic=statistic, estimate=statistic, p_value=p_value,
                    method=METHOD, n_resamples=self.local.n_resamples, params=params,
                    null_distribution=null, title=registry.title(test_id), family="local"))
        return out, statistic

    def klce_section(self, statistic: float, tests: list[TestResult]) -> dict[str, Any]:
        """``local.klce`` of a weighted audit (no Hoeffding region: its bound is for
        unweighted rows), with the one-vs-rest views of a multi-class model."""
        section = {**self.kernel_params(), "encoding": self.encoded.encoding,
                   "encoded_columns": list(self.encoded.columns), "statistic": statistic,
                   "tests": [t.id for t in tests]}
        per_class = self.per_class()
        if per_class:
            section["per_class"] = per_class
        return section
