"""Covariate encoding and the median-heuristic bandwidths."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calaudit.data.dataset import Covariate
from calaudit.local.bandwidth import GaussianBandwidth, choose_bandwidth, median_squared_distance
from calaudit.local.encoding import ONE_HOT_SCALE, encode_covariates
from tests.reference_local import median_heuristic_loops


def covariates(n=50, seed=0):
    rng = np.random.default_rng(seed)
    age = Covariate("age", "numeric", rng.normal(40, 10, n))
    race = Covariate("race", "categorical", rng.integers(0, 3, n), ("A", "B", "C"))
    return age, race


def test_numeric_is_z_scored_and_categories_are_at_distance_one():
    age, race = covariates()
    enc = encode_covariates([age, race])
    assert enc.columns == ("age", "race=A", "race=B", "race=C")
    z = enc.features[:, 0]
    assert z.mean() == pytest.approx(0, abs=1e-12) and z.std() == pytest.approx(1)
    onehot = enc.features[:, 1:]
    d2 = ((onehot[:, None, :] - onehot[None, :, :]) ** 2).sum(-1)
    same = race.values[:, None] == race.values[None, :]
    assert np.allclose(d2[same], 0) and np.allclose(d2[~same], 1.0)
    assert enc.blocks == (slice(0, 1), slice(1, 4))
    assert enc.encoding["race"]["scale"] == pytest.approx(1 / math.sqrt(2))
    assert enc.encoding["age"]["sd"] == pytest.approx(age.values.std())


def test_raw_mode_keeps_numeric_values_and_constant_column_becomes_zero():
    age, race = covariates()
    enc = encode_covariates([age, race], standardize=False)
    assert np.array_equal(enc.features[:, 0], age.values)
    const = Covariate("c", "numeric", np.full(10, 3.0))
    assert np.array_equal(encode_covariates([const]).features[:, 0], np.zeros(10))


def test_binary_category_equals_raw_zero_one_coding_in_distance():
    codes = np.array([0, 1, 1, 0, 1])
    enc = encode_covariates([Covariate("b", "categorical", codes, ("0", "1"))])
    d2 = ((enc.features[:, None] - enc.features[None]) ** 2).sum(-1)
    raw = (codes[:, None] - codes[None, :]) ** 2
    assert np.allclose(d2, raw)
    assert ONE_HOT_SCALE ** 2 * 2 == pytest.approx(1.0)


def test_median_heuristic_matches_pairwise_loops_and_ignores_ties():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 2))
    x[5] = x[6]  # a tie: distance zero is left out
    median, rows = median_squared_distance(x, None, max_rows=100)
    assert rows == 40
    assert median == pytest.approx(median_heuristic_loops(x), rel=1e-14)
    bw = choose_bandwidth(x, None, None, max_rows=100)
    assert bw.bandwidth == pytest.approx(math.sqrt(median)) and bw.source == "median"
    assert bw.gamma == pytest.approx(1 / (2 * median))


def test_per_covariate_median_is_the_median_of_block_medians():
    age, race = covariates(60)
    enc = encode_covariates([age, race, Covariate("w", "numeric", np.arange(60.0))])
    blocks = enc.blocks
    expected = np.median([median_heuristic_loops(enc.features[:, b]) for b in blocks])
    got, _ = median_squared_distance(enc.features, None, 1000, blocks)
    assert got == pytest.approx(expected, rel=1e-14)
    assert choose_bandwidth(enc.features, None, None, 1000, blocks).source == \
        "median per covariate"


def test_large_data_use_a_seeded_subsample():
    x = np.random.default_rng(1).normal(size=(500, 1))
    a = choose_bandwidth(x, None, np.random.default_rng(7), max_rows=100)
    b = choose_bandwidth(x, None, np.random.default_rng(7), max_rows=100)
    assert a == b and a.rows_used == 100
    full = choose_bandwidth(x, None, None, max_rows=1000).bandwidth
    assert a.bandwidth == pytest.approx(full, rel=0.2)
    with pytest.raises(ValueError):
        choose_bandwidth(x, None, None, max_rows=100)


def test_explicit_bandwidth_and_degenerate_data():
    assert choose_bandwidth(np.zeros(5), 0.3, None) == GaussianBandwidth(0.3, "option")
    bw = choose_bandwidth(np.zeros(5), None, None)
    assert bw.bandwidth == 1.0 and bw.source == "default"
    assert GaussianBandwidth.from_gamma(100.0, "kite").gamma == pytest.approx(100.0)
    assert GaussianBandwidth(0.5, "option").to_dict()["gamma"] == pytest.approx(2.0)
