"""The local stage's kernels and tests (Vashistha & Farahi, *I-trustworthy models*).

:class:`LocalTests` sets up what the tests and the LCB share (residuals, encoded
covariates, median-heuristic bandwidths, the group table's levels, the exact or random
feature path of :func:`calaudit.inference.method.choose_method`) and runs the tests of
``config.local.tests``: ``local_consistency`` (:mod:`calaudit.local.aggregate_test`),
``klce_consistency``, ``klce_bootstrap`` (Algorithm 1) and ``klce_permutation`` (KiTE
``ELCE2``), with the KLCE^2 estimate, the Hoeffding region and, for a multi-class model,
each class one-vs-rest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from calaudit import registry
from calaudit.inference.feature_tests import (
    approximation_error,
    feature_bootstrap_test,
    feature_consistency_test,
)
from calaudit.inference.method import LOCAL_STAGE_SECONDS, choose_method
from calaudit.local import aggregate_test as aggregate
from calaudit.local import groups as grp
from calaudit.local.bandwidth import choose_bandwidth
from calaudit.local.encoding import encode_covariates
from calaudit.local.features import (
    KernelRows,
    covariate_reads,
    feature_local_pass,
    product_features,
)
from calaudit.local.kernel import GaussianProductGram, kite_gram, product_gram
from calaudit.local.klce import (
    hoeffding_region,
    klce2,
    prediction_features,
    residual_bound,
    residuals,
)
from calaudit.local.lcb import plot_points
from calaudit.local.lcb_cells import CellKernel
from calaudit.local.per_class import per_class_views
from calaudit.local.resampling import NullResult, bootstrap_test, consistency_test, permutation_test
from calaudit.local.row_columns import (
    GatheredColumn,
    GatheredCovariate,
    covariate_moments,
    residuals_at,
)
from calaudit.local.score_members import ScoreMembers
from calaudit.local.score_rows import memory_rows, score_rows
from calaudit.results import Status, TestResult

#: Rows of the subsample on which a features run compares its statistic with the exact one.
APPROXIMATION_ROWS = 2000

METHODS = {
    "local_consistency": aggregate.METHOD,
    "klce_consistency": "consistency resampling: y*_i ~ Cat(p_i), predictions and "
                        "covariates fixed; p = (1 + #{T* >= T}) / (1 + B)",
    "klce_bootstrap": "residual bootstrap (Vashistha & Farahi, Algorithm 1); "
                      "p = (1 + #{T* >= T}) / (1 + B)",
    "klce_permutation": "KiTE ELCE2: permuted residuals, normalised by (n-1)/n sum K; "
                        "p = max(1/B, #{T* > T}/B)",
}


def inconclusive(ids: Sequence[str], statistic: float, methods: Mapping[str, str],
                 params: Mapping[str, Any], alpha: float, reason: str) -> list[TestResult]:
    """The local tests ``ids`` on a sample too small to decide (``reason``)."""
    return [TestResult(id=t, statistic=statistic, estimate=statistic, p_value=math.nan,
                       method=methods[t], n_resamples=0, params=dict(params),
                       status=Status.INCONCLUSIVE, alpha=alpha,
                       message=f"too small to decide: {reason}", title=registry.title(t),
                       family="local") for t in ids]


class LocalTests:
    """The local stage's kernels and tests on one data set: the setup shared by the tests
    and the LCB (residuals, encoded covariates, bandwidths, the group table's levels, the
    exact or feature path; on weighted rows of the weighted law,
    :class:`calaudit.local.weighted_local.WeightedLocalTests`), then the tests run on it
    (:meth:`run`)."""

    #: the tests' method texts
    methods = METHODS

    def __init__(self, data: Any, config: Any, streams: dict[str, np.random.Generator]
                 ) -> None:
        """``data``: a :class:`calaudit.data.dataset.CalibrationData` with covariates;
        ``config``: the audit's configuration (its ``local`` section, ``alpha``,
        ``method``); ``streams``: the stage's random streams by purpose."""
        self.data, self.config, self.local = data, config, config.local
        self.streams = streams
        self.n = data.n
        weights = data.weights
        #: weighted rows (docs/weights.md): the design weights and whether they are whole
        #: numbers, the kernels' and levels' laws
        self.design = None if weights is None else np.asarray(weights.design, np.float64)
        self.frequency = weights is not None and weights.kind == "frequency"
        #: the rows are read by tasks (a dataset audited where it is): the setup fetches
        #: only the rows it needs (:mod:`calaudit.local.row_columns`)
        self.gathers = weights is None and bool(
            getattr(getattr(data, "rows", None), "reads_own_rows", False))
        if self.gathers:
            self.prob_features = (
                GatheredColumn.of(data.rows, "p", lambda: self.proba, 1) if data.is_binary
                else GatheredColumn.of(data.rows, "proba", lambda: self.proba,
                                       data.n_classes))
            self.encoded = encode_covariates(
                [GatheredCovariate(data, c) for c in data.covariates], standardize=True,
                lazy=True, moments=covariate_moments(data))
        else:
            self.prob_features = (self.proba.reshape(-1, 1) if data.is_binary
                                  else prediction_features(data.y_proba))
            self.encoded = encode_covariates(data.covariates, standardize=True, lazy=True,
                                             weights=self.design)
        lc = self.local
        self.levels = grp.data_levels(data, lc.n_bands, self.design, self.frequency)
        self.kernel_runs: dict[str, NullResult] = {}
        self.prob_bw = self.bandwidth(self.prob_features, lc.prob_bandwidth,
                                      streams["bandwidth"])
        self.cov_bw = self.bandwidth(self.encoded.features, lc.cov_bandwidth,
                                     streams["bandwidth"], self.encoded.blocks)
        self.gram = product_gram(self.prob_features, self.prob_bw.gamma,
                                 self.encoded.features, self.cov_bw.gamma, lazy=True)
        classes = 1 if data.is_binary else data.n_classes
        self.choice = choose_method(config, self.n, classes * lc.n_resamples,
                                    streams["features"], fixed=LOCAL_STAGE_SECONDS,
                                    dims=self.gram.features.shape[1])
        if not self.choice.features or weights is not None:
            self.gram = GaussianProductGram(np.asarray(self.gram.features))
        self.features = None
        self.fused_results: dict[str, NullResult] = {}
        self.computation = self.choice.to_params()
        self.lcb_kernel: CellKernel | bool | None = True if self.choice.features else None
        self.lcb_features = self.choice.n_features or 0
        if self.choice.features:
            self.features = product_features(self.gram.features, self.choice.n_features,
                                             self.choice.frequency_seed)
            self.computation["approximation"] = self.approximation()

    def bandwidth(self, features: Any, option: float | None, rng: np.random.Generator,
                  blocks: Any = None) -> Any:
        """:func:`calaudit.local.bandwidth.choose_bandwidth` on the rows' law."""
        return choose_bandwidth(features, option, rng, self.local.median_max_rows, blocks,
                                self.design, self.frequency)

    @cached_property
    def r(self) -> np.ndarray:
        """The KLCE residuals of every row (:func:`calaudit.local.klce.residuals`)."""
        return residuals(self.data.y_true, self.data.y_proba)

    @cached_property
    def proba(self) -> np.ndarray:
        """What the tests' redraws use: ``p_1`` (binary; read-only, the prediction
        kernel's column is an (n, 1) view of it) or the (n, m) rows."""
        data = self.data
        proba = np.array(data.y_proba[:, 1] if data.is_binary else data.y_proba)
        proba.flags.writeable = False
        return proba

    def approximation(self) -> dict[str, Any]:
        """Feature vs exact KLCE^2 on a seeded subsample of :data:`APPROXIMATION_ROWS`."""
        rows = plot_points(self.n, APPROXIMATION_ROWS, self.streams["features"])
        z = self.gram.features[rows]
        r = residuals_at(self.data, rows) if self.gathers else self.r[rows]
        return approximation_error(self.features, z, r, GaussianProductGram(z))

    # --- tests -----------------------------------------------------------------------

    def kernel_params(self) -> dict[str, Any]:
        return {"covariates": list(self.data.covariate_names),
                "prob_kernel": self.prob_bw.to_dict(), "cov_kernel": self.cov_bw.to_dict(),
                "residual": "y - p" if self.data.is_binary else "e_y - p",
                "normalisation": "1 / (n (n - 1)), i != j",
                "computation": self.computation}

    def too_small(self) -> str:
        """Why the sample is too small for a local test ('' if it is not)."""
        lc, n = self.local, self.n
        if n < lc.min_group_rows:
            return f"{n} rows < min_group_rows {lc.min_group_rows}"
        counts = (np.asarray(self.data.counts) if self.gathers else
                  np.bincount(self.data.y_true, minlength=self.data.n_classes))
        if self.data.is_binary and counts.min() < lc.min_group_events:
            return f"{int(counts.min())} events or non-events < min_group_events " \
                   f"{lc.min_group_events}"
        return ""

    def run_test(self, test_id: str, statistic: float | None
                 ) -> tuple[TestResult, NullResult]:
        """Run one test against the observed ``statistic`` (double precision; ``None``: the
        exact consistency or bootstrap test computes it in its own pass). ``local_consistency``
        and ``klce_consistency`` share one set of redraws and one kernel pass."""
        lc = self.local
        dtype = np.float32 if lc.resample_dtype == "float32" else np.float64
        precision = ({} if self.features is not None or self.design is not None
                     else {"resample_dtype": lc.resample_dtype})  # weighted: float64 only
        if test_id in ("local_consistency", "klce_consistency"):
            res = self.kernel_consistency(statistic, dtype)
            params = {**self.kernel_params(), **precision}
            if test_id == "local_consistency":
                found = self.aggregate_result()
                params["members"] = list(found.members)
                params["deciding_member"] = found.deciding
                params["klce2"] = res.statistic
                return TestResult(
                    id=test_id, statistic=found.statistic, estimate=res.statistic,
                    p_value=found.p_value, method=self.methods[test_id],
                    n_resamples=lc.n_resamples, params=params,
                    null_distribution=found.null_distribution, title=registry.title(test_id),
                    family="local"), res
        elif self.features is not None and test_id != "klce_permutation":
            res = self.feature_test(test_id, self.streams[test_id])
            params = self.kernel_params()
        elif test_id == "klce_bootstrap":
            res = bootstrap_test(self.gram, self.r, self.streams[test_id], lc.n_resamples,
                                 statistic=statistic, dtype=dtype)
            params = {**self.kernel_params(), **precision, **res.extra}
        else:
            gram, params = kite_gram(self.prob_features, self.data.covariates, lc)
            res = permutation_test(gram, self.r, self.streams[test_id], lc.n_resamples,
                                   centred=lc.kite_null == "centred")
            params.update(res.extra)
        return TestResult(
            id=test_id, statistic=res.statistic, estimate=res.statistic, p_value=res.p_value,
            method=self.methods[test_id], n_resamples=lc.n_resamples, params=params,
            null_distribution=res.null_distribution, title=registry.title(test_id),
            family="local"), res

    def kernel_consistency(self, statistic: float | None, dtype: type) -> NullResult:
        """The KLCE consistency test (run once: the aggregate's kernel member and
        ``klce_consistency``), and on the exact path the aggregate found in the same pass."""
        if "klce_consistency" in self.kernel_runs:
            return self.kernel_runs["klce_consistency"]
        rng = self.streams["klce_consistency"]
        if self.features is not None:
            self.feature_seed = aggregate.feature_seed(rng)
            res = self.feature_test("klce_consistency", rng)
        elif "local_consistency" in self.local.tests:
            self.aggregate, res = aggregate.exact_aggregate(
                self.gram, self.r, self.proba, self.score_members(), rng,
                self.local.n_resamples, statistic=statistic, dtype=dtype)
        else:
            res = consistency_test(self.gram, self.r, self.proba, rng, self.local.n_resamples,
                                   statistic=statistic, dtype=dtype)
        self.kernel_runs["klce_consistency"] = res
        return res

    def score_members(self, proba: np.ndarray | None = None) -> ScoreMembers:
        """The recalibration score members on the group table's levels (``proba``: the
        probabilities of the view, default the test's: ``p_1`` or the (n, m) rows)."""
        p = (self.proba if self.data.is_binary else np.asarray(self.data.y_proba)) \
            if proba is None else proba
        return ScoreMembers.of_levels(self.levels, p)

    def aggregate_result(self):
        """The aggregate test (exact path: found in the kernel pass; feature path: the
        kernel member's null and the score members from the same block streams)."""
        found = getattr(self, "aggregate", None)
        if found is not None:
            return found
        kernel = self.kernel_runs["klce_consistency"]
        self.aggregate = aggregate.feature_aggregate(
            kernel.statistic, kernel.null_distribution, kernel.p_value, self.score_rows(),
            *self.level_sizes(), 1 if self.data.is_binary else self.data.n_classes,
            self.feature_seed, self.local.n_resamples)
        return self.aggregate

    def level_sizes(self) -> tuple[list[str], list[int]]:
        """The group table's covariates and their numbers of levels."""
        return [lv.name for lv in self.levels], [len(lv.labels) for lv in self.levels]

    def score_rows(self, view: int | None = None, r: np.ndarray | None = None,
                   p: np.ndarray | None = None) -> Any:
        """The score members' rows (:mod:`calaudit.local.score_rows`) of the test's view
        (``view``: a class one-vs-rest, its ``r`` and ``p``): read by the tasks when the
        data's rows are, else in memory."""
        rows = score_rows(self.data, self.levels, view)
        if rows is not None:
            return rows
        if view is None:
            r = self.r
            p = self.proba if self.data.is_binary else np.asarray(self.data.y_proba)
        return memory_rows(r, p, aggregate.level_codes([lv.codes for lv in self.levels],
                                                       self.level_sizes()[1])[0])

    def feature_pass(self) -> float:
        """KLCE^2 and the first consistency/bootstrap test from one pass of
        :func:`feature_local_pass`; ``local_consistency`` fuses its kernel member,
        ``klce_consistency``."""
        fused = next((t for t in self.local.tests if t != "klce_permutation"), None)
        if fused == "local_consistency":
            fused = "klce_consistency"
        if not self.config.run_tests or self.too_small():
            fused = None
        if fused == "klce_consistency":
            self.feature_seed = aggregate.feature_seed(self.streams[fused])
        source = self.kernel_rows()
        held = source is None or fused == "klce_bootstrap"  # else the tasks build them
        out = feature_local_pass(self.features, self.gram.features,
                                 self.r if held else None, self.proba if held else None,
                                 fused, self.streams[fused] if fused else None,
                                 self.local.n_resamples, source=source)
        if out.test is not None:
            result = NullResult(out.test.statistic, out.test.null_distribution,
                                out.test.p_value)
            self.fused_results[fused] = result
            if fused == "klce_consistency":
                self.kernel_runs[fused] = result
        return out.statistic

    def kernel_rows(self, view: int | None = None, prob_gamma: float | None = None
                    ) -> KernelRows | None:
        """The feature pass's rows read by its tasks (:class:`KernelRows` of ``view``,
        its prediction kernel's ``prob_gamma``, default the test's) when the data's rows
        are (``data.rows`` reads its own rows), else None (rows held here)."""
        if not self.gathers:
            return None
        return KernelRows(self.data.rows, *covariate_reads(self.data), self.encoded.encoding,
                          self.encoded.blocks,
                          self.prob_bw.gamma if prob_gamma is None else prob_gamma,
                          self.cov_bw.gamma, view, self.data.n_classes)

    def feature_test(self, test_id: str, rng: np.random.Generator) -> NullResult:
        """``klce_consistency`` / ``klce_bootstrap`` on the feature kernel's KLCE^2 (from
        the fused pass when it ran there); draws from the row-block streams named after
        the test."""
        if test_id in self.fused_results:
            return self.fused_results[test_id]
        if test_id == "klce_consistency":
            res = feature_consistency_test(self.features, self.gram.features, self.r,
                                           self.proba, rng, self.local.n_resamples,
                                           stream=test_id)
        else:
            res = feature_bootstrap_test(self.features, self.gram.features, self.r, rng,
                                         self.local.n_resamples, stream=test_id)
        return NullResult(res.statistic, res.null_distribution, res.p_value)

    def tests(self, statistic: float | None) -> tuple[list[TestResult], float]:
        """The requested tests (INCONCLUSIVE when the sample is too small) and the KLCE^2
        estimate (``statistic``, else the first exact test's, else :func:`klce2`)."""
        if not self.config.run_tests:
            return [], self.observed(statistic)
        reason = self.too_small()
        if reason:
            statistic = self.observed(statistic)
            return inconclusive(self.local.tests, statistic, self.methods,
                                self.kernel_params(), self.config.alpha, reason), statistic
        out = []
        for test_id in self.local.tests:
            result, res = self.run_test(test_id, statistic if test_id != "klce_permutation"
                                        else None)
            out.append(result)
            if statistic is None and test_id != "klce_permutation":
                statistic = res.statistic
        return out, self.observed(statistic)

    def observed(self, statistic: float | None) -> float:
        """The KLCE^2 estimate: ``statistic`` when known, else its own exact pass."""
        return klce2(self.gram, self.r) if statistic is None else statistic

    def per_class(self) -> list[dict[str, Any]]:
        """Multi-class: each class one-vs-rest (:func:`calaudit.local.per_class.
        per_class_views`)."""
        return per_class_views(self)

    def run(self) -> tuple[list[TestResult], float, list[dict[str, Any]]]:
        """The requested tests, the KLCE^2 estimate and the per-class views; afterwards
        the test kernel's rows are freed."""
        statistic = None  # exact or weighted: from the first test's pass (:meth:`tests`)
        if self.features is not None and self.design is None:  # from the feature pass
            statistic = self.feature_pass()
        tests, statistic = self.tests(statistic)
        per_class = self.per_class()
        self.gram = None
        return tests, statistic, per_class

    def klce_section(self, statistic: float, tests: list[TestResult],
                     per_class: list[dict[str, Any]]) -> dict[str, Any]:
        """``local.klce``: the kernels, the statistic, the tests run and the Hoeffding
        region (its bound is for unweighted rows) and the per-class views of a multi-class
        model."""
        section = {
            **self.kernel_params(), "encoding": self.encoded.encoding,
            "encoded_columns": list(self.encoded.columns), "statistic": statistic,
            "tests": [t.id for t in tests]}
        if self.design is None:
            section["hoeffding"] = hoeffding_region(statistic, self.n, self.config.alpha,
                                                    residual_bound(self.data.n_classes))
        if per_class:
            section["per_class"] = per_class
        return section
