"""SKCE estimators and the median heuristic against loop references and golden values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calaudit.metrics.skce import (
    block_terms,
    choose_kernel,
    quadratic_terms,
    residual_gram,
    skce_biased,
    skce_block,
    skce_linear,
    skce_unbiased,
)
from calaudit.numerics.bandwidth import median_distance
from calaudit.numerics.kernels import StationaryKernel, gaussian, pairwise_distance
from tests import reference_global as ref


def data(n, m, seed, alpha=0.5):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(m, alpha), size=n)
    labels = rng.integers(0, m, size=n)
    return probs, labels


@pytest.mark.parametrize("distance", ["tv", "sqeuclidean", "l1"])
@pytest.mark.parametrize("n,m", [(9, 2), (12, 3), (15, 5)])
def test_estimators_match_loops(distance, n, m):
    probs, labels = data(n, m, seed=n * m)
    kernel = StationaryKernel(1.7, distance)
    h = ref.h_matrix(probs.tolist(), labels.tolist(), 1.7, distance)
    assert skce_biased(labels, probs, kernel) == pytest.approx(ref.skce_b(h), rel=1e-12)
    assert skce_unbiased(labels, probs, kernel) == pytest.approx(ref.skce_uq(h), rel=1e-12,
                                                                  abs=1e-15)
    assert skce_linear(labels, probs, kernel) == pytest.approx(ref.skce_ul(h), rel=1e-12,
                                                                abs=1e-15)
    for b in (2, 3, 4):
        assert skce_block(labels, probs, kernel, b) == pytest.approx(
            ref.skce_block(h, b), rel=1e-12, abs=1e-15)


def test_tiled_engine_path_matches_dense_path():
    """n^2 above one tile: ResidualGram is used lazily (no dense cache)."""
    probs, labels = data(2100, 3, seed=5)
    res = -probs.copy()
    res[np.arange(probs.shape[0]), labels] += 1
    kernel = StationaryKernel(2.0, "tv")
    lazy = quadratic_terms(residual_gram(kernel, probs, res))
    h = kernel.evaluate(probs, probs) * (res @ res.T)
    assert lazy.biased == pytest.approx(h.sum() / 2100 ** 2, rel=1e-11)
    assert lazy.unbiased == pytest.approx((h.sum() - np.trace(h)) / (2100 * 2099), rel=1e-10)


def test_golden_values_of_calibrationerrors():
    """CalibrationErrors.jl test/skce.jl: predictions [[1,0],[0,1]], kernel
    SqExponentialKernel() (exp(-d^2/2)) x WhiteKernel()."""
    probs = np.array([[1.0, 0.0], [0.0, 1.0]])
    kernel = gaussian(0.5)
    cases = {(0, 1): (0.0, 0.0), (0, 0): (0.5, 0.0), (1, 0): (1 - math.exp(-1), -2 * math.exp(-1)),
             (1, 1): (0.5, 0.0)}
    for labels, (biased, unbiased) in cases.items():
        y = np.array(labels)
        assert skce_biased(y, probs, kernel) == pytest.approx(biased, abs=1e-15)
        assert skce_unbiased(y, probs, kernel) == pytest.approx(unbiased, abs=1e-15)


def test_binary_two_column_equals_scalar_formula():
    """TV on two-class vectors is |p - q|; <r_i, r_j> = 2 (y_i - p_i)(y_j - p_j)."""
    rng = np.random.default_rng(2)
    p = rng.random(30)
    y = (rng.random(30) < p).astype(int)
    probs = np.column_stack([1 - p, p])
    gamma = 3.0
    k = np.exp(-gamma * np.abs(p[:, None] - p[None, :]))
    r = y - p
    h = 2 * k * np.outer(r, r)
    expected = (h.sum() - np.trace(h)) / (30 * 29)
    assert skce_unbiased(y, probs, StationaryKernel(gamma, "tv")) == pytest.approx(expected,
                                                                                    rel=1e-12)


def test_block_terms_drop_incomplete_block():
    probs, labels = data(11, 3, seed=1)
    res = -probs.copy()
    res[np.arange(11), labels] += 1
    assert block_terms(StationaryKernel(1.0, "tv"), probs, res, 4).size == 2
    assert block_terms(StationaryKernel(1.0, "tv"), probs, res, 2).size == 5


@pytest.mark.parametrize("n", [40, 41])
@pytest.mark.parametrize("distance", ["tv", "sqeuclidean"])
def test_tiled_median_is_exact(n, distance):
    probs, _ = data(n, 3, seed=n)
    expected = ref.median_full_matrix(probs.tolist(), distance)
    assert median_distance(probs, distance) == pytest.approx(expected, rel=1e-15)
    # force the bracketing pass (matrix larger than max_entries)
    assert median_distance(probs, distance, max_entries=100) == expected


def test_tiled_median_with_ties_and_zero_median():
    rng = np.random.default_rng(4)
    base = rng.dirichlet(np.ones(3), size=4)
    probs = np.repeat(base, [30, 5, 5, 3], axis=0)
    full = np.median(pairwise_distance("tv", probs, probs))
    assert median_distance(probs, "tv", max_entries=50) == full
    many = np.repeat(base[:2], [40, 3], axis=0)
    assert np.median(pairwise_distance("tv", many, many)) == 0.0
    assert median_distance(many, "tv", max_entries=50) == 0.0


def test_choose_kernel_sources():
    probs, _ = data(50, 3, seed=9)
    choice = choose_kernel(probs)
    assert choice.source == "median"
    assert choice.bandwidth == ref.median_full_matrix(probs.tolist())
    assert choose_kernel(probs, "gaussian", 0.25).gamma == 4.0
    tied = np.repeat(probs[:2], [45, 5], axis=0)
    fallback = choose_kernel(tied)
    assert fallback.source == "median_nonzero" and fallback.bandwidth > 0
    assert choose_kernel(np.repeat(probs[:1], 5, axis=0)).source == "degenerate"
    sub = choose_kernel(np.tile(probs, (3, 1)), exact_max_n=100, rng=np.random.default_rng(1))
    assert sub.source == "median_subsample"
    with pytest.raises(ValueError):
        choose_kernel(probs, "cosine")
