"""The local tests on weighted rows (docs/weights.md): the exact kernel, or random
features (:mod:`calaudit.local.weighted_features`) when the ``method`` rule
(:func:`calaudit.inference.method.choose_method`) sends the local stage there.

* The kernels and levels of :class:`~calaudit.local.kernel_tests.LocalTests` on the
  weighted law: numeric covariates standardised by their weighted mean and sd, bandwidths
  by the median heuristic of the weighted law (pairs ``i < j`` counted ``d_i d_j`` times),
  the numeric covariates' bands at the weighted quantiles. All use the label-independent
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

from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.local import aggregate_test as aggregate
from calaudit.local.aggregate import AggregateResult
from calaudit.local.kernel import GaussianProductGram
from calaudit.local.kernel_tests import APPROXIMATION_ROWS, LocalTests
from calaudit.local.lcb import plot_points
from calaudit.local.per_class import per_class_views
from calaudit.local.resampling import NullResult, batched_forms
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
from calaudit.numerics.resampling import monte_carlo_pvalue
from calaudit.scale import stream_seed

#: Local tests with a weighted version.
WEIGHTED_LOCAL_TESTS = ("local_consistency", "klce_consistency")
METHOD = ("consistency resampling, weighted: labels redrawn from their law in the sample "
          "(every unit of a frequency weight), weights following the redrawn labels; "
          "p = (1 + #{T* >= T}) / (1 + B)")
AGGREGATE_METHOD = (METHOD + "; members: a recalibration score statistic of the weighted "
                    "residual sums per covariate and for all covariates together, and "
                    "KLCE^2_w; statistic A = max_j log(w_j / q_j)")


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
              n_resamples: int) -> tuple[AggregateResult, NullResult]:
    """The aggregate test of ``KLCE^2_w`` of labels ``y`` (its null from ``n_resamples`` unit
    redraws, its Monte-Carlo p-value) and of the score members on the same redraws, from
    one kernel pass (:func:`calaudit.local.resampling.batched_forms`)."""
    events = units.observed_events(y)
    residual = units.residuals(events)

    def kernel_test(observe: Any) -> NullResult:
        found: list[NDArray[np.float64]] = []
        forms, null_forms = batched_forms(gram, unit_sampler(units, gram.diagonal(), found),
                                          n_resamples, rng, residual, observe=observe)
        sums = units.sums(events, residual, gram.diagonal())
        observed = float(klce2_value(forms, sums)[0])
        null = klce2_value(null_forms, np.concatenate(found, axis=1))
        total, squares = float(sums[0, 0]), float(sums[1, 0])
        return NullResult(observed, null, monte_carlo_pvalue(observed, null, atol=tie_tolerance(
            units, gram.n, total * total - squares)))

    return aggregate.score_aggregate(scores, residual[..., 0], kernel_test)


class WeightedLocalTests(LocalTests):
    """The local stage's kernels and tests on weighted rows (module docstring): the
    setup of :class:`~calaudit.local.kernel_tests.LocalTests` on the weighted law, then
    :meth:`run`. ``sample_size`` and ``events`` are the audit's weighted sample size and
    effective events (the INCONCLUSIVE rule)."""

    methods = {"local_consistency": AGGREGATE_METHOD, "klce_consistency": METHOD}

    def __init__(self, data: Any, config: Any, streams: dict[str, np.random.Generator], *,
                 sample_size: float, events: float) -> None:
        super().__init__(data, config, streams)
        self.sample_size, self.events = sample_size, events

    @cached_property
    def units(self) -> WeightedUnits | VectorUnits:
        """The rows' weighted units (:mod:`calaudit.local.weighted_klce`)."""
        return (WeightedUnits.of(self.data.weights, self.proba) if self.data.is_binary
                else VectorUnits.of(self.data.weights, self.proba))

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

    def observed(self, statistic: float | None) -> float:
        """``KLCE^2_w``: ``statistic`` when known, else its own pass."""
        if statistic is not None:
            return statistic
        if self.features is not None:
            return float(klce_values(self.features, self.gram.features, self.data.y_true,
                                     self.data.y_proba, self.data.weights)[0])
        return weighted_klce2(self.gram, self.data.y_true, self.units)

    def kernel_consistency(self, statistic: float | None, dtype: type) -> NullResult:
        """``klce_consistency`` and, from the same redraws, the aggregate test
        (:attr:`aggregate`), run once."""
        if "klce_consistency" not in self.kernel_runs:
            scores = ScoreMembers.of_levels(self.levels, self.proba,
                                            null_variance(self.units))
            rng = self.streams["klce_consistency"]
            self.aggregate, self.kernel_runs["klce_consistency"] = (
                feature_resampled(self.features, self.gram.features, self.data.y_true,
                                  self.data.y_proba, self.data.weights, scores,
                                  self.levels, stream_seed(rng), self.local.n_resamples)
                if self.features is not None else
                resampled(self.gram, self.units, self.data.y_true, scores, rng,
                          self.local.n_resamples))
        return self.kernel_runs["klce_consistency"]

    def per_class(self) -> list[dict[str, Any]]:
        """Multi-class: the one-vs-rest views (:func:`calaudit.local.per_class.
        per_class_views`) of the weighted rows (:func:`class_view`)."""
        return per_class_views(self, class_view)


def class_view(setup: WeightedLocalTests, c: int, p_c: NDArray[np.float64], r_c: Any,
               gamma: float, gram: GaussianProductGram, features: Any,
               rng: np.random.Generator, testing: bool) -> dict[str, Any]:
    """Class ``c`` one-vs-rest on weighted rows (units labelled ``1{y = c}``, kernel
    ``gram`` on ``p_c``, ``features`` on the feature path): ``KLCE^2_w`` and, when
    ``testing``, the weighted local aggregate test of that view (``p_value``) with its
    kernel member's p-value (``klce_p_value``)."""
    weights, lc = setup.data.weights, setup.local
    y_c = (setup.data.y_true == c).astype(np.int64)
    units, proba = WeightedUnits.of(weights, p_c), np.column_stack([1.0 - p_c, p_c])
    if not testing:
        return {"statistic": weighted_klce2(gram, y_c, units) if features is None else
                float(klce_values(features, gram.features, y_c, proba, weights)[0])}
    scores = ScoreMembers.of_levels(setup.levels, p_c, null_variance(units))
    found, res = (resampled(gram, units, y_c, scores, rng, lc.n_resamples)
                  if features is None else
                  feature_resampled(features, gram.features, y_c, proba, weights, scores,
                                    setup.levels, stream_seed(rng), lc.n_resamples))
    return {"statistic": res.statistic, "p_value": found.p_value,
            "klce_p_value": res.p_value, "deciding_member": found.deciding,
            "method": "weighted local aggregate test, one-vs-rest"}
