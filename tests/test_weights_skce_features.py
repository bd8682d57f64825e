"""The weighted SKCE on random features: against a double loop over rows with the
feature kernel, frequency weights against the repeated rows, convergence to the exact
weighted statistic, and the path in a whole audit."""

from __future__ import annotations

import numpy as np
import pytest

import calaudit
from calaudit import CalibrationData
from calaudit.data.weights import SampleWeights
from calaudit.inference.weighted_skce_features import (
    block_sums,
    feature_map,
    feature_values,
    residual_bound,
    statistics,
)
from calaudit.inference.weighted_skce_test import weighted_skce_values
from calaudit.metrics.skce import KernelChoice

CHOICE = KernelChoice("exponential", 0.3, "option")


def case(kind: str, n: int = 50, m: int = 2, seed: int = 3):
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.ones(m), n)
    y = np.array([rng.choice(m, p=row) for row in proba], dtype=np.int64)
    if kind == "design":
        weights = SampleWeights(rng.uniform(0.2, 3.0, n), "design")
    elif kind == "frequency":
        weights = SampleWeights(rng.integers(0, 4, n).astype(float), "frequency")
    elif kind == "sampled_frequency":
        weights = SampleWeights(rng.integers(1, 4, n).astype(float), "frequency",
                                negative_rate=np.full(n, 0.25))
    else:
        weights = SampleWeights(np.ones(n), "design", negative_rate=rng.uniform(0.1, 1, n))
    return y, proba, weights


def loop_reference(phi, y, proba, weights):
    """SKCE_b and SKCE_uq by a double loop over rows with k_ij = phi_i . phi_j: a row of
    t units of weight a each (frequency: t = d, a = 1 or 1 / r; otherwise one unit)."""
    n, m = proba.shape
    w = weights.of_labels(y == 1) if weights.label_dependent else weights.design.copy()
    units = weights.design if weights.kind == "frequency" else np.ones(n)
    unit_weight = (np.divide(w, units, out=np.zeros(n), where=units > 0)
                   if weights.kind == "frequency" else w)
    total = full = own = squares = 0.0
    for i in range(n):
        r_i = np.eye(m)[y[i]] - proba[i]
        total += w[i]
        squares += units[i] * unit_weight[i] ** 2
        own += units[i] * unit_weight[i] ** 2 * float(phi[i] @ phi[i]) * float(r_i @ r_i)
        for j in range(n):
            r_j = np.eye(m)[y[j]] - proba[j]
            full += w[i] * w[j] * float(phi[i] @ phi[j]) * float(r_i @ r_j)
    return full / total ** 2, (full - own) / (total ** 2 - squares)


@pytest.mark.parametrize("kind, m", [("design", 2), ("frequency", 2), ("negative_rate", 2),
                                     ("sampled_frequency", 2), ("design", 3),
                                     ("frequency", 4)])
def test_the_feature_statistic_is_the_double_loop_of_the_feature_kernel(kind, m) -> None:
    y, proba, weights = case(kind, m=m)
    features, x = feature_map(CHOICE, proba, 64, 5)
    biased, unbiased = feature_values(features, x, y, proba, weights)
    phi = features.quantised(x).astype(np.float64)
    want = loop_reference(phi, y, proba, weights)
    assert abs(biased[0] - want[0]) < 1e-10 and abs(unbiased[0] - want[1]) < 1e-10
    assert abs(unbiased[0]) > 1e-6


def test_frequency_weights_are_the_repeated_rows_statistic_and_redraws() -> None:
    """The statistic equals the repeated rows' (unit weights) with the same features;
    given the same per-unit redrawn labels (summed per row into the Binomial counts the
    weighted test draws), every redrawn statistic is equal too, so the null laws and the
    p-values' laws agree (the p-values themselves differ: the weighted test draws counts,
    the repeated rows draw labels)."""
    y, proba, weights = case("frequency", n=40)
    keep = weights.design > 0
    units = weights.design.astype(np.int64)
    rows = np.repeat(np.arange(y.size), units)
    features, x = feature_map(CHOICE, proba, 128, 9)
    ones = SampleWeights(np.ones(rows.size), "frequency")
    assert np.allclose(feature_values(features, x, y, proba, weights),
                       feature_values(features, x[rows], y[rows], proba[rows], ones),
                       rtol=0, atol=1e-12)
    rng = np.random.default_rng(4)
    q = 30
    labels = (rng.random((rows.size, q)) < proba[rows, 1:2]).astype(np.int64)
    repeated = np.zeros((rows.size, 2, q))
    repeated[np.arange(rows.size)[:, None], labels, np.arange(q)[None, :]] = 1.0
    counts = np.zeros((y.size, 2, q))
    np.add.at(counts, rows, repeated)
    phi = features.quantised(x).astype(np.float64)
    bound = residual_bound(weights, 2)
    mine = statistics(block_sums(phi[keep], proba[keep], counts[keep],
                                 SampleWeights(weights.design[keep], "frequency"), bound), True)
    theirs = statistics(block_sums(phi[rows], proba[rows], repeated, ones, bound), True)
    assert np.allclose(mine, theirs, rtol=0, atol=1e-12) and np.ptp(mine[1]) > 0


def test_the_feature_statistic_approaches_the_exact_weighted_one() -> None:
    y, proba, weights = case("design", n=300, seed=8)
    exact = weighted_skce_values(CHOICE.kernel.on(proba), y, proba, weights)
    errors = []
    for d in (64, 1024, 16384):
        values = [feature_values(*feature_map(CHOICE, proba, d, seed), y, proba, weights)
                  for seed in range(3)]
        errors.append(np.mean([abs(v[1][0] - exact[1]) for v in values]))
    assert errors[2] < errors[1] < errors[0], errors
    assert errors[2] < 0.1 * abs(exact[1]), (errors, exact)


def test_a_weighted_audit_above_the_exact_rows_runs_the_feature_path() -> None:
    from calaudit.audit.sections.global_tests import SkceConfig
    from calaudit.metrics.weighted_skce import MAX_MEDIAN_ROWS

    rng = np.random.default_rng(13)
    n = MAX_MEDIAN_ROWS + 10
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.random(n) < p).astype(np.int64)
    data = CalibrationData.from_arrays(y, p, sample_weight=rng.integers(1, 3, n))
    config = calaudit.AuditConfig(n_resamples=49, n_features=128,
                                  skce=SkceConfig(bandwidth=None))
    result = calaudit.run_audit(data, config).to_dict()
    metrics = {m["id"]: m for m in result["metrics"]}
    tests = {t["id"]: t for t in result["tests"]}
    params = metrics["skce_uq"]["params"]
    assert params["computation"]["method"] == "features"
    assert params["bandwidth_source"].endswith("_subsample")
    assert tests["skce_consistency"]["status"] in ("PASS", "FAIL")
    assert tests["skce_consistency"]["statistic"] == metrics["skce_uq"]["value"]
    assert tests["skce_uq_asymptotic"]["status"] == "SKIPPED"
    assert {item["id"] for item in result["data"]["weights"]["not_weighted"]} == {
        "skce_ul, skce_block"}
    assert params["computation"]["n_features"] == 128
