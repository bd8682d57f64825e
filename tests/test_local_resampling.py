"""The local tests: nulls equal the formulas applied to the same draws, p-value rules,
batching, samplers."""

from __future__ import annotations

import numpy as np
import pytest

from calaudit.local import resampling as rs
from calaudit.local.kernel import product_gram
from calaudit.local.klce import klce2
from calaudit.numerics.resampling import monte_carlo_pvalue
from tests.reference_local import algorithm1_null, product_kernel_matrix


def case(n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    p = 1 / (1 + np.exp(-x[:, 0]))
    y = (rng.random(n) < p).astype(float)
    return x, p, y


def u_stat(kernel, z):
    """sum_{i != j} z_i K_ij z_j / (n (n - 1)) with a dense kernel matrix."""
    n = kernel.shape[0]
    off = kernel - np.diag(np.diag(kernel))
    return float(z @ off @ z) / (n * (n - 1))


def test_consistency_null_is_the_statistic_of_labels_drawn_from_the_predictions():
    x, p, y = case()
    gram = product_gram(p, 10.0, x, 0.5)
    res = rs.consistency_test(gram, y - p, p, np.random.default_rng(11), 30)
    draws = np.empty((40, 30))
    rs.label_sampler(p)(np.random.default_rng(11), draws)
    kernel = product_kernel_matrix(p, x, 10.0, 0.5)
    expected = [u_stat(kernel, draws[:, b]) for b in range(30)]
    assert np.allclose(res.null_distribution, expected, rtol=1e-12)
    assert res.statistic == pytest.approx(klce2(gram, y - p), rel=1e-12)
    k = np.count_nonzero(res.null_distribution >= res.statistic)
    assert res.p_value == (1 + k) / 31
    # every drawn column is y* - p with y* in {0, 1}
    assert np.allclose(np.round(draws + p[:, None]), draws + p[:, None])


def test_bootstrap_null_is_algorithm_1_with_the_same_indices():
    x, p, y = case(30, 4)
    gram = product_gram(p, 10.0, x, 0.5)
    res = rs.bootstrap_test(gram, y - p, np.random.default_rng(2), 12)
    indices = np.random.default_rng(2).integers(0, 30, size=(30, 12)).T
    kernel = product_kernel_matrix(p, x, 10.0, 0.5)
    expected = algorithm1_null(kernel, y - p, indices)
    assert np.allclose(res.null_distribution, expected, rtol=1e-12)
    paper = np.count_nonzero(expected > res.statistic) / 12
    assert res.extra["p_value_paper"] == pytest.approx(paper)
    assert res.p_value == (1 + np.count_nonzero(expected >= res.statistic)) / 13


def test_permutation_null_is_centred_and_uses_kites_p_value():
    x, p, y = case(30, 5)
    gram = product_gram(p, 100.0, x, 1.0)
    e = y - p
    res = rs.permutation_test(gram, e, np.random.default_rng(3), 25)
    order = np.random.default_rng(3).permuted(
        np.broadcast_to(np.arange(30)[:, None], (30, 25)), axis=0)
    kernel = product_kernel_matrix(p, x, 100.0, 1.0)
    off = kernel - np.diag(np.diag(kernel))
    s_obs = float(e @ off @ e)
    s_null = np.array([e[order[:, b]] @ off @ e[order[:, b]] for b in range(25)])
    centred = s_null - s_null.mean()
    normaliser = 29 / 30 * kernel.sum()
    assert res.statistic == pytest.approx(s_obs / normaliser, rel=1e-12)
    assert np.allclose(res.null_distribution, centred / normaliser, rtol=1e-10, atol=1e-15)
    assert res.p_value == max(1 / 25, np.count_nonzero(centred > s_obs) / 25)
    raw = rs.permutation_test(gram, e, np.random.default_rng(3), 25, centred=False)
    assert np.allclose(raw.null_distribution, s_null / normaliser, rtol=1e-12)


def test_p_value_is_never_zero():
    assert monte_carlo_pvalue(10.0, np.zeros(99)) == 0.01
    assert monte_carlo_pvalue(-1.0, np.zeros(9)) == 1.0


def test_batches_give_the_same_forms_as_one_pass():
    x, p, y = case(25, 6)
    gram = product_gram(p, 5.0, x, 0.5)
    columns = np.random.default_rng(0).normal(size=(25, 17))
    state = {"next": 0}

    def sampler(rng, out):
        start = state["next"]
        state["next"] += out.shape[1]
        out[:] = columns[:, start:start + out.shape[1]]

    lead = (y - p)[:, None]
    lead_forms, forms = rs.batched_forms(gram, sampler, 17, None, lead, max_entries=25 * 4)
    kernel = product_kernel_matrix(p, x, 5.0, 0.5)
    off = kernel - np.diag(np.diag(kernel))
    assert lead_forms[0] == pytest.approx(float(lead[:, 0] @ off @ lead[:, 0]), rel=1e-12)
    expected = [columns[:, b] @ off @ columns[:, b] for b in range(17)]
    assert np.allclose(forms, expected, rtol=1e-12)


def test_multiclass_label_sampler_draws_from_the_predictions():
    proba = np.array([[0.2, 0.5, 0.3], [0.9, 0.05, 0.05]])
    z = np.empty((2, 3, 20000))
    rs.label_sampler(proba)(np.random.default_rng(0), z)
    assert z.shape == (2, 3, 20000)
    onehot = z + proba[:, :, None]
    assert np.allclose(onehot.sum(axis=1), 1.0) and set(np.unique(onehot)) <= {0.0, 1.0}
    freq = onehot.mean(axis=2)
    assert np.allclose(freq, proba, atol=0.015)


def test_multiclass_tests_run_on_vector_residuals():
    rng = np.random.default_rng(9)
    proba = rng.dirichlet(np.ones(3), size=30)
    y = np.array([rng.choice(3, p=row) for row in proba])
    r = -proba.copy()
    r[np.arange(30), y] += 1
    x = rng.normal(size=(30, 1))
    gram = product_gram(proba, 3.0, x, 0.5)
    res = rs.consistency_test(gram, r, proba, np.random.default_rng(1), 10)
    assert res.statistic == pytest.approx(klce2(gram, r), rel=1e-12)
    boot = rs.bootstrap_test(gram, r, np.random.default_rng(1), 10)
    perm = rs.permutation_test(gram, r, np.random.default_rng(1), 10)
    assert boot.null_distribution.shape == perm.null_distribution.shape == (10,)
    # bootstrap resamples whole residual rows
    idx = np.random.default_rng(1).integers(0, 30, size=(30, 10))
    kernel = product_kernel_matrix(list(proba), x, 3.0, 0.5)
    off = kernel - np.diag(np.diag(kernel))
    rb = r[idx[:, 0]]
    assert boot.null_distribution[0] == pytest.approx(
        float(np.einsum("ik,ij,jk->", rb, off, rb)) / (30 * 29), rel=1e-12)


def test_label_draws_in_row_chunks_equal_one_draw(monkeypatch):
    monkeypatch.setattr(rs, "DRAW_ENTRIES", 64)
    p = np.random.default_rng(0).random(50)
    out = np.empty((50, 16))
    rs.label_sampler(p)(np.random.default_rng(3), out)
    u = np.random.default_rng(3).random((50, 16))
    assert np.array_equal(out, (u < p[:, None]) - p[:, None])


def test_single_precision_null_matches_double_precision():
    x, p, y = case(400, 12)
    gram = product_gram(p, 30.0, x, 0.5)
    r = y - p
    double = rs.consistency_test(gram, r, p, np.random.default_rng(4), 99)
    single = rs.consistency_test(gram, r, p, np.random.default_rng(4), 99,
                                 statistic=double.statistic, dtype=np.float32)
    assert single.statistic == double.statistic
    spread = double.null_distribution.std()
    assert np.max(np.abs(single.null_distribution - double.null_distribution)) < 1e-5 * spread
    assert single.p_value == double.p_value
    boot = rs.bootstrap_test(gram, r, np.random.default_rng(4), 30,
                             statistic=double.statistic, dtype=np.float32)
    boot64 = rs.bootstrap_test(gram, r, np.random.default_rng(4), 30)
    assert np.allclose(boot.null_distribution, boot64.null_distribution, rtol=0,
                       atol=1e-5 * boot64.null_distribution.std())
    # without the observed statistic it is computed in double precision (its own pass or
    # the lead column of a double-precision pass), and the p-value is the float64 one
    unknown = rs.consistency_test(gram, r, p, np.random.default_rng(4), 99, dtype=np.float32)
    assert unknown.statistic == pytest.approx(double.statistic, rel=1e-12)
    assert unknown.p_value == double.p_value
