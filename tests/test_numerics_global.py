"""Numerics added for the global battery: fused engine pass, Grams, resampling, sums."""

from __future__ import annotations

import numpy as np
import pytest

from calaudit.numerics.grams import DenseGram, ResidualGram, cached, within_block_kernels
from calaudit.numerics.kernels import StationaryKernel
from calaudit.numerics.pairwise import (
    kernel_forms_and_matmul,
    kernel_matmul,
    kernel_quadratic_forms,
)
from calaudit.numerics.resampling import batch_sizes, one_hot_residuals
from calaudit.numerics.tabulate import Cells


@pytest.mark.parametrize("exclude", [True, False])
def test_fused_pass_equals_separate_passes(exclude):
    rng = np.random.default_rng(0)
    x = rng.random((301, 3))
    gram = StationaryKernel(1.5, "tv").on(x)
    z = rng.normal(size=(301, 7))
    v = rng.normal(size=301)
    forms, product = kernel_forms_and_matmul(gram, z, v[:, None], exclude_diagonal=exclude,
                                             tile_rows=37)
    np.testing.assert_allclose(forms, kernel_quadratic_forms(gram, z, exclude_diagonal=exclude),
                               rtol=1e-12)
    np.testing.assert_allclose(product[:, 0], kernel_matmul(gram, v), rtol=1e-12)


def test_fused_pass_single_precision_forms_with_exact_products():
    rng = np.random.default_rng(2)
    x = rng.random((257, 2))
    gram = StationaryKernel(0.7, "tv").on(x)
    z = rng.integers(0, 4, size=(257, 5)).astype(float)  # bootstrap counts: exact in float32
    forms, product = kernel_forms_and_matmul(gram, z, np.ones((257, 1)), tile_rows=64,
                                             dtype=np.float32, matmul_dtype=np.float64)
    np.testing.assert_allclose(forms, kernel_quadratic_forms(gram, z), rtol=1e-5)
    np.testing.assert_allclose(product[:, 0], kernel_matmul(gram, np.ones(257)), rtol=1e-13)


def test_residual_and_dense_grams():
    rng = np.random.default_rng(1)
    x = rng.dirichlet(np.ones(3), size=20)
    r = rng.normal(size=(20, 3))
    kernel = StationaryKernel(2.0, "tv")
    gram = ResidualGram(kernel.on(x), r)
    full = kernel.evaluate(x, x) * (r @ r.T)
    np.testing.assert_allclose(gram.block(slice(3, 9), slice(5, 20)), full[3:9, 5:20])
    np.testing.assert_allclose(gram.diagonal(), np.diag(full))
    dense = cached(gram)
    assert isinstance(dense, DenseGram)
    block = dense.block(slice(0, 2), slice(0, 2))
    block[:] = 0.0  # callers may write: the cache must not change
    np.testing.assert_allclose(dense.block(slice(0, 2), slice(0, 2)), full[:2, :2])
    assert cached(gram, max_entries=10) is gram


def test_within_block_kernels():
    rng = np.random.default_rng(2)
    x = rng.dirichlet(np.ones(4), size=12)
    for distance in ("tv", "l1", "sqeuclidean"):
        kernel = StationaryKernel(0.7, distance)
        blocks = within_block_kernels(kernel, x, 3, 1, 4)
        for b in range(3):
            rows = x[(b + 1) * 3:(b + 2) * 3]
            np.testing.assert_allclose(blocks[b], kernel.evaluate(rows, rows), rtol=1e-14)


def test_resampling_helpers():
    assert list(batch_sizes(10, 4, max_entries=12)) == [3, 3, 3, 1]
    probs = np.array([[0.2, 0.8], [0.5, 0.5]])
    z = one_hot_residuals(np.array([[0, 1], [1, 1]]), probs)
    np.testing.assert_allclose(z[:, :, 0], [[0.8, -0.8], [-0.5, 0.5]])


def test_cell_sums_weighted_and_unweighted():
    cells = Cells.of(np.array([0, 2, 2, 1, 0]))
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_allclose(cells.sums(values), [6.0, 4.0, 5.0])
    weights = np.array([[1, 0], [0, 2], [1, 1], [3, 0], [0, 1]], dtype=float)
    np.testing.assert_allclose(cells.sums(values, weights), [[1, 5], [12, 0], [3, 7]])
    np.testing.assert_allclose(cells.sums(None, weights), [[1, 1], [3, 0], [1, 3]])


@pytest.mark.parametrize("values", [
    np.array([3.0, 1.0, 1.0, 0.0, 7.0]), np.array([2.5, 1.0, 2.5]),
    np.array([2.0**20, 1.0, 1.0]), np.array([0.0]), np.zeros(0),
    1 + np.random.default_rng(0).poisson(1.0, 10_000).astype(float)])
def test_distinct_values_are_numpys_unique(values):
    from calaudit.numerics.tabulate import distinct

    got, want = distinct(values), np.unique(values)
    assert got.dtype == want.dtype and np.array_equal(got, want)
