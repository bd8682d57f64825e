"""Weighted estimates: frequency weights agree with row duplication, and every weighted
estimate agrees with an independent weighted reference (scikit-learn, statsmodels, a
weighted loop over bins written from the definition)."""

from __future__ import annotations

import numpy as np
import pytest

import calaudit
from calaudit import CalibrationData
from calaudit.audit.weighting import WEIGHTED_TESTS

#: Estimates a weighted audit leaves out (data.weights.not_weighted).
KERNEL_METRICS = {"skce_ul", "skce_block"}


def binary_case(n: int = 600, seed: int = 11):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.03, 0.97, n)
    y = (rng.random(n) < np.clip(p + 0.08 * np.sin(6 * p), 0, 1)).astype(np.int64)
    w = rng.integers(0, 5, n)
    return y, p, w


def multiclass_case(n: int = 500, m: int = 3, seed: int = 5):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(m, 1.5), n)
    y = np.array([rng.choice(m, p=row) for row in probs])
    return y, probs, rng.integers(0, 4, n)


def audit(y, p, *, resamples: int = 99, **weights) -> dict:
    data = CalibrationData.from_arrays(y, p, **weights)
    config = calaudit.AuditConfig(n_resamples=resamples, random_state=4)
    return calaudit.run_audit(data, config).to_dict()


def close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return bool(np.allclose(np.asarray(a, float), np.asarray(b, float), rtol=1e-12,
                            atol=1e-12, equal_nan=True))


@pytest.mark.parametrize("case", [binary_case, multiclass_case])
def test_integer_weights_equal_row_duplication(case) -> None:
    y, p, w = case()
    weighted = audit(y, p, sample_weight=w)
    repeat = np.repeat(np.arange(y.size), w)
    duplicated = audit(y[repeat], p[repeat])
    dup_metrics = {m["id"]: m for m in duplicated["metrics"]}
    ids = {m["id"] for m in weighted["metrics"]}
    assert ids == set(dup_metrics) - KERNEL_METRICS
    for metric in weighted["metrics"]:
        other = dup_metrics[metric["id"]]
        assert close(metric["value"], other["value"]), (metric["id"], metric["value"],
                                                        other["value"])
        assert close(metric["ci"], other["ci"]), metric["id"]  # Wald intervals (no bootstrap)
    dup_tests = {t["id"]: t for t in duplicated["tests"]}
    ran = [t for t in weighted["tests"] if t["status"] != "SKIPPED"]
    assert {t["id"] for t in ran} == set(WEIGHTED_TESTS) & set(dup_tests)
    for test in ran:
        other = dup_tests[test["id"]]
        assert close(test["statistic"], other["statistic"]), test["id"]
        # deterministic tests, and the ECE consistency test: frequency weights redraw
        # every unit, from the very draws of the repeated rows (the SKCE redraws differ)
        if test["id"] != "skce_consistency":
            assert close(test["p_value"], other["p_value"]), test["id"]
    panel, other_panel = (weighted["diagrams"]["reliability"],
                          duplicated["diagrams"]["reliability"])
    for key, values in other_panel["bins"].items():  # the diagram and its histogram (the
        assert close(panel["bins"][key], values), key  # band is Monte-Carlo)
    assert close(panel["histogram"]["counts"], other_panel["histogram"]["counts"])
    band = panel["consistency_band"]
    assert len(band["low"]) == len(panel["bins"]["count"])
    assert all(lo <= hi for lo, hi in zip(band["low"], band["high"]))
    rule, other_rule = weighted["gate"]["data_rule"], duplicated["gate"]["data_rule"]
    assert close(rule["events"], other_rule["events"]) and close(rule["n"], other_rule["n"])


def test_unit_weights_change_nothing() -> None:
    y, p, _ = binary_case(300)
    weighted = audit(y, p, sample_weight=np.ones(y.size))
    plain = audit(y, p)
    plain_metrics = {m["id"]: m["value"] for m in plain["metrics"]}
    for metric in weighted["metrics"]:
        assert close(metric["value"], plain_metrics[metric["id"]]), metric["id"]


def test_brier_and_log_loss_match_scikit_learn() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    y, p, _ = binary_case()
    w = np.random.default_rng(2).uniform(0.1, 5.0, y.size)
    values = {m["id"]: m["value"] for m in audit(y, p, sample_weight=w,
                                                 weight_kind="design")["metrics"]}
    assert values["brier_binary"] == pytest.approx(
        metrics.brier_score_loss(y, p, sample_weight=w), rel=1e-12)
    assert values["log_loss"] == pytest.approx(
        metrics.log_loss(y, p, sample_weight=w), rel=1e-12)
    y3, probs, w3 = multiclass_case()
    values = {m["id"]: m["value"] for m in audit(y3, probs, sample_weight=w3 * 0.37,
                                                 weight_kind="design")["metrics"]}
    assert values["log_loss"] == pytest.approx(
        metrics.log_loss(y3, probs, sample_weight=w3 * 0.37), rel=1e-12)


def glm_fits(y, p, weights, key):
    sm = pytest.importorskip("statsmodels.api")
    logit = np.log(p / (1 - p))
    family = sm.families.Binomial()
    citl = sm.GLM(y, np.ones((y.size, 1)), family=family, offset=logit,
                  **{key: weights}).fit(tol=1e-14)
    slope = sm.GLM(y, sm.add_constant(logit), family=family, **{key: weights}).fit(tol=1e-14)
    return citl, slope


def test_recalibration_matches_statsmodels_freq_weights() -> None:
    y, p, _ = binary_case()
    w = np.random.default_rng(3).integers(1, 9, y.size).astype(float)
    result = {m["id"]: m for m in audit(y, p, sample_weight=w)["metrics"]}
    citl, slope = glm_fits(y, p, w, "freq_weights")
    large, ratio = result["calibration_in_the_large"], result["calibration_slope"]
    assert large["value"] == pytest.approx(citl.params[0], abs=1e-9)
    assert large["params"]["se"] == pytest.approx(citl.bse[0], rel=1e-7)
    assert ratio["value"] == pytest.approx(slope.params[1], abs=1e-9)
    assert ratio["params"]["se"] == pytest.approx(slope.bse[1], rel=1e-7)
    assert ratio["params"]["intercept"] == pytest.approx(slope.params[0], abs=1e-9)


def test_design_weights_use_the_effective_sample_size_as_statsmodels_var_weights() -> None:
    y, p, _ = binary_case()
    w = np.random.default_rng(4).uniform(0.2, 40.0, y.size)
    result = {m["id"]: m for m in audit(y, p, sample_weight=w,
                                        weight_kind="design")["metrics"]}
    kish = w.sum() ** 2 / (w ** 2).sum()
    citl, slope = glm_fits(y, p, w * kish / w.sum(), "var_weights")
    assert result["calibration_in_the_large"]["value"] == pytest.approx(citl.params[0],
                                                                         abs=1e-9)
    assert result["calibration_in_the_large"]["params"]["se"] == pytest.approx(citl.bse[0],
                                                                                rel=1e-7)
    assert result["calibration_slope"]["value"] == pytest.approx(slope.params[1], abs=1e-9)
    assert result["calibration_slope"]["params"]["se"] == pytest.approx(slope.bse[1],
                                                                         rel=1e-7)
    assert "ece_debiased" not in result  # its bias term needs frequency weights


def loop_ece(y, p, w, n_bins: int = 15):
    """Weighted binned ECE and MCE from the definition: bin ``b`` holds the scores in
    ``((b-1)/B, b/B]`` (0 in the first), ``W_b = sum w``, ``conf_b`` and ``acc_b`` the
    weighted means of the score and the outcome; ``ECE = sum_b W_b / W |acc_b - conf_b|``,
    ``MCE`` the largest gap over bins with weight."""
    total, ece, mce = 0.0, 0.0, 0.0
    for i in range(len(y)):
        total += w[i]
    for b in range(n_bins):
        low, high = b / n_bins, (b + 1) / n_bins
        weight = score = event = 0.0
        for i in range(len(y)):
            inside = (low < p[i] <= high) or (b == 0 and p[i] == 0.0)
            if inside:
                weight += w[i]
                score += w[i] * p[i]
                event += w[i] * y[i]
        if weight > 0:
            gap = abs(event / weight - score / weight)
            ece += weight / total * gap
            mce = max(mce, gap)
    return ece, mce


def test_ece_and_mce_match_a_weighted_loop_over_bins() -> None:
    y, p, _ = binary_case(200)
    w = np.random.default_rng(5).exponential(2.0, y.size)
    values = {m["id"]: m["value"] for m in audit(y, p, sample_weight=w,
                                                 weight_kind="design")["metrics"]}
    ece, mce = loop_ece(y, p, w)
    assert values["ece"] == pytest.approx(ece, rel=1e-12)
    assert values["mce"] == pytest.approx(mce, rel=1e-12)


def test_weights_change_the_estimates() -> None:
    y, p, w = binary_case()
    plain = {m["id"]: m["value"] for m in audit(y, p)["metrics"]}
    weighted = {m["id"]: m["value"] for m in audit(y, p, sample_weight=w + 1)["metrics"]}
    for key in ("ece", "brier", "log_loss", "smece", "calibration_slope"):
        assert plain[key] != weighted[key], key


def loop_skce(p, y, w, gamma: float, frequency: bool):
    """Weighted SKCE by a double loop from the definition (Widmann et al. 2019, eq. 6
    with row weights): h_ij = exp(-gamma TV(p_i, p_j)) <e_{y_i} - p_i, e_{y_j} - p_j>;
    V = sum_ij w_i w_j h_ij / W^2; U over pairs of distinct units: frequency weights
    (w_i units of weight 1) (sum_ij w_i w_j h_ij - sum_i w_i h_ii) / (W (W - 1)); one unit
    of weight w_i per row sum_{i != j} w_i w_j h_ij / (W^2 - sum w_i^2)."""
    n, m = p.shape
    total = diagonal = squares = weight = 0.0
    for i in range(n):
        weight += w[i]
        squares += w[i] if frequency else w[i] * w[i]
        for j in range(n):
            tv = 0.5 * sum(abs(p[i, k] - p[j, k]) for k in range(m))
            inner = sum(((y[i] == k) - p[i, k]) * ((y[j] == k) - p[j, k]) for k in range(m))
            h = np.exp(-gamma * tv) * inner
            total += w[i] * w[j] * h
            if i == j:
                diagonal += (w[i] if frequency else w[i] * w[i]) * h
    return total / weight ** 2, (total - diagonal) / (weight * weight - squares)


def loop_median_tv(p, w):
    """The median heuristic of the repeated rows: every pair (i, j) of the full matrix,
    diagonal included, listed w_i w_j times, then numpy's median."""
    values = []
    for i in range(len(p)):
        for j in range(len(p)):
            values += [0.5 * np.abs(p[i] - p[j]).sum()] * int(w[i] * w[j])
    return float(np.median(values))


@pytest.mark.parametrize("kind", ["frequency", "design"])
def test_skce_matches_a_weighted_double_loop(kind) -> None:
    y, probs, _ = multiclass_case(14, m=3, seed=21)
    rng = np.random.default_rng(22)
    w = rng.integers(1, 4, 14).astype(float) if kind == "frequency" else rng.uniform(0.2, 3, 14)
    data = CalibrationData.from_arrays(y, probs, sample_weight=w, weight_kind=kind)
    config = calaudit.AuditConfig(n_resamples=19, random_state=1)
    result = {m["id"]: m for m in calaudit.run_audit(data, config).to_dict()["metrics"]}
    bandwidth = result["skce_b"]["params"]["bandwidth"]
    if kind == "frequency":
        assert bandwidth == pytest.approx(loop_median_tv(probs, w), rel=1e-12)
    biased, unbiased = loop_skce(probs, y, w, 1.0 / bandwidth, kind == "frequency")
    assert result["skce_b"]["value"] == pytest.approx(biased, rel=1e-10)
    assert result["skce_uq"]["value"] == pytest.approx(unbiased, rel=1e-10)


def test_skce_with_negative_sampling_matches_the_double_loop_over_units() -> None:
    y, p, _ = binary_case(16, seed=31)
    probs = np.column_stack([1 - p, p])
    data = CalibrationData.from_arrays(y, p, negative_rate=0.25)
    config = calaudit.AuditConfig(n_resamples=19, random_state=1,
                                  skce=calaudit.audit.config.SkceConfig(bandwidth=0.4))
    result = {m["id"]: m for m in calaudit.run_audit(data, config).to_dict()["metrics"]}
    w = np.where(y == 1, 1.0, 4.0)  # one unit per row, negatives weighing 1 / r
    biased, unbiased = loop_skce(probs, y, w, 1 / 0.4, frequency=False)
    assert result["skce_b"]["value"] == pytest.approx(biased, rel=1e-10)
    assert result["skce_uq"]["value"] == pytest.approx(unbiased, rel=1e-10)
