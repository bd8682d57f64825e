"""The tiled pairwise engine against dense kernel matrices built by double loops."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calaudit.numerics.kernels import ProductGram, StationaryKernel, gaussian
from calaudit.numerics.pairwise import kernel_matmul, kernel_quadratic_forms, tile_rows_for
from tests import reference


@pytest.fixture
def setting():
    rng = np.random.default_rng(7)
    n = 37
    probs = rng.dirichlet(np.ones(3), n)
    covs = rng.normal(size=(n, 2))
    gram = ProductGram((StationaryKernel(1.7, "tv").on(probs), gaussian(0.4).on(covs)))
    dense = reference.kernel_matrix_loops(
        lambda a, b: math.exp(-1.7 * reference.tv(a[:3], b[:3]))
        * math.exp(-0.4 * sum((u - v) ** 2 for u, v in zip(a[3:], b[3:]))),
        np.hstack([probs, covs]),
    )
    return rng, n, gram, dense


def test_block_matches_loops(setting):
    _, n, gram, dense = setting
    np.testing.assert_allclose(gram.block(slice(0, n), slice(0, n)), dense, rtol=1e-13)


@pytest.mark.parametrize("tile", [1, 5, 16, 37, 100])
def test_matmul_matches_dense(setting, tile):
    rng, n, gram, dense = setting
    z = rng.normal(size=(n, 4))
    np.testing.assert_allclose(kernel_matmul(gram, z, tile_rows=tile), dense @ z, atol=1e-12)
    vec = rng.normal(size=n)
    np.testing.assert_allclose(kernel_matmul(gram, vec, tile_rows=tile), dense @ vec, atol=1e-12)


@pytest.mark.parametrize("tile", [1, 6, 37])
def test_quadratic_forms_match_double_loop(setting, tile):
    rng, n, gram, dense = setting
    z = rng.normal(size=(n, 3, 5))  # n rows, 3 classes, 5 resamples
    expected = np.zeros(5)
    for q in range(5):
        for i in range(n):
            for j in range(n):
                if i != j:
                    expected[q] += dense[i, j] * z[i, :, q] @ z[j, :, q]
    got = kernel_quadratic_forms(gram, z, tile_rows=tile)
    np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-11)
    with_diag = kernel_quadratic_forms(gram, z, exclude_diagonal=False, tile_rows=tile)
    np.testing.assert_allclose(with_diag - got, np.einsum("ikq,ikq->q", z, z), atol=1e-11)


def test_vector_and_matrix_shapes(setting):
    rng, n, gram, dense = setting
    v = rng.normal(size=n)
    assert kernel_quadratic_forms(gram, v).shape == ()
    assert kernel_quadratic_forms(gram, v[:, None]).shape == (1,)
    assert float(kernel_quadratic_forms(gram, v, exclude_diagonal=False)) == pytest.approx(
        v @ dense @ v, rel=1e-12)


def test_kernel_conventions():
    a, b = np.array([[0.2, 0.8]]), np.array([[0.5, 0.5]])
    assert StationaryKernel(2.0, "tv").evaluate(a, b)[0, 0] == pytest.approx(math.exp(-2 * 0.3))
    assert gaussian(2.0).evaluate(a, b)[0, 0] == pytest.approx(math.exp(-2 * 0.18))
    assert StationaryKernel(2.0, "l1").evaluate(a, b)[0, 0] == pytest.approx(math.exp(-2 * 0.6))


def test_tile_rows_bounds_memory():
    assert tile_rows_for(10) == 10
    assert tile_rows_for(50_000) * 50_000 <= 4_000_000
