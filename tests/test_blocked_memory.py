"""Block-at-a-time computations (memory O(block)) give the bytes of the former
whole-array code, which is copied here as the reference."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import special

from calaudit.data.build import LoadOptions, RawInputs, to_probabilities
from calaudit.data.covariates import encode_covariate
from calaudit.data.labels import binary_classes
from calaudit.metrics import smooth_ece as smooth
from calaudit.metrics.brier import brier_score
from calaudit.metrics.brier_decomposition import decompose_binned
from calaudit.metrics.clinical import fit_logistic, logistic_recalibration, logit_of
from calaudit.metrics.consistency import resampled_bin_rates
from calaudit.metrics.ece import notion_outcomes
from calaudit.metrics.log_loss import clipped_rows, log_loss
from calaudit.numerics.binning import grid_cell_index, uniform_bin_index
from calaudit.numerics.poisson_binomial import cell_counts, pmf, sample
from calaudit.numerics.tabulate import Cells
from calaudit.scale import task_ranges

SIZES = (1, 7, 129, 1000, 65_536, 65_537, 200_003)


def probabilities(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(m, 0.7), n)
    probs[: n // 50] = np.eye(m)[rng.integers(0, m, n // 50)]  # exact 0 and 1
    y = np.array([rng.choice(m, p=row) for row in probs[:50]] +
                 list(rng.integers(0, m, max(n - 50, 0))))[:n]
    return y.astype(np.int64), probs


@pytest.mark.parametrize("n", (1, 1000, 200_003))
def test_smooth_ece_spread_equals_the_sparse_product(n):
    """Each fixed range's spread is its sparse product, bit for bit; the ranges are
    added in range order (the whole product to 1e-12)."""
    rng = np.random.default_rng(n)
    scores = rng.random(n)
    scores[: n // 10] = 0.0
    scores[n // 10: n // 5] = 1.0
    outcomes = (rng.random(n) < scores).astype(np.float64)
    weights = rng.poisson(1.0, (n, 3)).astype(np.float64)
    for size in (1001, 3334):
        for w in (np.ones((n, 1)), weights):
            parts = []
            for a, b in task_ranges(n):
                spread = smooth.spread_matrix(scores[a:b], size)
                parts.append(np.asarray(spread @ np.hstack(
                    [(scores[a:b] - outcomes[a:b])[:, None] * w[a:b], w[a:b]])))
            former = parts[0].copy()
            for part in parts[1:]:
                former += part
            got = smooth.spread_rows(scores, outcomes, None if w.shape[1] == 1 else w, size)
            assert np.array_equal(got, former)
            spread = smooth.spread_matrix(scores, size)
            whole = np.asarray(spread @ np.hstack([(scores - outcomes)[:, None] * w, w]))
            assert np.allclose(got, whole, rtol=1e-12, atol=1e-12 * np.abs(whole).max())


@pytest.mark.parametrize("m", (2, 4))
@pytest.mark.parametrize("n", (5, 65_537, 200_003))
def test_log_loss_brier_and_grid_cells_equal_the_whole_array_code(n, m):
    y, probs = probabilities(n, m, n + m)
    eps = float(np.finfo(np.float64).eps)
    true = probs[np.arange(n), y]
    assert log_loss(y, probs) == float((-np.log(np.clip(true, eps, 1.0))).mean())
    assert clipped_rows(y, probs) == int(np.count_nonzero(true < eps))
    residual = probs.copy()
    residual[np.arange(n), y] -= 1.0
    assert brier_score(y, probs) == float(np.einsum("ij,ij->", residual, residual) / n)
    per_dim = uniform_bin_index(probs, 10).astype(np.int64)
    packed = per_dim @ (10 ** np.arange(m, dtype=np.int64))
    former = np.unique(packed, return_inverse=True)[1].reshape(-1).astype(np.int64)
    assert np.array_equal(grid_cell_index(probs, 10), former)


@pytest.mark.parametrize("n", (1000, 200_003))
def test_brier_decomposition_products_by_range(n):
    y, probs = probabilities(n, 2, n)
    binned = notion_outcomes(y, probs, n_bins=15, strategy="uniform")
    p, o, cells = binned.scores, binned.outcomes, binned.cells
    assert np.array_equal(cells.sums_of(lambda a, b: p[a:b] * p[a:b]), cells.sums(p * p))
    assert np.array_equal(cells.sums_of(lambda a, b: o[a:b] * p[a:b]), cells.sums(o * p))
    assert decompose_binned(binned).reliability >= 0.0


def former_cell_counts(p, cells, n_cells, n_resamples, rng):
    order = np.argsort(cells, kind="stable")
    sorted_p = np.asarray(p, dtype=np.float64)[order]
    bounds = np.searchsorted(cells[order], np.arange(n_cells + 1))
    u = rng.random((n_cells, n_resamples))
    out = np.zeros((n_cells, n_resamples), dtype=np.int64)
    for c in range(n_cells):
        if bounds[c + 1] > bounds[c]:
            out[c] = sample(pmf(sorted_p[bounds[c]:bounds[c + 1]]), u[c])
    return out


def test_cell_counts_and_band_rates_equal_the_former_code():
    rng = np.random.default_rng(5)
    scores = rng.beta(0.5, 2.0, 20_000)
    index = uniform_bin_index(scores, 15)
    got = cell_counts(scores, index, 15, 50, np.random.default_rng(1))
    assert np.array_equal(got, former_cell_counts(scores, index, 15, 50,
                                                  np.random.default_rng(1)))
    present, cells, counts = np.unique(index, return_inverse=True, return_counts=True)
    former = former_cell_counts(scores, cells.ravel(), present.size, 40,
                                np.random.default_rng(2)) / counts[:, None].astype(np.float64)
    assert np.array_equal(resampled_bin_rates(scores, index, 40, np.random.default_rng(2)),
                          former)


@pytest.mark.parametrize("n", (800, 150_000))
def test_recalibration_from_row_ranges_equals_the_array_fits(n):
    rng = np.random.default_rng(n)
    p = rng.beta(2.0, 5.0, n)
    p[:3] = [0.0, 1.0, 1e-13]
    y = (rng.random(n) < np.clip(p * 1.1, 0, 1)).astype(np.int64)
    got = logistic_recalibration(y, p)
    logit = special.logit(np.clip(p, 1e-12, 1.0 - 1e-12))
    assert np.array_equal(logit_of(p)[0], logit)
    yy, ones = y.astype(np.float64), np.ones((n, 1))
    large = fit_logistic(ones, logit, yy, np.ones((n, 1)))
    slope = fit_logistic(np.column_stack([ones[:, 0], logit]), np.zeros(n), yy, np.ones((n, 1)))
    assert (got.citl, got.citl_se) == (float(large.coef[0, 0]),
                                       float(np.sqrt(large.cov[0, 0, 0])))
    assert (got.slope, got.slope_se, got.slope_intercept) == (
        float(slope.coef[1, 0]), float(np.sqrt(slope.cov[0, 1, 1])), float(slope.coef[0, 0]))
    assert got.clipped == 3


def test_binary_probabilities_and_labels_as_before():
    scores = np.array([[0.2], [np.nan], [np.inf], [1.0], [0.0], [-0.5]])
    raw = RawInputs(scores, ("p",), (), "probability", "f", pd.Series([0] * 6), "y", "f")
    probs, fixed = to_probabilities(raw, LoadOptions())
    clean = np.where(np.isfinite(scores), scores, 0.0)
    assert fixed == 0 and np.array_equal(probs, np.hstack([1.0 - clean, clean]))
    for values in (pd.Series(np.array([0, 1, 2, -1, 1], dtype=np.int8)),
                   pd.Series(np.array([0, 1, 2**63 - 1, 1], dtype=np.int64)),
                   pd.Series([0.0, 1.0, 0.5, 1.0])):
        classes, codes = binary_classes(values, None, "f", "y")
        as_float = values.to_numpy(dtype=np.float64)
        assert classes == ("0", "1") and codes.dtype == np.int64
        assert np.array_equal(codes, np.where((as_float == 0) | (as_float == 1),
                                              as_float, -1).astype(np.int64))


def test_categorical_codes_from_counts_equal_the_unique_codes():
    values = pd.Series(pd.Categorical.from_codes(
        np.random.default_rng(0).choice([0, 2, 3], 5000), ["b", "a", "z", "c", "a "]))
    cov = encode_covariate("region", values, True)
    names = np.array([str(v) for v in values.cat.categories], dtype=object)
    levels, remap = np.unique(names, return_inverse=True)
    codes = remap.reshape(-1)[values.cat.codes.to_numpy()]
    used = np.unique(codes)
    assert np.array_equal(cov.values, np.searchsorted(used, codes))
    assert cov.categories == tuple(str(v) for v in levels[used])
    assert Cells.of(cov.values).n_cells == 3


@pytest.mark.parametrize("shape", [(0,), (5,), (200_003,), (70_000, 3)])
def test_uniform_bins_by_block_equal_the_whole_array_formula(shape):
    scores = np.random.default_rng(1).random(shape)
    scores.flat[:10] = [0.0, 1.0, 0.2, 0.4, 1 / 3, 0.6, 0.8, 1e-300, 1 - 1e-16, 0.5][:scores.size]
    former = np.clip(np.ceil(scores * 15).astype(np.intp) - 1, 0, 14)
    assert np.array_equal(uniform_bin_index(scores, 15), former)
    assert uniform_bin_index(np.float64(0.5), 15) == 7
