"""ECE, MCE and Brier against slow references and hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calaudit.metrics.brier import brier_score, brier_score_binary
from calaudit.metrics.ece import (
    binned_calibration,
    expected_calibration_error,
    max_calibration_error,
    scores_and_outcomes,
)
from calaudit.numerics.binning import assign_bins, bin_edges, bin_index
from tests import reference


def two_class(p):
    p = np.asarray(p, dtype=float)
    return np.column_stack([1 - p, p])


def test_hand_computed_binary_case():
    # bins of width 0.5: (0, .5] holds .2, .1 (conf .15, acc 0); (.5, 1] holds .7, .6
    # (conf .65, acc .5): ECE = .5 * .15 + .5 * .15 = .15, MCE = .15
    p, y = two_class([0.2, 0.7, 0.6, 0.1]), np.array([0, 1, 0, 0])
    assert expected_calibration_error(y, p, n_bins=2) == pytest.approx(0.15, abs=1e-15)
    assert max_calibration_error(y, p, n_bins=2) == pytest.approx(0.15, abs=1e-15)


def test_hand_computed_unequal_bins():
    # 10 bins: .05 -> bin 0 (acc 0), .95, .95 -> bin 9 (acc 1/2), .55 -> bin 5 (acc 1)
    # ECE = 1/4 * .05 + 2/4 * .45 + 1/4 * .45 = .35; MCE = .45
    p, y = two_class([0.05, 0.95, 0.95, 0.55]), np.array([0, 1, 0, 1])
    assert expected_calibration_error(y, p, n_bins=10) == pytest.approx(0.35, abs=1e-15)
    assert max_calibration_error(y, p, n_bins=10) == pytest.approx(0.45, abs=1e-15)


def test_edges_are_right_closed_and_zero_in_first_bin():
    scores = np.array([0.0, 1.0, 0.2, 0.2 + 1e-12, 0.5, 1 / 15])
    index, _ = bin_index(scores, 15, "uniform")
    assert index.tolist() == [0, 14, 2, 3, 7, 0]  # ceil(15 * s) - 1; 15 * 0.2 == 3.0
    edges = bin_edges(scores, 4, "quantile")
    np.testing.assert_array_equal(assign_bins(edges[1:-1], edges), np.arange(3))


def test_perfectly_calibrated_grid_has_zero_ece():
    p = two_class([0.25] * 4 + [0.75] * 4)
    y = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    assert expected_calibration_error(y, p, n_bins=4) == 0.0


def test_top_label_hand_case():
    p = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
    y = np.array([0, 2, 2])
    # confidences .6 (correct), .5 (wrong), .8 (correct); 5 bins: (.4,.6] holds .6 and .5
    # -> conf .55, acc .5; (.6,.8] holds .8 -> gap .2. ECE = 2/3*.05 + 1/3*.2 = .1
    assert expected_calibration_error(y, p, n_bins=5) == pytest.approx(0.1, abs=1e-15)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(2, 60), m=st.integers(2, 5), n_bins=st.integers(1, 20),
       seed=st.integers(0, 2**32 - 1))
def test_ece_and_mce_match_loop_reference(n, m, n_bins, seed):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(m), n)
    p = np.round(p, 2)  # many ties and values exactly on bin edges
    p[:, -1] = 1 - p[:, :-1].sum(axis=1)
    p = np.clip(p, 0, 1)
    y = rng.integers(0, m, n)
    scores, outcomes = scores_and_outcomes(y, p, "binary" if m == 2 else "top-label")
    if m == 2:
        ref_scores, ref_outcomes = list(p[:, 1]), [float(v == 1) for v in y]
    else:
        ref_scores, ref_outcomes = reference.top_label_loops(y, p)
    np.testing.assert_array_equal(scores, ref_scores)
    np.testing.assert_array_equal(outcomes, ref_outcomes)
    ece_ref, mce_ref = reference.ece_mce_loops(ref_scores, ref_outcomes, n_bins)
    assert expected_calibration_error(y, p, n_bins=n_bins) == pytest.approx(ece_ref, abs=1e-12)
    assert max_calibration_error(y, p, n_bins=n_bins) == pytest.approx(mce_ref, abs=1e-12)


def test_quantile_bins_have_equal_mass():
    rng = np.random.default_rng(3)
    p = rng.uniform(size=1000)
    y = (rng.uniform(size=1000) < p).astype(int)
    bins = binned_calibration(y, two_class(p), n_bins=10, strategy="quantile")
    assert bins.count.tolist() == [100] * 10


def test_reliability_bins_wilson_contains_rate():
    rng = np.random.default_rng(4)
    p = rng.uniform(size=500)
    y = (rng.uniform(size=500) < p).astype(int)
    bins = binned_calibration(y, two_class(p))
    assert np.all(bins.rate_low <= bins.observed_rate)
    assert np.all(bins.observed_rate <= bins.rate_high)
    assert bins.count.sum() == 500


def test_wilson_matches_scipy():
    from scipy import stats

    from calaudit.numerics.intervals import wilson_interval

    for k, n in [(0, 10), (3, 10), (10, 10), (57, 200)]:
        low, high = wilson_interval(k, n)
        ref = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert low == pytest.approx(ref.low, abs=1e-12)
        assert high == pytest.approx(ref.high, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), m=st.integers(2, 6), seed=st.integers(0, 2**32 - 1))
def test_brier_matches_loop_reference(n, m, seed):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(m), n)
    y = rng.integers(0, m, n)
    assert brier_score(y, p) == pytest.approx(reference.brier_loops(y, p), rel=1e-12)


def test_brier_binary_is_half_the_vector_brier_and_matches_hand_case():
    p, y = two_class([0.8, 0.4]), np.array([1, 0])
    assert brier_score_binary(y, p) == pytest.approx((0.2**2 + 0.4**2) / 2)
    assert brier_score(y, p) == pytest.approx(2 * brier_score_binary(y, p))


def test_every_binned_statistic_uses_the_same_bins():
    """ECE, the bootstrap/consistency sums, the diagram bins and the consistency band all
    bin through ``bin_index``: scores a float rounding away from an edge agree."""
    from calaudit.metrics.consistency import consistency_band
    from calaudit.metrics.ece import notion_outcomes

    # 1 - 4/15 = 0.7333333333333334: ceil(15 s) puts it in bin 10, a search of the
    # linspace edges in bin 11
    scores = np.array([1 - 4 / 15, 11 / 15, 0.3, 0.2, 0.0, 1.0] * 5)
    y = np.tile([1, 0, 0, 1, 0, 1], 5)
    p = two_class(scores)
    index, _ = bin_index(scores, 15, "uniform")
    counts = np.bincount(index, minlength=15)
    binned = notion_outcomes(y, p, n_bins=15)
    np.testing.assert_array_equal(binned.sums().count, counts)
    bins = binned_calibration(y, p, n_bins=15)
    np.testing.assert_array_equal(bins.count, counts[counts > 0])
    band = consistency_band(scores, n_bins=15, n_resamples=50, rng=np.random.default_rng(0))
    assert band.low.size == bins.count.size
