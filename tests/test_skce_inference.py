"""SKCE tests: bounds, linear z-test, Arcones-Gine bootstrap and consistency resampling
against loop references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from calaudit.inference.consistency import skce_consistency_test
from calaudit.inference.skce_tests import (
    LinearTerms,
    bound_pvalue_biased,
    bound_pvalue_unbiased,
    count_forms,
    linear_asymptotic_test,
    quadratic_statistic,
    smallest_bound_pvalue,
)
from calaudit.metrics.skce import quadratic_terms, residual_gram
from calaudit.numerics.kernels import StationaryKernel
from calaudit.numerics.resampling import (
    bootstrap_counts,
    categorical_draws,
    monte_carlo_pvalue,
    one_hot_residuals,
)
from tests import reference_global as ref


def setup(n=12, m=3, seed=0):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(m, 0.7), size=n)
    labels = rng.integers(0, m, size=n)
    res = -probs.copy()
    res[np.arange(n), labels] += 1
    kernel = StationaryKernel(1.3, "tv")
    h = ref.h_matrix(probs.tolist(), labels.tolist(), 1.3)
    return probs, labels, res, kernel, h


def test_bounds_formulas():
    n, t = 1000, 0.05
    assert bound_pvalue_unbiased(t, n) == pytest.approx(math.exp(-500 * t * t / 8))
    assert bound_pvalue_unbiased(-t, n) == 1.0
    assert bound_pvalue_unbiased(-t, n, convention="calibrationtests") == pytest.approx(
        math.exp(-500 * t * t / 8))
    s = math.sqrt(n * t / 2) - 1
    assert bound_pvalue_biased(t, n) == pytest.approx(math.exp(-s * s / 2))
    assert bound_pvalue_biased(1e-5, n) == 1.0
    # smallest p-value at the largest possible estimate B = 2
    assert smallest_bound_pvalue(11, "uq") == pytest.approx(math.exp(-5 / 2))
    assert smallest_bound_pvalue(12, "uq") < 0.05 < smallest_bound_pvalue(11, "uq")
    assert smallest_bound_pvalue(12, "b") < 0.05 < smallest_bound_pvalue(11, "b")


def test_linear_test_matches_loops():
    _, _, _, _, h = setup(n=40, seed=3)
    pairs = np.array([h[2 * i][2 * i + 1] for i in range(20)])
    mean = sum(pairs) / 20
    sd = math.sqrt(sum((x - mean) ** 2 for x in pairs) / 20)
    z = mean / (sd / math.sqrt(20))
    for per_range in (20, 7, 1):  # one range, uneven ranges, one term per range
        result = linear_asymptotic_test(LinearTerms.of(pairs, per_range))
        assert result.z == pytest.approx(z, rel=1e-12)
        assert result.p_value == pytest.approx(stats.norm.sf(z), rel=1e-12)
    assert math.isnan(linear_asymptotic_test(LinearTerms.of(np.ones(5), 2)).z)


def test_linear_terms_combined_range_by_range_are_the_whole_arrays():
    """Chan's combination of the ranges' means and squared deviations: the mean and the
    sum of squared deviations of all the terms (1e-12); one range: their bytes."""
    terms = np.random.default_rng(2).standard_t(3, 100_003) * 1e-3 + 5e-4
    combined = LinearTerms.of(terms, 32_768)
    assert combined.count == terms.size
    assert combined.mean == pytest.approx(terms.mean(), rel=1e-12)
    assert combined.m2 == pytest.approx(np.sum((terms - terms.mean()) ** 2), rel=1e-12)
    one = LinearTerms.of(terms, terms.size)
    assert one.mean == float(terms.mean())
    assert math.isnan(LinearTerms.of(np.empty(0), 10).mean)


def test_quadratic_statistic_matches_definition():
    probs, labels, res, kernel, h = setup()
    terms = quadratic_terms(residual_gram(kernel, probs, res))
    assert quadratic_statistic(terms) == pytest.approx(ref.calibrationtests_statistic(h),
                                                       rel=1e-12)


def test_arcones_gine_replicates_match_resampled_indices(monkeypatch):
    """Count-weighted forms equal CalibrationTests.jl's loop over the drawn indices
    (float64 products here; the float32 default is checked in the next test)."""
    import calaudit.inference.skce_tests as module

    monkeypatch.setattr(module, "BOOTSTRAP_GEMM_DTYPE", np.float64)
    probs, labels, res, kernel, h = setup(n=10, seed=7)
    n = 10
    gram = residual_gram(kernel, probs, res)
    terms = quadratic_terms(gram)
    rng = np.random.default_rng(11)
    draws = rng.integers(0, n, size=(6, n))
    counts = np.stack([np.bincount(d, minlength=n) for d in draws], axis=1).astype(float)
    forms = count_forms(gram, terms, counts)
    for b in range(6):
        expected = ref.arcones_gine_replicate(h, draws[b].tolist())
        assert forms.arcones_gine[b] == pytest.approx(expected, rel=1e-11, abs=1e-14)
        picked = [[h[i][j] for j in draws[b]] for i in draws[b]]
        assert forms.biased[b] == pytest.approx(ref.skce_b(picked), rel=1e-11)
        assert forms.unbiased[b] == pytest.approx(ref.skce_uq(picked), rel=1e-11, abs=1e-14)
        distinct = [h[i][j] for i in draws[b] for j in draws[b] if i != j]
        assert forms.unbiased_untied[b] == pytest.approx(np.mean(distinct), rel=1e-11,
                                                         abs=1e-14)


def test_fused_float32_bootstrap_pass_matches_float64():
    from calaudit.inference.skce_tests import bootstrap_pass

    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.full(4, 0.5), size=300)
    labels = rng.integers(0, 4, size=300)
    res = -probs.copy()
    res[np.arange(300), labels] += 1
    gram = residual_gram(StationaryKernel(1.5, "tv"), probs, res)
    exact = quadratic_terms(gram)
    counts = bootstrap_counts(rng, 300, 50)
    terms, forms = bootstrap_pass(gram, counts)
    np.testing.assert_allclose(terms.row_sums, exact.row_sums, rtol=1e-12, atol=1e-12)
    h = gram.block(slice(0, 300), slice(0, 300))
    quadratic = np.einsum("ib,ij,jb->b", counts, h, counts)
    np.testing.assert_allclose(forms.quadratic, quadratic, rtol=1e-6)
    spread = forms.arcones_gine.std()
    exact_t = (quadratic - counts.T @ np.diag(h)) / (300 * 299) - 2 * counts.T @ h.sum(1) / 300**2
    assert np.abs(forms.arcones_gine - exact_t).max() < 1e-4 * spread


def test_bootstrap_counts_are_multinomial_draws():
    counts = bootstrap_counts(np.random.default_rng(0), 7, 500)
    assert counts.shape == (7, 500)
    assert (counts.sum(axis=0) == 7).all()
    assert counts.mean() == pytest.approx(1.0, abs=0.05)


def test_consistency_null_matches_direct_recomputation():
    probs, labels, res, kernel, _ = setup(n=14, m=4, seed=2)
    observed = quadratic_terms(residual_gram(kernel, probs, res)).unbiased
    result = skce_consistency_test(kernel.on(probs), probs, observed,
                                   np.random.default_rng(5), 9, max_entries=4 * 14 * 4,
                                   dtype=np.float64)
    replay = np.random.default_rng(5)
    expected = []
    for q in (4, 4, 1):  # batches of max_entries / (n m) = 4 columns
        draws = categorical_draws(replay, probs, q)
        for b in range(q):
            hb = ref.h_matrix(probs.tolist(), draws[:, b].tolist(), 1.3)
            expected.append(ref.skce_uq(hb))
    np.testing.assert_allclose(result.null_distribution, expected, rtol=1e-10, atol=1e-14)
    k = sum(e >= observed for e in expected)
    assert result.p_value == pytest.approx((1 + k) / 10)


def test_consistency_float32_products_stay_close():
    probs, labels, res, kernel, _ = setup(n=200, m=5, seed=4)
    fast = skce_consistency_test(kernel.on(probs), probs, 0.0, np.random.default_rng(3), 20)
    replay = np.random.default_rng(3)
    z = one_hot_residuals(categorical_draws(replay, probs, 20), probs)
    from calaudit.numerics.pairwise import kernel_quadratic_forms
    exact = kernel_quadratic_forms(kernel.on(probs), z) / (200 * 199)
    assert np.abs(fast.null_distribution - exact).max() < 1e-5 * exact.std()


def test_consistency_binary_shortcut_equals_vector_path():
    rng = np.random.default_rng(8)
    p = rng.random(20)
    probs = np.column_stack([1 - p, p])
    kernel = StationaryKernel(2.0, "tv")
    fast = skce_consistency_test(kernel.on(probs), probs, 0.0, np.random.default_rng(1), 5,
                                 dtype=np.float64)
    replay = np.random.default_rng(1)
    z = one_hot_residuals(categorical_draws(replay, probs, 5), probs)
    from calaudit.numerics.pairwise import kernel_quadratic_forms
    slow = kernel_quadratic_forms(kernel.on(probs), z) / (20 * 19)
    np.testing.assert_allclose(fast.null_distribution, slow, rtol=1e-12, atol=1e-15)


def test_categorical_draws_frequencies():
    probs = np.array([[0.2, 0.5, 0.3]] * 2000)
    draws = categorical_draws(np.random.default_rng(0), probs, 5)
    freq = np.bincount(draws.ravel(), minlength=3) / draws.size
    np.testing.assert_allclose(freq, [0.2, 0.5, 0.3], atol=0.01)


def test_monte_carlo_pvalue_never_zero_and_counts_ties():
    assert monte_carlo_pvalue(10.0, np.zeros(99)) == pytest.approx(0.01)
    assert monte_carlo_pvalue(1.0, np.array([1.0, 0.5, 2.0])) == pytest.approx(0.75)
    assert monte_carlo_pvalue(1.0, np.array([1.0 - 1e-15])) == pytest.approx(1.0)
