"""ECE variants, Brier decomposition and log loss against loop references; weighted
(bootstrap) evaluation against evaluation on the expanded data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calaudit.metrics.binned import ece_from_sums, mce_from_sums
from calaudit.metrics.brier import brier_score, brier_score_binary
from calaudit.metrics.brier_decomposition import brier_decomposition
from calaudit.metrics.ece import expected_calibration_error, max_calibration_error
from calaudit.metrics.ece_variants import (
    CanonicalBins,
    canonical_ece,
    classwise_ece,
    debiased_ece,
    expected_calibration_error_l2,
    notion_outcomes,
)
from calaudit.metrics.log_loss import log_loss
from calaudit.numerics.binning import bin_edges, grid_cell_index
from calaudit.numerics.resampling import bootstrap_counts
from tests import reference_global as ref


def data(n=60, m=4, seed=0):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(m, 0.6), size=n)
    labels = rng.integers(0, m, size=n)
    return probs, labels


def test_grid_index_follows_calibrationerrors_ceil():
    probs = np.array([[0.0, 0.3, 0.7], [0.1, 0.2, 0.7], [1.0, 0.0, 0.0], [0.25, 0.25, 0.5],
                      [1 / 6, 0.0, 5 / 6], [0.1, 0.1, 0.8]])
    index = grid_cell_index(probs, 6)
    keys = [tuple(1 if p == 0 else math.ceil(6 * p) for p in row) for row in probs]
    # rows with equal keys share a cell, different keys do not
    for i in range(6):
        for j in range(6):
            assert (index[i] == index[j]) == (keys[i] == keys[j])
    # 5/6 = 0.8333333333333334 lies above the edge 0.8333333333333333 but ceil(6 p) = 5:
    # the same cell as 0.8 (bin 5), as CalibrationErrors.jl computes it
    assert keys[4] == (1, 1, 5) and index[4] == index[5]


@pytest.mark.parametrize(("m", "k"), [(2, 15), (3, 40), (6, 20)])
def test_grid_cells_are_numbered_in_the_order_of_their_keys(m, k):
    """Cells are numbered 0, 1, ... in the order of their packed keys (the dense table
    for small grids, a sort for large ones): the rank of each row's key among the keys
    used."""
    probs = np.random.default_rng(m).dirichlet(np.full(m, 0.5), size=3000)
    keys = [sum((1 if p == 0 else math.ceil(k * p)) * k ** j for j, p in enumerate(row))
            for row in probs]
    used = sorted(set(keys))
    np.testing.assert_array_equal(grid_cell_index(probs, k), [used.index(v) for v in keys])


@pytest.mark.parametrize("distance", ["tv", "l1", "l2"])
@pytest.mark.parametrize("k", [2, 5, 10])
def test_canonical_ece_matches_loops(distance, k):
    probs, labels = data(seed=k)
    expected = ref.canonical_ece_loops(probs.tolist(), labels.tolist(), k, distance)
    assert canonical_ece(labels, probs, n_bins=k, distance=distance) == pytest.approx(
        expected, rel=1e-12)


def test_canonical_ece_golden_value_and_binary_equivalence():
    p = np.array([[0.0, 1.0], [0.5, 0.5], [0.5, 0.5], [1.0, 0.0]])
    assert canonical_ece(np.array([1, 1, 0, 0]), p, n_bins=10) == 0.0
    rng = np.random.default_rng(3)
    q = rng.random(200)
    y = (rng.random(200) < q ** 1.3).astype(int)
    two = np.column_stack([1 - q, q])
    binary = ref.binned_ece_loops(q.tolist(), y.tolist(), np.linspace(0, 1, 11).tolist())
    assert canonical_ece(y, two, n_bins=10) == pytest.approx(binary, abs=0.02)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_classwise_l2_debiased_match_loops(strategy):
    probs, labels = data(n=80, m=3, seed=4)
    per_class = []
    for k in range(3):
        scores = probs[:, k]
        outcomes = (labels == k).astype(float)
        edges = bin_edges(scores, 6, strategy)
        per_class.append(ref.binned_ece_loops(scores.tolist(), outcomes.tolist(), edges.tolist()))
    assert classwise_ece(labels, probs, n_bins=6, strategy=strategy) == pytest.approx(
        np.mean(per_class), rel=1e-12)
    conf = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(float)
    edges = bin_edges(conf, 6, strategy).tolist()
    l2 = math.sqrt(ref.binned_ece_loops(conf.tolist(), correct.tolist(), edges, power=2))
    assert expected_calibration_error_l2(labels, probs, n_bins=6, strategy=strategy) == \
        pytest.approx(l2, rel=1e-12)
    squared = ref.binned_ece_loops(conf.tolist(), correct.tolist(), edges, power=2, debias=True)
    assert debiased_ece(labels, probs, n_bins=6, strategy=strategy) == pytest.approx(
        math.sqrt(max(squared, 0.0)), rel=1e-12, abs=1e-15)


def test_debiased_squared_error_is_unbiased_on_calibrated_data():
    """Averaged over calibrated data sets the debiased squared error is about 0 while the
    plug-in squared error is about sum_b w_b acc_b (1 - acc_b) / n_b."""
    from calaudit.metrics.binned import debiased_squared_from_sums

    rng = np.random.default_rng(0)
    debiased, plugin = [], []
    for _ in range(40):
        p = rng.random(1500)
        y = (rng.random(1500) < p).astype(int)
        sums = notion_outcomes(y, np.column_stack([1 - p, p])).sums()
        debiased.append(float(debiased_squared_from_sums(sums)))
        plugin.append(float(ece_from_sums(sums, "l2")) ** 2)
    assert abs(np.mean(debiased)) < 0.2 * np.mean(plugin)


def test_brier_decomposition_identity_and_loops():
    probs, labels = data(n=90, m=3, seed=6)
    parts = brier_decomposition(labels, probs, n_bins=5)
    assert parts.brier == pytest.approx(brier_score(labels, probs), rel=1e-12)
    p = probs[:, 0]
    o = (labels == 0).astype(float)
    edges = np.linspace(0, 1, 6)
    idx = np.searchsorted(edges[1:-1], p, side="left")
    rel_ = sum((idx == b).sum() * (p[idx == b].mean() - o[idx == b].mean()) ** 2
               for b in set(idx)) / 90
    single = brier_decomposition((labels == 0).astype(int),
                                 np.column_stack([1 - p, p]), n_bins=5)
    assert single.reliability == pytest.approx(rel_, rel=1e-12)
    assert single.uncertainty == pytest.approx(o.mean() * (1 - o.mean()), rel=1e-12)
    assert single.brier == pytest.approx(brier_score_binary(
        (labels == 0).astype(int), np.column_stack([1 - p, p])), rel=1e-12)


def test_log_loss():
    probs = np.array([[0.2, 0.8], [0.6, 0.4], [1.0, 0.0]])
    labels = np.array([1, 0, 1])
    expected = -(math.log(0.8) + math.log(0.6) + math.log(np.finfo(float).eps)) / 3
    assert log_loss(labels, probs) == pytest.approx(expected, rel=1e-12)


def test_weighted_statistics_equal_statistics_of_expanded_data():
    """A bootstrap replicate (weights = counts) equals the statistic of the resample."""
    probs, labels = data(n=50, m=3, seed=8)
    counts = bootstrap_counts(np.random.default_rng(2), 50, 4)
    for b in range(4):
        rows = np.repeat(np.arange(50), counts[:, b].astype(int))
        w = counts[:, b:b + 1]
        sub_p, sub_y = probs[rows], labels[rows]
        assert canonical_ece(labels, probs, n_bins=4, weights=w)[0] == pytest.approx(
            canonical_ece(sub_y, sub_p, n_bins=4), rel=1e-12)
        assert classwise_ece(labels, probs, n_bins=5, weights=w)[0] == pytest.approx(
            classwise_ece(sub_y, sub_p, n_bins=5), rel=1e-12)
        assert debiased_ece(labels, probs, n_bins=5, weights=w)[0] == pytest.approx(
            debiased_ece(sub_y, sub_p, n_bins=5), rel=1e-12, abs=1e-15)
        assert log_loss(labels, probs, weights=w)[0] == pytest.approx(
            log_loss(sub_y, sub_p), rel=1e-12)
        decomposition = brier_decomposition(labels, probs, n_bins=5, weights=w)
        assert decomposition.reliability[0] == pytest.approx(
            brier_decomposition(sub_y, sub_p, n_bins=5).reliability, rel=1e-12)
        sums = notion_outcomes(labels, probs, n_bins=5).sums(w)
        assert ece_from_sums(sums)[0] == pytest.approx(
            expected_calibration_error(sub_y, sub_p, n_bins=5), rel=1e-12)
        assert mce_from_sums(sums)[0] == pytest.approx(
            max_calibration_error(sub_y, sub_p, n_bins=5), rel=1e-12)


def test_canonical_relabelled_ece_equals_direct():
    probs, labels = data(n=40, m=3, seed=9)
    bins = CanonicalBins.build(labels, probs, 3)
    other = np.random.default_rng(0).integers(0, 3, size=(40, 2))
    values = bins.ece_for_labels(other)
    for b in range(2):
        assert values[b] == pytest.approx(canonical_ece(other[:, b], probs, n_bins=3),
                                          rel=1e-12)
