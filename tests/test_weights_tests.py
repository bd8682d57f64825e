"""Weighted tests: the right null for each kind of weight, the checks a weighted audit
refuses, skips or leaves out, and the same bytes on every executor."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import calaudit
from calaudit import CalibrationData, scale
from calaudit.data.weights import SampleWeights
from calaudit.inference.classical import spiegelhalter
from calaudit.inference.consistency import ece_consistency
from calaudit.scale import DaskExecutor, SerialExecutor, ThreadExecutor
from tests.cli_inprocess import assert_one_line_error, run_cli
from tests.conftest import binary_frame, dask_partials, write_frame


def sampled(n_population: int, rate: float, rng: np.random.Generator, shift: float = 0.0):
    """A population calibrated on ``p`` (or miscalibrated by ``shift`` on the log-odds
    scale), its negatives kept with probability ``rate``."""
    p = 1 / (1 + np.exp(-rng.normal(-1.0, 1.2, n_population)))
    truth = 1 / (1 + np.exp(-(np.log(p / (1 - p)) + shift)))
    y = (rng.random(n_population) < truth).astype(np.int64)
    keep = (y == 1) | (rng.random(n_population) < rate)
    return y[keep], p[keep]


def rejections(make, n_sets: int, alpha: float, seed: int) -> dict[str, float]:
    """Rejection rates of the weighted ECE consistency and Spiegelhalter tests over
    ``n_sets`` data sets from ``make(rng) -> (y, p, weights)``."""
    rng = np.random.default_rng(seed)
    counts = {"ece_consistency": 0, "spiegelhalter": 0}
    for _ in range(n_sets):
        y, p, weights = make(rng)
        probs = np.column_stack([1 - p, p])
        ece = ece_consistency(y, probs, weights=weights, n_resamples=99, rng=rng)
        z = spiegelhalter(y, p, weights)
        counts["ece_consistency"] += ece.p_value <= alpha
        counts["spiegelhalter"] += z.p_value <= alpha
    return {key: value / n_sets for key, value in counts.items()}


def bound(alpha: float, n_sets: int) -> float:
    """alpha plus three binomial standard errors."""
    return alpha + 3 * np.sqrt(alpha * (1 - alpha) / n_sets)


def test_design_weights_keep_the_level() -> None:
    def make(rng):
        p = rng.uniform(0.05, 0.95, 300)
        y = (rng.random(300) < p).astype(np.int64)
        return y, p, SampleWeights(rng.exponential(1.0, 300) * (1 + 3 * p), "design")

    rates = rejections(make, 200, 0.1, seed=1)
    assert max(rates.values()) <= bound(0.1, 200), rates


def test_frequency_weights_keep_the_level() -> None:
    def make(rng):  # 200 predictions, each shared by 1-5 units; rows aggregate the units
        p = rng.uniform(0.05, 0.95, 200)
        units = rng.integers(1, 6, 200)
        events = rng.binomial(units, p)
        y = np.repeat([1, 0], 200)
        counts = np.concatenate([events, units - events]).astype(float)
        keep = counts > 0
        return y[keep], np.tile(p, 2)[keep], SampleWeights(counts[keep], "frequency")

    rates = rejections(make, 300, 0.1, seed=7)
    assert max(rates.values()) <= bound(0.1, 300), rates


@pytest.mark.parametrize(("kind", "limit"), [("frequency", "MAX_UNITS"),
                                             ("design", "MAX_LEVELS")])
def test_cell_count_draws_and_row_draws_share_the_statistic_and_the_null(monkeypatch, kind,
                                                                         limit) -> None:
    from calaudit.inference import weighted_tests

    rng = np.random.default_rng(9)
    p = rng.uniform(0.05, 0.95, 2000)
    y = (rng.random(2000) < p).astype(np.int64)
    weights = SampleWeights(rng.integers(0, 4, 2000).astype(float), kind)
    probs = np.column_stack([1 - p, p])
    cells = ece_consistency(y, probs, weights=weights, n_resamples=400,
                            rng=np.random.default_rng(1))
    monkeypatch.setattr(weighted_tests, limit, 0)
    monkeypatch.setattr(weighted_tests, "MAX_LEVELS", 0)
    rows = ece_consistency(y, probs, weights=weights, n_resamples=400,
                           rng=np.random.default_rng(1))
    assert cells.statistic == pytest.approx(rows.statistic, rel=1e-12)
    a, b = cells.null_distribution, rows.null_distribution
    assert abs(a.mean() - b.mean()) < 4 * np.hypot(a.std(), b.std()) / np.sqrt(400)
    assert 0.8 < a.std() / b.std() < 1.25


def test_negative_sampling_keeps_the_level_and_the_unweighted_test_does_not() -> None:
    def make(rng):
        y, p = sampled(3000, 0.1, rng)
        return y, p, SampleWeights(np.ones(y.size), negative_rate=np.full(y.size, 0.1))

    rates = rejections(make, 150, 0.1, seed=2)
    assert max(rates.values()) <= bound(0.1, 150), rates

    def ignored(rng):  # the same samples, the sampling not declared
        y, p = sampled(3000, 0.1, rng)
        return y, p, SampleWeights(np.ones(y.size))

    naive = rejections(ignored, 20, 0.1, seed=2)
    assert min(naive.values()) >= 0.9, naive


def test_negative_sampling_has_power_against_a_real_miscalibration() -> None:
    def make(rng):
        y, p = sampled(3000, 0.1, rng, shift=0.5)
        return y, p, SampleWeights(np.ones(y.size), negative_rate=np.full(y.size, 0.1))

    rates = rejections(make, 20, 0.05, seed=3)
    assert rates["spiegelhalter"] >= 0.5 or rates["ece_consistency"] >= 0.5, rates


def test_the_null_law_of_a_sampled_label() -> None:
    weights = SampleWeights(np.ones(3), negative_rate=np.array([0.1, 0.5, 1.0]))
    p = np.array([0.2, 0.2, 0.2])
    np.testing.assert_allclose(weights.null_positive_rate(p),
                               [0.2 / (0.2 + 0.08), 0.2 / (0.2 + 0.4), 0.2])
    np.testing.assert_array_equal(weights.of_labels(np.array([0, 1, 0])), [10, 1, 1])


def frame_path(tmp_path: Path) -> Path:
    frame = binary_frame(300, seed=2)
    frame["w"] = np.random.default_rng(0).integers(1, 4, len(frame))
    return write_frame(frame, tmp_path / "preds.csv")


@pytest.mark.parametrize(("extra", "fragment"), [
    (("--covariates", "age", "--local-tests", "klce_permutation"), "no weighted version"),
    (("--binning", "quantile"), "quantile bins"),
    (("--window", "100"), "calibration over time"),
])
def test_checks_without_a_weighted_version_are_refused(tmp_path: Path, extra, fragment
                                                        ) -> None:
    out = run_cli("test", frame_path(tmp_path), "--label-col", "label", "--prob-cols", "prob",
                  "--weight-col", "w", *extra)
    assert_one_line_error(out, fragment)


def test_a_named_unweighted_test_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "calaudit.toml"
    config.write_text('[global_tests]\ntests = ["ece_consistency", "kuiper"]\n')
    out = run_cli("test", frame_path(tmp_path), "--label-col", "label", "--prob-cols", "prob",
                  "--weight-col", "w", "--config", config)
    assert_one_line_error(out, "kuiper", "no weighted version")


def test_the_kernel_tests_are_skipped_with_the_reason_hosmer_lemeshow_runs(tmp_path: Path
                                                                           ) -> None:
    out = run_cli("test", frame_path(tmp_path), "--label-col", "label", "--prob-cols", "prob",
                  "--weight-col", "w", "--hosmer-lemeshow", "--n-resamples", "99",
                  "--json", tmp_path / "r.json")
    assert out.code in (0, 1), out.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    tests = {t["id"]: t for t in result["tests"]}
    assert tests["hosmer_lemeshow"]["status"] in ("PASS", "FAIL", "INCONCLUSIVE")
    assert tests["hosmer_lemeshow"]["params"]["weights"] == "frequency"
    for test_id in ("skce_ul_asymptotic", "skce_uq_asymptotic"):
        assert tests[test_id]["status"] == "SKIPPED" and tests[test_id]["p_value"] is None
    for test_id in ("ece_consistency", "skce_consistency"):
        assert tests[test_id]["status"] in ("PASS", "FAIL")
    metric_ids = {m["id"] for m in result["metrics"]}
    assert {"skce_b", "skce_uq"} <= metric_ids and not {"skce_ul", "skce_block"} & metric_ids
    left_out = {item["id"] for item in result["data"]["weights"]["not_weighted"]}
    assert "hosmer_lemeshow" not in left_out and "smooth reliability diagram" not in left_out
    assert "skce_ul, skce_block" in left_out
    assert result["diagrams"]["reliability"]["weights"] == "frequency"
    curve = result["diagrams"]["smooth_reliability"]
    (smece,) = [m for m in result["metrics"] if m["id"] == "smece"]
    assert curve["weights"] == "frequency" and curve["smece"] == smece["value"]
    assert curve["sigma"] == smece["params"]["sigma"]


def test_inconclusive_rule_counts_effective_events() -> None:
    rng = np.random.default_rng(8)
    p = rng.uniform(0.05, 0.95, 2000)
    y = (rng.random(2000) < p).astype(np.int64)
    w = np.where(y == 1, 1e-6, 1.0)  # the events carry almost no weight
    w[np.flatnonzero(y == 1)[0]] = 1000.0  # ... but one: Kish's size of the events is ~1
    data = CalibrationData.from_arrays(y, p, sample_weight=w, weight_kind="design")
    result = calaudit.run_audit(data, calaudit.AuditConfig(n_resamples=99)).to_dict()
    rule = result["gate"]["data_rule"]
    assert rule["events"] < 2 and not rule["enough_data"]
    assert result["verdict"] != "PASS"


def weighted_audit_bytes(executor) -> str:
    rng = np.random.default_rng(12)
    n = scale.TASK_ROWS + 1500  # two reduction ranges
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.random(n) < p).astype(np.int64)
    data = CalibrationData.from_arrays(y, p, sample_weight=rng.exponential(1.0, n),
                                       weight_kind="design", negative_rate=0.3)
    # D = 256 (the rule's least) features: the size rule's 2,048 at these rows would cost
    # eight times as much and take the same code on every executor
    config = calaudit.AuditConfig(n_resamples=49, random_state=6, ci=True, n_features=256,
                                  executor=executor)
    payload = calaudit.run_audit(data, config).to_dict()
    for volatile in ("created_at", "runtime_seconds"):
        payload.pop(volatile, None)
    return json.dumps(payload, sort_keys=True)


@pytest.fixture(scope="module")
def serial_bytes() -> str:
    return weighted_audit_bytes(SerialExecutor())


def test_weighted_audit_gives_the_same_bytes_on_threads(serial_bytes) -> None:
    assert weighted_audit_bytes(ThreadExecutor(3)) == serial_bytes


def test_weighted_audit_gives_the_same_bytes_on_dask(serial_bytes, one_worker, monkeypatch
                                                     ) -> None:
    calls = dask_partials(monkeypatch)
    assert weighted_audit_bytes(DaskExecutor(one_worker)) == serial_bytes
    for partial in ("ece_null_partial", "spiegelhalter_partial", "newton_partial",
                    "spread_arrays_partial", "feature_partial"):
        assert partial in calls, f"{partial} did not run on the executor"


def test_weighted_skce_above_the_exact_median_rows_takes_features_without_bandwidth() -> None:
    from calaudit.audit.sections.global_tests import SkceConfig
    from calaudit.metrics.skce import MAX_MEDIAN_ROWS

    rng = np.random.default_rng(13)
    n = MAX_MEDIAN_ROWS + 10
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.random(n) < p).astype(np.int64)
    data = CalibrationData.from_arrays(y, p, sample_weight=rng.integers(1, 3, n))
    for bandwidth, method in ((None, "features"), (0.3, None)):
        config = calaudit.AuditConfig(run_tests=False, n_features=128,
                                      skce=SkceConfig(bandwidth=bandwidth))
        result = calaudit.run_audit(data, config).to_dict()
        (metric,) = [m for m in result["metrics"] if m["id"] == "skce_b"]
        assert metric["params"].get("computation", {}).get("method") == method
        notes = {item["id"] for item in result["data"]["weights"]["not_weighted"]}
        assert "skce_b, skce_uq" not in notes


def exact_skce_consistency(y, probs, weights, **options):
    """The weighted ``skce_consistency`` on the exact kernel of bandwidth 0.3."""
    from calaudit.inference.weighted_skce_features import weighted_skce

    _, (result,) = weighted_skce(y, probs, weights, weights.of_labels(y),
                                 kernel="exponential", bandwidth=0.3, max_quadratic_n=20_000,
                                 n_features=None, tests=("skce_consistency",), **options)
    assert result.params["bandwidth"] == 0.3 and "computation" not in result.params
    return result


@pytest.mark.parametrize("case", ["design", "frequency", "negative_rate"])
def test_weighted_skce_consistency_keeps_the_level(case) -> None:
    rng = np.random.default_rng(17)
    rejected, n_sets = 0, 120
    for _ in range(n_sets):
        if case == "negative_rate":
            y, p = sampled(400, 0.2, rng)
            weights = SampleWeights(np.ones(y.size), negative_rate=np.full(y.size, 0.2))
        elif case == "frequency":  # rows aggregate the units of a prediction by label
            p0 = rng.uniform(0.05, 0.95, 100)
            units = rng.integers(1, 4, 100)
            events = rng.binomial(units, p0)
            counts = np.concatenate([events, units - events]).astype(float)
            keep = counts > 0
            y, p = np.repeat([1, 0], 100)[keep], np.tile(p0, 2)[keep]
            weights = SampleWeights(counts[keep], "frequency")
        else:
            p = rng.uniform(0.05, 0.95, 150)
            y = (rng.random(150) < p).astype(np.int64)
            weights = SampleWeights(rng.exponential(1.0, 150), "design")
        probs = np.column_stack([1 - p, p])
        result = exact_skce_consistency(y, probs, weights, n_resamples=49, alpha=0.1,
                                        rng=rng)
        rejected += result.p_value <= 0.1
    assert rejected / n_sets <= bound(0.1, n_sets), rejected


def test_weighted_skce_test_on_fewer_units_than_a_test_needs_is_inconclusive() -> None:
    """One unit of weight leaves SKCE_uq undefined: the test cannot decide (it used to
    report the smallest Monte-Carlo p-value for an undefined statistic)."""
    from calaudit.numerics.resampling import monte_carlo_pvalue

    rng = np.random.default_rng(1)
    n = 200
    p = rng.uniform(0.1, 0.9, n)
    y = (rng.uniform(size=n) < p).astype(np.int64)
    design = np.zeros(n)
    design[5] = 1.0
    for kind in ("frequency", "design"):
        probs = np.column_stack([1 - p, p])
        result = exact_skce_consistency(y, probs, SampleWeights(design, kind),
                                        n_resamples=99, alpha=0.05,
                                        rng=np.random.default_rng(2))
        assert result.status is calaudit.Status.INCONCLUSIVE
        assert "units of positive weight" in result.message
    assert np.isnan(monte_carlo_pvalue(float("nan"), np.zeros(10)))


def test_real_valued_weights_read_as_frequency_weights_stop_even_with_drop_invalid(
        tmp_path: Path) -> None:
    frame = binary_frame(100, seed=3)
    frame["w"] = np.random.default_rng(1).uniform(0.5, 2.0, len(frame))
    path = write_frame(frame, tmp_path / "preds.csv")
    out = run_cli("test", path, "--label-col", "label", "--prob-cols", "prob",
                  "--weight-col", "w", "--drop-invalid")
    assert_one_line_error(out, "fractional_frequency_weight", "--weight-kind design")
    assert "--drop-invalid" not in out.stderr


@pytest.mark.parametrize("kind", ["frequency", "design"])
def test_label_dependent_cell_draws_share_the_band_sums_with_the_row_draws(kind) -> None:
    """Under label-dependent sampling the band's weights and event weights per bin drawn
    from (bin, weight level) counts have the law of the row redraws."""
    from calaudit.inference.weighted_tests import null_sums
    from calaudit.metrics.ece import notion_outcomes

    rng = np.random.default_rng(4)
    n = 3000
    p = rng.uniform(0.02, 0.9, n)
    y = (rng.random(n) < p / (p + 0.2 * (1 - p))).astype(np.int64)
    design = rng.integers(1, 3, n).astype(float)
    weights = SampleWeights(design, kind, np.where(rng.random(n) < 0.5, 0.2, 0.5))
    binned = notion_outcomes(y, np.column_stack([1 - p, p]), n_bins=10, strategy="uniform")
    seen_c, cells = null_sums(binned, weights, True, 2000, np.random.default_rng(1),
                              scores=False)
    seen_r, rows = null_sums(binned, weights, True, 2000, np.random.default_rng(2))
    for field in ("count", "score", "event"):
        np.testing.assert_allclose(getattr(seen_c, field), getattr(seen_r, field),
                                   rtol=1e-12)
    assert np.isnan(cells.score).all()
    keep = seen_r.count[:, 0] > 0
    cells, rows = (type(c)(c.count[keep], c.score[keep], c.event[keep]) for c in (cells, rows))
    for a, b in ((cells.count, rows.count), (cells.event, rows.event),
                 (cells.event / cells.count, rows.event / rows.count)):
        spread = np.hypot(a.std(axis=1), b.std(axis=1)) / np.sqrt(2000)
        assert (np.abs(a.mean(axis=1) - b.mean(axis=1)) < 5 * spread + 1e-12).all()
        assert (np.abs(a.std(axis=1) / b.std(axis=1) - 1) < 0.12).all()


def test_frequency_weights_of_billions_of_units_are_redrawn_row_by_row() -> None:
    """Past MAX_UNITS units the ECE test redraws each row's events as Binomial(d_i, q_i)
    (O(rows)), instead of laws whose support grows with the units."""
    from calaudit.inference import weighted_tests

    rng = np.random.default_rng(4)
    p = rng.uniform(0.05, 0.95, 300)
    y = (rng.random(300) < p).astype(np.int64)
    weights = SampleWeights(np.full(300, 1e7), "frequency")
    assert weights.design.sum() > weighted_tests.MAX_UNITS
    result = ece_consistency(y, np.column_stack([1 - p, p]), weights=weights,
                             n_resamples=99, rng=np.random.default_rng(5))
    assert np.isfinite(result.p_value) and result.null_distribution.size == 99
