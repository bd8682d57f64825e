"""The SKCE battery of one data set (Widmann et al. 2019, sec. 5-7, app. G-H), with
``h_ij = kappa(p_i, p_j) <e_{y_i} - p_i, e_{y_j} - p_j>``: metrics ``skce_b``, ``skce_uq``,
``skce_ul``, ``skce_block``; the bounds, the z-test of ``SKCE_ul`` and the Arcones-Gine
bootstrap (:mod:`calaudit.inference.skce_tests`) and the consistency test. The resampling
tests may run on random Fourier features; up to ``max_quadratic_n`` rows the reported
estimates and the bounds stay exact.

``rng`` is split (``Generator.spawn``) into children for the median subsample, the
bootstrap counts (``skce_uq_asymptotic`` and the intervals), the consistency redraws, the
pair/block bootstrap and the features, so enabling one part never changes another's
numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import registry
from calaudit.inference import applicability as rules
from calaudit.inference.bootstrap_ci import ci_params, percentile_interval
from calaudit.inference.consistency import skce_consistency_test
from calaudit.inference.feature_tests import FeaturePass, SkceFeatures
from calaudit.inference.method import Computation, choose_method
from calaudit.inference.skce_pair_rows import PairInputs
from calaudit.inference.skce_rows import RowInputs, linear_replicates
from calaudit.inference.skce_tests import (
    UNIFORM_BOUND,
    CountForms,
    LinearTerms,
    bootstrap_pass,
    bound_pvalue_biased,
    bound_pvalue_unbiased,
    count_forms,
    linear_asymptotic_test,
    quadratic_statistic,
    smallest_bound_pvalue,
)
from calaudit.metrics.row_bootstrap import Draws
from calaudit.metrics.skce import (
    QuadraticTerms,
    SkceEstimators,
    block_terms,
    choose_kernel,
    quadratic_terms,
    residual_gram,
)
from calaudit.numerics.grams import cached
from calaudit.numerics.kernels import StationaryKernel
from calaudit.numerics.resampling import batch_sizes, bootstrap_counts, monte_carlo_pvalue
from calaudit.results import MetricResult, Status, TestResult
from calaudit.scale import TASK_ROWS, ArrayRows, stream_seed

#: The tests, in report order.
SKCE_TESTS = ("skce_b_bound", "skce_uq_bound", "skce_ul_bound", "skce_ul_asymptotic",
              "skce_uq_asymptotic", "skce_consistency")
#: How each test computes its p-value (``method`` of the result).
METHODS = {
    **dict.fromkeys(SKCE_TESTS[:3], "distribution-free bound, B = 2"),
    "skce_ul_asymptotic": "asymptotic normal (z-test), sd divides by pairs",
    "skce_uq_asymptotic": "bootstrap of the degenerate U-statistic (Arcones-Gine)",
    "skce_consistency": "consistency resampling: labels redrawn from the predictions",
}
#: Tests of the linear estimator (computed at every n, always exactly).
LINEAR_TESTS = ("skce_ul_bound", "skce_ul_asymptotic")


@dataclass(frozen=True)
class SkceBattery:
    """The SKCE metrics and the requested tests."""

    metrics: tuple[MetricResult, ...]
    tests: tuple[TestResult, ...]


@dataclass(frozen=True)
class _Estimates:
    """What the metrics and tests share: the resampling tests' ``terms`` (``None``: no
    quadratic estimator), the ``reported`` terms and params, the bootstrap ``forms``."""

    inputs: ArrayInputs | RowInputs | PairInputs
    kernel: StationaryKernel
    params: dict
    pairs: LinearTerms
    blocks: LinearTerms
    blocksize: int
    limit: str
    terms: SkceEstimators | None = None
    forms: CountForms | None = None
    feature_pass: FeaturePass | None = None
    reported: tuple[SkceEstimators | None, dict] = (None, {})

    @property
    def n(self) -> int:
        return self.inputs.n

    @property
    def linear_params(self) -> dict:
        """Params of a linear-time estimator or test (always exact: no ``computation``)."""
        return {k: v for k, v in self.params.items() if k != "computation"}

    def value(self, estimator: str) -> float:
        """The reported ``SKCE_b``, ``SKCE_uq`` or ``SKCE_ul`` (NaN if not computed)."""
        terms, pairs = self.reported[0], self.pairs
        if estimator == "ul":
            return pairs.mean
        if terms is None:
            return math.nan
        return terms.biased if estimator == "b" else terms.unbiased


@dataclass(frozen=True)
class ArrayInputs:
    """The battery's inputs in memory: ``y_proba`` (n, m) and residuals ``e_{y_i} - p_i``."""

    y_proba: NDArray[np.float64]
    residuals: NDArray[np.float64]

    @property
    def n(self) -> int:
        return self.y_proba.shape[0]

    @property
    def m(self) -> int:
        return self.y_proba.shape[1]

    def kernel_choice(self, kernel: str, bandwidth: float | None, max_quadratic_n: int,
                      rng: np.random.Generator) -> Any:
        return choose_kernel(self.y_proba, kernel, bandwidth, exact_max_n=max_quadratic_n,
                             rng=rng)

    def features(self, choice: Any, method: Any) -> SkceFeatures:
        return SkceFeatures.build(choice, method, self.y_proba, self.residuals)

    def terms(self, kernel: StationaryKernel, blocksize: int) -> LinearTerms:
        """The block estimator's terms, summarised per task range."""
        return LinearTerms.of(block_terms(kernel, self.y_proba, self.residuals, blocksize),
                              max(1, TASK_ROWS // blocksize))

    def replicates(self, kernel: StationaryKernel, blocksize: int, draws: Draws
                   ) -> NDArray[np.float64]:
        """The linear estimator's bootstrap replicates (:func:`linear_replicates`)."""
        rows = ArrayRows({"proba": self.y_proba, "residuals": self.residuals})
        return linear_replicates(rows, kernel, blocksize, draws)

    def consistency(self, kernel: StationaryKernel, observed: float,
                    rng: np.random.Generator, n_resamples: int) -> Any:
        """The consistency test of ``SKCE_uq`` (``observed``)."""
        return skce_consistency_test(cached(kernel.on(self.y_proba)), self.y_proba, observed,
                                     rng, n_resamples)

    def quadratic(self, kernel: StationaryKernel, n_resamples: int | None,
                  rng: np.random.Generator | None
                  ) -> tuple[QuadraticTerms, CountForms | None]:
        """One engine pass over ``H``: the quadratic terms and (``n_resamples``) the
        bootstrap's count forms (the first batch shares the terms' pass)."""
        gram = residual_gram(kernel, self.y_proba, self.residuals)
        if n_resamples is None:
            return quadratic_terms(gram), None
        return _bootstrap(gram, n_resamples, rng)


def skce_battery(y_proba: NDArray[np.float64], residuals: NDArray[np.float64],
                 **options: Any) -> SkceBattery:
    """:func:`skce_battery_of_inputs` of ``y_proba`` (n, m) and residuals ``e_y - p``."""
    return skce_battery_of_inputs(ArrayInputs(y_proba, residuals), **options)


def skce_battery_of_rows(source: Any, *, classes: int = 2, max_quadratic_n: int = 20_000,
                         **options: Any) -> SkceBattery:
    """:func:`skce_battery_of_inputs` of a row source of ``classes`` classes (``proba``,
    ``residuals``, ``y``): up to ``max_quadratic_n`` rows :class:`~calaudit.inference.
    skce_pair_rows.PairInputs` (the exact path's pair tasks read their rows), above
    :class:`~calaudit.inference.skce_rows.RowInputs`."""
    inputs = (PairInputs(source, classes) if source.n <= max_quadratic_n
              else RowInputs(source, classes))
    return skce_battery_of_inputs(inputs, max_quadratic_n=max_quadratic_n, **options)


def skce_battery_of_inputs(inputs: ArrayInputs | RowInputs | PairInputs, *,
                           kernel: str = "exponential",
                           bandwidth: float | None = None, blocksize: int = 10,
                           max_quadratic_n: int = 20_000, tests: tuple[str, ...] = SKCE_TESTS,
                           n_resamples: int = 1000, alpha: float = 0.05,
                           ci_level: float | None = None,
                           computation: Computation | None = None,
                           rng: np.random.Generator) -> SkceBattery:
    """The SKCE estimates and the ``tests`` (ids of :data:`SKCE_TESTS`) of ``inputs``.

    ``kernel`` and ``bandwidth`` choose ``kappa = exp(-d / bandwidth)`` (default: the
    median heuristic); ``blocksize`` is the block estimator's; ``max_quadratic_n`` bounds
    the quadratic estimators and the exact median; ``alpha`` only decides whether a test
    can reject at all (else INCONCLUSIVE); ``ci_level`` adds percentile bootstrap
    intervals of ``n_resamples`` resamples to the metrics; ``computation`` is the
    ``method`` rule (default ``auto``); ``rng``: module docstring.
    """
    median_rng, boot_rng, consistency_rng, linear_rng, feature_rng = rng.spawn(5)
    computation = computation or Computation()
    n, m, limit = inputs.n, inputs.m, f"n > skce.max_quadratic_n = {max_quadratic_n}"
    choice = inputs.kernel_choice(kernel, bandwidth, max_quadratic_n, median_rng)
    method = choose_method(computation, n, n_resamples * (1 if m == 2 else m), feature_rng,
                           exact_possible=n <= max_quadratic_n, limit_note=limit)
    params, features = choice.to_params(), None
    if method.features and n >= 2:
        features = inputs.features(choice, method)
        params["computation"] = method.to_params(
            approximation=features.approximation(choice.kernel, feature_rng))
    elif n >= 2:
        params["computation"] = method.to_params()
    estimates = _Estimates(inputs, choice.kernel, params, inputs.terms(choice.kernel, 2),
                           inputs.terms(choice.kernel, blocksize), blocksize, limit,
                           reported=(None, params))
    bootstrap = ci_level is not None or "skce_uq_asymptotic" in tests
    if features is not None:
        feature_pass = features.one_pass(
            consistency_rng if "skce_consistency" in tests else None,
            boot_rng if bootstrap else None, n_resamples)
        estimates = replace(estimates, terms=feature_pass.terms, forms=feature_pass.forms,
                            feature_pass=feature_pass, reported=(feature_pass.terms, params))
    elif 2 <= n <= max_quadratic_n:
        terms, forms = inputs.quadratic(choice.kernel, n_resamples if bootstrap else None,
                                        boot_rng)
        estimates = replace(estimates, terms=terms, forms=forms, reported=(terms, params))
    if features is not None and n <= max_quadratic_n:
        # the reported estimates (and the bounds on them) exact, comparable with
        # CalibrationErrors.jl; only the resampling tests use the feature statistic (each
        # test's own ``statistic``): one tiled engine pass, O(n^2 m), no n x n matrix
        exact = inputs.quadratic(choice.kernel, None, None)[0]
        estimates = replace(estimates, reported=(exact, {**params, "computation": {
            "method": "exact", "requested": computation.method,
            "reason": "estimates are computed exactly up to skce.max_quadratic_n; the "
                      "resampling tests ran on random features (see their params)"}}))
    return SkceBattery(_metrics(estimates, ci_level, n_resamples, linear_rng),
                       _tests(estimates, tests, n_resamples, alpha, consistency_rng))


def _bootstrap(gram, n_resamples: int, rng: np.random.Generator
               ) -> tuple[QuadraticTerms, CountForms]:
    """Estimates and bootstrap count forms (the first batch shares the estimate's pass)."""
    sizes = list(batch_sizes(n_resamples, gram.n))
    terms, first = bootstrap_pass(gram, bootstrap_counts(rng, gram.n, sizes[0]))
    parts = [first] + [count_forms(gram, terms, bootstrap_counts(rng, gram.n, q))
                       for q in sizes[1:]]
    return terms, CountForms(*(np.concatenate([getattr(p, f) for p in parts])
                               for f in ("quadratic", "diagonal", "linear", "squared",
                                         "ties")), n=gram.n)


def _metrics(estimates: _Estimates, ci_level: float | None, n_resamples: int,
             rng: np.random.Generator) -> tuple[MetricResult, ...]:
    """``skce_b``, ``skce_uq``, ``skce_ul`` and ``skce_block``, with (``ci_level``)
    bootstrap intervals (the linear ones' resamples drawn with ``rng``)."""
    terms, params = estimates.reported
    forms = estimates.forms
    params = dict(params) if terms else {**params, "note": f"skipped: {estimates.limit}"}
    rows = [("skce_b", estimates.value("b"), forms.biased if forms else None, params),
            ("skce_uq", estimates.value("uq"), forms.unbiased_untied if forms else None,
             dict(params))]
    seed = stream_seed(rng) if ci_level is not None else 0
    for metric_id, terms, extra, size in (
            ("skce_ul", estimates.pairs, {"pairs": estimates.pairs.count}, 2),
            ("skce_block", estimates.blocks, {"blocksize": estimates.blocksize,
                                              "blocks": estimates.blocks.count},
             estimates.blocksize)):
        replicates = None
        if ci_level is not None and terms.count >= 2:
            replicates = estimates.inputs.replicates(
                estimates.kernel, size, Draws(seed, f"{metric_id}_bootstrap", n_resamples))
        rows.append((metric_id, terms.mean, replicates, {**estimates.linear_params, **extra}))
    out = []
    for metric_id, value, replicates, metric_params in rows:
        ci = None
        if ci_level is not None:
            metric_params = {**metric_params, **ci_params(ci_level, n_resamples)}
            ci = percentile_interval(replicates, ci_level) if replicates is not None else None
        out.append(MetricResult(metric_id, value, metric_params, ci=ci,
                                title=registry.title(metric_id)))
    return tuple(out)


def _tests(estimates: _Estimates, tests: tuple[str, ...], n_resamples: int, alpha: float,
           rng: np.random.Generator) -> tuple[TestResult, ...]:
    """The requested tests, in report order (``rng``: the consistency redraws)."""
    out = []
    for test_id in (t for t in SKCE_TESTS if t in tests):
        if estimates.terms is None and test_id not in LINEAR_TESTS:
            out.append(_decided(test_id, Status.SKIPPED, f"{estimates.limit}: the quadratic "
                                "estimator is not computed (raise the limit to force it)",
                                math.nan, dict(estimates.params)))
        elif test_id.endswith("_bound"):
            out.append(_bound(estimates, test_id.split("_")[1], alpha))
        elif test_id == "skce_ul_asymptotic":
            out.append(_linear(estimates))
        else:
            reason = ((rules.too_few_for_asymptotics if test_id == "skce_uq_asymptotic"
                       else rules.too_few_rows)(estimates.n)
                      or rules.resampling_cannot_reject(n_resamples, alpha))
            if reason:
                out.append(_decided(test_id, Status.INCONCLUSIVE, reason,
                                    estimates.terms.unbiased, dict(estimates.params)))
            elif test_id == "skce_uq_asymptotic":
                out.append(_asymptotic(estimates, n_resamples))
            else:
                out.append(_consistency(estimates, n_resamples, rng))
    return tuple(out)


def _decided(test_id: str, status: Status, message: str, estimate: float, params: dict
             ) -> TestResult:
    """A test that set its own status (INCONCLUSIVE or SKIPPED) instead of a p-value."""
    return TestResult(test_id, math.nan, estimate, math.nan, METHODS[test_id], params=params,
                      status=status, message=message, title=registry.title(test_id))


def _bound(estimates: _Estimates, estimator: str, alpha: float) -> TestResult:
    """Distribution-free bound of ``SKCE_b`` (McDiarmid), ``SKCE_uq`` or ``SKCE_ul``
    (Hoeffding) with ``B = 2``."""
    test_id, n, estimate = f"skce_{estimator}_bound", estimates.n, estimates.value(estimator)
    smallest = smallest_bound_pvalue(n, estimator)
    params = {**(estimates.linear_params if estimator == "ul" else estimates.reported[1]),
              "bound": UNIFORM_BOUND, "smallest_p_value": smallest}
    reason = rules.too_few_rows(n) or rules.bound_cannot_reject(smallest, alpha)
    if reason:
        return _decided(test_id, Status.INCONCLUSIVE, reason, estimate, params)
    p = (bound_pvalue_biased(estimate, n) if estimator == "b"
         else bound_pvalue_unbiased(estimate, n))
    return TestResult(test_id, estimate, estimate, p, METHODS[test_id], params=params,
                      title=registry.title(test_id))


def _linear(estimates: _Estimates) -> TestResult:
    """z-test of the mean of the pair terms (``SKCE_ul``)."""
    test_id, pairs, params = "skce_ul_asymptotic", estimates.pairs, estimates.linear_params
    estimate = estimates.value("ul")
    reason = rules.too_few_pairs(pairs.count)
    if reason is None:
        result = linear_asymptotic_test(pairs)
        if math.isfinite(result.z):
            return TestResult(test_id, result.z, estimate, result.p_value, METHODS[test_id],
                              params={**params, "pairs": result.n_terms,
                                      "stderr": result.stderr,
                                      "statistic": "z = sqrt(pairs) SKCE_ul / sd"},
                              title=registry.title(test_id))
        reason = "all pair terms are equal (zero variance): the z statistic is undefined"
    return _decided(test_id, Status.INCONCLUSIVE, reason, estimate, dict(params))


def _asymptotic(estimates: _Estimates, n_resamples: int) -> TestResult:
    """Arcones-Gine bootstrap test of ``n/(n-1) SKCE_uq - SKCE_b`` (a features run's
    statistic from the bootstrap's own rounded kernel, as its replicates)."""
    test_id, terms, feature_pass = "skce_uq_asymptotic", estimates.terms, estimates.feature_pass
    boot_terms = feature_pass.boot_terms if feature_pass is not None else None
    statistic = quadratic_statistic(boot_terms or terms)
    null = estimates.forms.arcones_gine
    return TestResult(test_id, statistic, terms.unbiased, monte_carlo_pvalue(statistic, null),
                      METHODS[test_id], n_resamples=n_resamples,
                      params={**estimates.params, "statistic": "n/(n-1) SKCE_uq - SKCE_b"},
                      null_distribution=null, title=registry.title(test_id))


def _consistency(estimates: _Estimates, n_resamples: int, rng: np.random.Generator) -> TestResult:
    """Consistency resampling test of ``SKCE_uq``."""
    test_id, terms = "skce_consistency", estimates.terms
    if estimates.feature_pass is not None:
        result = estimates.feature_pass.consistency
    else:
        result = estimates.inputs.consistency(estimates.kernel, terms.unbiased, rng,
                                              n_resamples)
    return TestResult(test_id, result.statistic, terms.unbiased, result.p_value,
                      METHODS[test_id], n_resamples=n_resamples, params=dict(estimates.params),
                      null_distribution=result.null_distribution, title=registry.title(test_id))
