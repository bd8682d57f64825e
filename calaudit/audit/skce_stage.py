"""Stage: squared kernel calibration error estimates and the SKCE calibration tests.

Metrics ``skce_b``, ``skce_uq`` (quadratic; up to ``skce.max_quadratic_n`` rows),
``skce_ul`` and ``skce_block`` (linear in n). Tests (``calaudit test``): ``skce_b_bound``,
``skce_uq_bound``, ``skce_ul_bound``, ``skce_ul_asymptotic``, ``skce_uq_asymptotic``,
``skce_consistency`` (see :mod:`calaudit.inference.skce_tests`,
:mod:`calaudit.inference.consistency`, INCONCLUSIVE rules in
:mod:`calaudit.inference.applicability`).

Random streams: the stage generator is split (``Generator.spawn``) into independent
children for the median subsample, the bootstrap counts (shared by the quadratic asymptotic
test and the ``--ci`` intervals of ``skce_b``/``skce_uq``: one engine pass serves both), the
consistency redraws and the pair/block bootstrap, so enabling one part never changes
another's numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from calaudit.audit.config import AuditConfig
from calaudit.inference.method import MethodChoice, choose_method
from calaudit.audit.stages import StageOutput
from calaudit.data.dataset import CalibrationData
from calaudit.inference import applicability as rules
from calaudit.inference.bootstrap_ci import percentile_interval
from calaudit.inference.consistency import skce_consistency_test
from calaudit.inference.feature_tests import (
    FeaturePass,
    approximation_error,
    feature_skce_pass,
)
from calaudit.inference.skce_tests import (
    CountForms,
    bootstrap_pass,
    bound_pvalue_biased,
    bound_pvalue_unbiased,
    count_forms,
    linear_asymptotic_test,
    quadratic_statistic,
    smallest_bound_pvalue,
)
from calaudit.metrics.skce import (
    KERNEL_DISTANCES,
    KernelChoice,
    QuadraticTerms,
    block_terms,
    choose_kernel,
    quadratic_terms,
    residual_gram,
)
from calaudit.numerics.features import FourierFeatures
from calaudit.numerics.grams import cached
from calaudit.numerics.row_blocks import executor_of
from calaudit.numerics.resampling import batch_sizes, bootstrap_counts, monte_carlo_pvalue
from calaudit.results import MetricResult, Status, TestResult

TITLES = {
    "skce_b": "SKCE, biased estimator",
    "skce_uq": "SKCE, unbiased quadratic estimator",
    "skce_ul": "SKCE, unbiased linear estimator",
    "skce_block": "SKCE, unbiased block estimator",
    "skce_b_bound": "SKCE_b distribution-free bound",
    "skce_uq_bound": "SKCE_uq distribution-free bound",
    "skce_ul_bound": "SKCE_ul distribution-free bound",
    "skce_ul_asymptotic": "SKCE_ul asymptotic normal test",
    "skce_uq_asymptotic": "SKCE_uq asymptotic test (Arcones-Gine bootstrap)",
    "skce_consistency": "SKCE_uq consistency resampling test",
}


#: Rows of the subsample on which a features run compares its SKCE_uq with the exact one.
APPROXIMATION_ROWS = 2000


@dataclass(frozen=True)
class SkceFeatures:
    """The SKCE through random Fourier features of the prediction kernel.

    Two classes go through the scalar residual ``sqrt(2) (y - p_1)`` (``<e_y - p,
    e_y' - p'> = 2 (y - p_1)(y' - p'_1)``), so the resamples are one column each, and
    through the kernel on ``p_1`` alone: for ``p = (1 - p_1, p_1)``, ``TV = |p_1 - q_1|``,
    ``|p - q|^2 = 2 (p_1 - q_1)^2`` and ``|p - q|_1 = 2 |p_1 - q_1|`` (:data:`BINARY`).
    """

    features: FourierFeatures
    x: np.ndarray
    full: np.ndarray
    r: np.ndarray
    proba: np.ndarray
    scale: float

    #: Two classes: the kernel on ``p_1`` equal to ``kernel(gamma)`` on ``(1 - p_1, p_1)``,
    #: as (distance, factor of gamma).
    BINARY = {"tv": ("l1", 1.0), "sqeuclidean": ("sqeuclidean", 2.0), "l1": ("l1", 2.0)}

    @classmethod
    def build(cls, choice: KernelChoice, computation: MethodChoice, data: CalibrationData
              ) -> SkceFeatures:
        full = np.asarray(data.y_proba, dtype=np.float64)
        distance, factor, x = KERNEL_DISTANCES[choice.name], 1.0, full
        if data.is_binary:
            (distance, factor), x = cls.BINARY[distance], full[:, 1:2].copy()
        features = FourierFeatures.draw(distance, factor * choice.gamma, x.shape[1],
                                        computation.n_features, computation.frequency_seed)
        if data.is_binary:
            scale = math.sqrt(2.0)
            # scale * data.residuals[:, 1], a block of rows at a time
            r = scale * data.residual_rows(0, data.n)[:, 1]
            return cls(features, x, full, r, full[:, 1].copy(), scale)
        return cls(features, x, full, data.residuals, full, 1.0)

    def one_pass(self, consistency_rng: np.random.Generator | None,
                 boot_rng: np.random.Generator | None, n_resamples: int,
                 executor=None) -> FeaturePass:
        """Terms, bootstrap forms and consistency null in one exact pass over the row
        blocks (:func:`calaudit.inference.feature_tests.feature_skce_pass`)."""
        return feature_skce_pass(self.features, self.x, self.r, self.proba,
                                 consistency_rng, n_resamples, boot_rng, n_resamples,
                                 residual_scale=self.scale, executor=executor)

    def approximation(self, kernel, rng: np.random.Generator) -> dict:
        """Feature vs exact ``SKCE_uq`` on a seeded subsample of
        :data:`APPROXIMATION_ROWS` rows."""
        n = self.x.shape[0]
        rows = (np.arange(n) if n <= APPROXIMATION_ROWS
                else np.sort(rng.choice(n, APPROXIMATION_ROWS, replace=False)))
        return approximation_error(self.features, self.x[rows], self.r[rows],
                                   kernel.on(self.full[rows]))


def linear(common: dict) -> dict:
    """The params of a linear-time estimator or test: no ``computation`` entry (they are
    always computed exactly, whatever ``method``)."""
    return {k: v for k, v in common.items() if k != "computation"}


def decided(test_id: str, status: Status, message: str, estimate: float, method: str,
            params: dict) -> TestResult:
    """A test that set its own status (INCONCLUSIVE or SKIPPED) instead of a p-value."""
    return TestResult(test_id, math.nan, estimate, math.nan, method, params=params,
                      status=status, message=message, title=TITLES[test_id])


class SkceStage:
    """SKCE estimates and tests."""

    name = "skce"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        median_rng, boot_rng, consistency_rng, linear_rng, feature_rng = rng.spawn(5)
        cfg = config.skce
        probs, residuals, n = data.y_proba, data.residuals, data.n
        choice = choose_kernel(probs, cfg.kernel, cfg.bandwidth,
                               exact_max_n=cfg.max_quadratic_n, rng=median_rng)
        kernel = choice.kernel
        common = choice.to_params()
        computation = choose_method(
            config, n, config.n_resamples * (1 if data.is_binary else data.n_classes),
            feature_rng, exact_possible=n <= cfg.max_quadratic_n,
            limit_note=f"n > skce.max_quadratic_n = {cfg.max_quadratic_n}")
        features = None
        if computation.features and n >= 2:
            features = SkceFeatures.build(choice, computation, data)
            common = {**common, "computation": computation.to_params(
                approximation=features.approximation(kernel, feature_rng))}
        elif n >= 2:
            common = {**common, "computation": computation.to_params()}
        quadratic = 2 <= n <= cfg.max_quadratic_n and features is None
        gram = residual_gram(kernel, probs, residuals) if quadratic else None
        pairs = block_terms(kernel, probs, residuals, 2)
        blocks = block_terms(kernel, probs, residuals, cfg.blocksize)
        with_ci = config.ci and config.run_tests
        wants_bootstrap = with_ci or (config.run_tests
                                      and config.global_tests.enabled("skce_uq_asymptotic"))
        terms, forms = None, None
        feature_pass = None
        if features is not None:
            consistency = (config.run_tests and config.global_tests.enabled("skce_consistency"))
            feature_pass = features.one_pass(consistency_rng if consistency else None,
                                             boot_rng if wants_bootstrap else None,
                                             config.n_resamples, executor_of(config))
            terms, forms = feature_pass.terms, feature_pass.forms
        elif gram is not None and wants_bootstrap:
            terms, forms = self._bootstrap(gram, n, config.n_resamples, boot_rng)
        elif gram is not None:
            terms = quadratic_terms(gram)
        exact = self._exact_estimates(features, kernel, probs, residuals, n, cfg, common)
        metrics = self._metrics(*(exact or (terms, common)), pairs, blocks, forms, with_ci,
                                config, linear_rng, cfg.blocksize)
        tests: list[TestResult] = []
        if config.run_tests:
            tests = self._tests(data, config, common, terms, pairs, forms, kernel,
                                consistency_rng, feature_pass, exact)
        return StageOutput(metrics=tuple(metrics), tests=tuple(tests))

    @staticmethod
    def _exact_estimates(features, kernel, probs, residuals, n, cfg, common
                         ) -> tuple[QuadraticTerms, dict] | None:
        """Exact ``SKCE_b`` and ``SKCE_uq`` (one tiled engine pass, O(n^2 m), no n x n
        matrix) when the resampling tests ran on random features but ``n`` is within
        ``skce.max_quadratic_n``: the reported estimates (and the closed-form bounds built
        on them) stay exact and comparable with CalibrationErrors.jl; only the resampled
        tests use the feature statistic, whose own value is each test's ``statistic``."""
        if features is None or not 2 <= n <= cfg.max_quadratic_n:
            return None
        terms = quadratic_terms(residual_gram(kernel, probs, residuals))
        params = {**common, "computation": {
            "method": "exact", "requested": common["computation"].get("requested"),
            "reason": "estimates are computed exactly up to skce.max_quadratic_n; the "
                      "resampling tests ran on random features (see their params)"}}
        return terms, params

    @staticmethod
    def _bootstrap(gram, n: int, n_resamples: int, rng: np.random.Generator
                   ) -> tuple[QuadraticTerms, CountForms]:
        """Estimates and bootstrap count forms; the first batch shares its engine pass with
        the estimate (``H 1``)."""
        sizes = list(batch_sizes(n_resamples, n))
        terms, first = bootstrap_pass(gram, bootstrap_counts(rng, n, sizes[0]))
        parts = [first] + [count_forms(gram, terms, bootstrap_counts(rng, n, q))
                           for q in sizes[1:]]
        return terms, CountForms(*(np.concatenate([getattr(p, f) for p in parts])
                            for f in ("quadratic", "diagonal", "linear", "squared", "ties")), n=n)

    def _metrics(self, terms, common, pairs, blocks, forms, with_ci, config, rng,
                 blocksize) -> list[MetricResult]:
        level = config.ci_level
        skipped = {"note": f"skipped: n > skce.max_quadratic_n = {config.skce.max_quadratic_n}"}
        out = []
        for metric_id, value, replicates in (
            ("skce_b", terms.biased if terms else math.nan, forms.biased if forms else None),
            ("skce_uq", terms.unbiased if terms else math.nan,
             forms.unbiased_untied if forms else None),
        ):
            params = dict(common) if terms else {**common, **skipped}
            ci = percentile_interval(replicates, level) if with_ci and replicates is not None \
                else None
            out.append(self._metric(metric_id, value, params, ci, with_ci, config))
        for metric_id, values, extra in (("skce_ul", pairs, {"pairs": int(pairs.size)}),
                                         ("skce_block", blocks, {"blocksize": blocksize,
                                                                 "blocks": int(blocks.size)})):
            value = float(values.mean()) if values.size else math.nan
            ci = None
            if with_ci and values.size >= 2:
                counts = bootstrap_counts(rng, values.size, config.n_resamples)
                ci = percentile_interval(values @ counts / values.size, level)
            out.append(self._metric(metric_id, value, {**linear(common), **extra}, ci, with_ci,
                                    config))
        return out

    @staticmethod
    def _metric(metric_id, value, params, ci, with_ci, config) -> MetricResult:
        if with_ci:
            params = {**params, "ci_method": "percentile bootstrap",
                      "ci_level": config.ci_level, "ci_resamples": config.n_resamples}
        return MetricResult(metric_id, value, params, ci=ci, title=TITLES[metric_id])

    def _tests(self, data, config, common, terms, pairs, forms, kernel, rng, features,
               exact=None) -> list[TestResult]:
        enabled = config.global_tests.enabled
        n, alpha = data.n, config.alpha
        out: list[TestResult] = []
        bound_terms, bound_common = exact or (terms, common)
        for test_id, estimator in (("skce_b_bound", "b"), ("skce_uq_bound", "uq"),
                                   ("skce_ul_bound", "ul")):
            if enabled(test_id):
                out.append(self._bound(test_id, estimator, n, alpha, bound_terms, pairs,
                                       bound_common, config))
        if enabled("skce_ul_asymptotic"):
            out.append(self._linear(pairs, linear(common)))
        if enabled("skce_uq_asymptotic"):
            boot_terms = features.boot_terms if features is not None else None
            out.append(self._asymptotic(terms, forms, n, alpha, config, common, boot_terms))
        if enabled("skce_consistency"):
            out.append(self._consistency(data, terms, kernel, n, alpha, config, common, rng,
                                         features))
        return out

    @staticmethod
    def _skipped(test_id: str, method: str, common: dict, config: AuditConfig) -> TestResult:
        return decided(test_id, Status.SKIPPED,
                       f"n > skce.max_quadratic_n = {config.skce.max_quadratic_n}: the "
                       f"quadratic estimator is not computed (raise the limit to force it)",
                       math.nan, method, dict(common))

    def _bound(self, test_id, estimator, n, alpha, terms, pairs, common, config) -> TestResult:
        method = "distribution-free bound, B = 2"
        params = {**(linear(common) if estimator == "ul" else common), "bound": 2.0,
                  "smallest_p_value": smallest_bound_pvalue(n, estimator)}
        if estimator != "ul" and terms is None:
            return self._skipped(test_id, method, common, config)
        estimate = {"b": terms.biased if terms else math.nan,
                    "uq": terms.unbiased if terms else math.nan,
                    "ul": float(pairs.mean()) if pairs.size else math.nan}[estimator]
        reason = rules.too_few_rows(n) or rules.bound_cannot_reject(
            smallest_bound_pvalue(n, estimator), alpha)
        if reason:
            return decided(test_id, Status.INCONCLUSIVE, reason, estimate, method, params)
        p = (bound_pvalue_biased(estimate, n) if estimator == "b"
             else bound_pvalue_unbiased(estimate, n))
        return TestResult(test_id, estimate, estimate, p, method, params=params,
                          title=TITLES[test_id])

    @staticmethod
    def _linear(pairs, common) -> TestResult:
        test_id, method = "skce_ul_asymptotic", "asymptotic normal (z-test), sd divides by pairs"
        estimate = float(pairs.mean()) if pairs.size else math.nan
        reason = rules.too_few_pairs(int(pairs.size))
        if reason is None:
            result = linear_asymptotic_test(pairs)
            if math.isfinite(result.z):
                params = {**common, "pairs": result.n_terms, "stderr": result.stderr,
                          "statistic": "z = sqrt(pairs) SKCE_ul / sd"}
                return TestResult(test_id, result.z, estimate, result.p_value, method,
                                  params=params, title=TITLES[test_id])
            reason = "all pair terms are equal (zero variance): the z statistic is undefined"
        return decided(test_id, Status.INCONCLUSIVE, reason, estimate, method, dict(common))

    def _asymptotic(self, terms, forms, n, alpha, config, common, boot_terms=None
                    ) -> TestResult:
        """``boot_terms``: the observed terms of the bootstrap's kernel when it differs
        from ``terms`` (the feature pass rounds ``psi_i = phi_i r_i`` to a grid), so the
        statistic and its replicates come from the same kernel."""
        test_id = "skce_uq_asymptotic"
        method = "bootstrap of the degenerate U-statistic (Arcones-Gine)"
        if terms is None:
            return self._skipped(test_id, method, common, config)
        reason = (rules.too_few_for_asymptotics(n)
                  or rules.resampling_cannot_reject(config.n_resamples, alpha))
        if reason:
            return decided(test_id, Status.INCONCLUSIVE, reason, terms.unbiased, method,
                           dict(common))
        statistic = quadratic_statistic(boot_terms or terms)
        null = forms.arcones_gine
        params = {**common, "statistic": "n/(n-1) SKCE_uq - SKCE_b"}
        return TestResult(test_id, statistic, terms.unbiased,
                          monte_carlo_pvalue(statistic, null), method,
                          n_resamples=config.n_resamples, params=params,
                          null_distribution=null, title=TITLES[test_id])

    def _consistency(self, data, terms, kernel, n, alpha, config, common, rng, features
                     ) -> TestResult:
        test_id = "skce_consistency"
        method = "consistency resampling: labels redrawn from the predictions"
        if terms is None:
            return self._skipped(test_id, method, common, config)
        reason = (rules.too_few_rows(n)
                  or rules.resampling_cannot_reject(config.n_resamples, alpha))
        if reason:
            return decided(test_id, Status.INCONCLUSIVE, reason, terms.unbiased, method,
                           dict(common))
        if features is not None:
            result = features.consistency
        else:
            result = skce_consistency_test(cached(kernel.on(data.y_proba)), data.y_proba,
                                           terms.unbiased, rng, config.n_resamples,
                                           executor=executor_of(config))
        return TestResult(test_id, result.statistic, terms.unbiased, result.p_value, method,
                          n_resamples=config.n_resamples, params=dict(common),
                          null_distribution=result.null_distribution, title=TITLES[test_id])
