"""The KLCE^2 statistic against eq. 4 by loops, KiTE's ELCE2 reference values, the product
kernel and the Hoeffding region."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calaudit.local.kernel import product_gram
from calaudit.local.klce import (
    hoeffding_region,
    kite_normaliser,
    klce2,
    klce2_sum,
    prediction_features,
    residual_bound,
    residuals,
)
from calaudit.local.resampling import permutation_test
from calaudit.numerics.kernels import ProductGram, gaussian
from tests.reference_local import (
    hoeffding_thresholds,
    kite_elce2_loops,
    klce2_loops,
    product_kernel_matrix,
)

DATA = Path(__file__).parent / "data"


def binary_case(n=60, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    p = 1 / (1 + np.exp(-x.sum(1)))
    y = (rng.random(n) < np.clip(p + 0.2 * np.sign(x[:, 1]), 0, 1)).astype(int)
    return x, p, y


def test_binary_statistic_matches_equation_4_by_loops():
    x, p, y = binary_case()
    gram = product_gram(p, 30.0, x, 0.7)
    assert klce2(gram, y - p) == pytest.approx(klce2_loops(p, y - p, x, 30.0, 0.7), rel=1e-12)


def test_multiclass_statistic_matches_vector_residual_loops():
    rng = np.random.default_rng(5)
    n, m = 40, 3
    proba = rng.dirichlet(np.ones(m), size=n)
    y = rng.integers(0, m, n)
    x = rng.normal(size=(n, 1))
    r = residuals(y, proba)
    assert r.shape == (n, m)
    gram = product_gram(prediction_features(proba), 4.0, x, 0.5)
    expected = klce2_loops(list(proba), list(r), x, 4.0, 0.5)
    assert klce2(gram, r) == pytest.approx(expected, rel=1e-12)


def test_binary_scalar_form_is_half_the_two_class_vector_form():
    x, p, y = binary_case(50, 2)
    proba = np.column_stack([1 - p, p])
    scalar = klce2(product_gram(p, 20.0, x, 1.0), residuals(y, proba))
    vector_r = np.column_stack([(y == 0) - (1 - p), (y == 1) - p])
    # |(1-p, p) - (1-q, q)|^2 = 2 (p - q)^2: gamma / 2 on the vector gives the same kernel
    vector = klce2(product_gram(proba, 10.0, x, 1.0), vector_r)
    assert vector == pytest.approx(2 * scalar, rel=1e-12)


def test_fused_gram_equals_product_of_gaussian_grams():
    x, p, _ = binary_case(30)
    fused = product_gram(p, 25.0, x, 0.4)
    product = ProductGram((gaussian(25.0).on(p), gaussian(0.4).on(x)))
    loops = product_kernel_matrix(p, x, 25.0, 0.4)
    full = fused.block(slice(0, 30), slice(0, 30))
    assert np.allclose(full, product.block(slice(0, 30), slice(0, 30)), rtol=1e-13, atol=0)
    assert np.allclose(full, loops, rtol=1e-13, atol=0)
    assert np.array_equal(fused.diagonal(), np.ones(30))


def kite_cases():
    spec = json.loads((DATA / "kite_elce2_cases.json").read_text())
    return spec["cases"]


@pytest.mark.parametrize("case", kite_cases(), ids=lambda c: c["file"])
def test_kite_statistic_reproduces_reference_values(case):
    frame = pd.read_csv(DATA / case["file"])
    x = frame[case["covariates"]].to_numpy(float)
    p, y = frame["prob"].to_numpy(float), frame["label"].to_numpy(int)
    gram = product_gram(p, 1 / case["prob_kernel_width"] ** 2, x, case["covariate_gamma"])
    n = len(p)
    s = klce2_sum(gram, y - p)
    kernel_sum = klce2_sum(gram, np.ones(n)) + n
    value = s / kite_normaliser(kernel_sum, n)
    assert value == pytest.approx(case["elce2_statistic"], rel=1e-12)
    # the permutation test reports the same statistic
    res = permutation_test(gram, y - p, np.random.default_rng(0), 20)
    assert res.statistic == pytest.approx(case["elce2_statistic"], rel=1e-12)


def test_kite_statistic_matches_loop_formula():
    frame = pd.read_csv(DATA / "kite_case1.csv").iloc[:80]
    x, p, y = frame[["x0"]].to_numpy(float), frame["prob"].to_numpy(), frame["label"].to_numpy()
    gram = product_gram(p, 100.0, x, 1.0)
    res = permutation_test(gram, y - p, np.random.default_rng(0), 10)
    assert res.statistic == pytest.approx(kite_elce2_loops(x, y, p, 0.1, 1.0), rel=1e-12)


def test_hoeffding_region_formulas():
    paper, pairs = hoeffding_thresholds(1001, 0.05, 1.0)
    region = hoeffding_region(0.01, 1001, 0.05, 1.0)
    assert region["threshold_paper"] == pytest.approx(paper, rel=1e-14)
    assert region["threshold"] == pytest.approx(pairs, rel=1e-14)
    assert region["threshold"] > region["threshold_paper"]
    assert region["p_value"] == pytest.approx(math.exp(-500 * 0.01 ** 2 / 2))
    assert not region["reject"]
    assert hoeffding_region(1.0, 1001, 0.05, 1.0)["reject"]
    assert hoeffding_region(-0.1, 10, 0.05, 2.0)["p_value"] == 1.0
    assert residual_bound(2) == 1.0 and residual_bound(5) == 2.0
