"""The group table on weighted rows: frequency weights against row duplication, each
group's weighted bias and linearised interval against a direct loop, the level of the
weighted group test (design weights, negatives kept at a rate) and one FAIL group read
the same in every output."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import calaudit
from calaudit import CalibrationData
from calaudit.audit.config import LocalConfig
from calaudit.data.weights import SampleWeights
from calaudit.local.groups import GroupSettings, Levels, define_groups
from calaudit.local.weighted_groups import WeightedRows, weighted_group_table

FIELDS = ("group", "kind", "covariates", "n", "events", "mean_prediction", "observed_rate",
          "bias", "bias_ci", "bias_ci_method", "expected_events", "test", "test_method",
          "p_value", "p_value_adjusted", "status", "message", "bias_ci_level")


def frame_with_bias(n: int, seed: int):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.6, n)
    race = rng.choice(["A", "B", "C"], n)
    age = rng.normal(40.0, 10.0, n)
    y = (rng.random(n) < np.clip(p + 0.2 * (race == "A"), 0, 1)).astype(np.int64)
    return y, p, pd.DataFrame({"race": race, "age": age}), rng


def audit(y, p, frame, **weights) -> dict:
    data = CalibrationData.from_arrays(y, p, covariates=frame, categorical=["race"],
                                       **weights)
    config = calaudit.AuditConfig(n_resamples=99, random_state=4, local=LocalConfig(
        n_resamples=99, resample_dtype="float64", min_group_rows=20))
    return calaudit.run_audit(data, config).to_dict()


def same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12, abs=1e-15)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_frequency_weights_equal_row_duplication_for_every_group_field() -> None:
    y, p, frame, rng = frame_with_bias(500, 3)
    w = rng.integers(0, 4, y.size)
    repeat = np.repeat(np.arange(y.size), w)
    weighted = audit(y, p, frame, sample_weight=w)["groups"]
    duplicated = audit(y[repeat], p[repeat], frame.iloc[repeat].reset_index(drop=True))["groups"]
    assert len(weighted) == len(duplicated) > 10
    assert {g["status"] for g in weighted} >= {"FAIL", "PASS"}
    for mine, theirs in zip(weighted, duplicated, strict=True):
        for key in FIELDS:
            assert same(mine[key], theirs[key]), (mine["group"], key, mine[key], theirs[key])
        assert mine["weight"] == mine["n"]


def test_frequency_weights_equal_duplication_above_the_exact_and_bootstrap_sizes() -> None:
    from calaudit.local.group_sources import level_table

    rng = np.random.default_rng(5)
    n = 900
    p = rng.uniform(0.1, 0.6, n)
    y = (rng.random(n) < p).astype(np.float64)
    codes = rng.integers(0, 2, n).astype(np.int32)
    w = rng.integers(5, 30, n)  # groups of ~7,500 units: RNA test, bootstrap interval
    settings = GroupSettings(min_rows=30, ci_resamples=200)
    rows = WeightedRows.of(SampleWeights(w.astype(float)), y, p)
    mine = weighted_group_table([Levels("g", codes, ("a", "b"))], False, rows, True,
                                np.random.default_rng(1), settings, 99)[1]
    repeat = np.repeat(np.arange(n), w)
    theirs = level_table(None, [Levels("g", codes[repeat], ("a", "b"))], False, y[repeat],
                         p[repeat], None, np.random.default_rng(1), settings)[1]
    for a, b in zip(mine, theirs, strict=True):
        assert a["test_method"] == "refined normal approximation"
        for key in FIELDS:
            assert same(a[key], b[key]), (key, a[key], b[key])


def loop_reference(y, p, w, level: float) -> tuple[float, float, float]:
    """bias = sum w (y - p) / sum w and its interval, one row at a time: Student's t on
    Kish's size - 1 degrees of freedom times the larger of the linearised standard error
    and the weighted sd over sqrt(Kish's size - 1)."""
    total = top = squares_w = 0.0
    for yi, pi, wi in zip(y, p, w, strict=True):
        total += wi
        top += wi * (yi - pi)
        squares_w += wi * wi
    bias = top / total
    size = total * total / squares_w
    m = sum(1 for wi in w if wi > 0)
    lin = spread = 0.0
    for yi, pi, wi in zip(y, p, w, strict=True):
        lin += wi * wi * ((yi - pi) - bias) ** 2
        spread += wi * ((yi - pi) - bias) ** 2
    se = max(math.sqrt(m / (m - 1) * lin) / total, math.sqrt(spread / total / (size - 1)))
    half = float(stats.t.ppf(0.5 + level / 2, size - 1)) * se
    return bias, bias - half, bias + half


@pytest.mark.parametrize("rate", [None, 0.3])
def test_weighted_bias_and_interval_match_a_direct_loop(rate) -> None:
    rng = np.random.default_rng(7)
    n = 300
    p = rng.uniform(0.05, 0.9, n)
    y = (rng.random(n) < p).astype(np.float64)
    codes = rng.integers(0, 3, n).astype(np.int32)
    d = rng.exponential(1.0, n)
    d[:5] = 0.0
    rates = None if rate is None else rng.uniform(rate, 1.0, n)
    weights = SampleWeights(d, "design", rates)
    specs, table, _ = weighted_group_table([Levels("g", codes, ("a", "b", "c"))], False,
                                           WeightedRows.of(weights, y, p), False,
                                           np.random.default_rng(0), GroupSettings(min_rows=5),
                                           99)
    w = weights.of_labels(y)
    for spec, row in zip(specs, table, strict=True):
        rows = spec.rows
        bias, low, high = loop_reference(y[rows], p[rows], w[rows], row["bias_ci_level"])
        assert row["bias"] == pytest.approx(bias, rel=1e-12, abs=1e-15)
        assert row["bias_ci"] == pytest.approx([low, high], rel=1e-11, abs=1e-14)
        total, squares = w[rows].sum(), (w[rows] ** 2).sum()
        assert row["effective_size"] == pytest.approx(total ** 2 / squares, rel=1e-12)
        assert row["observed_rate"] == pytest.approx((w[rows] * y[rows]).sum() / total,
                                                     rel=1e-12)
        assert row["mean_prediction"] == pytest.approx((w[rows] * p[rows]).sum() / total,
                                                       rel=1e-12)


def rejection_rate(case: str, n_sets: int, seed: int) -> tuple[float, float]:
    """Share of groups whose weighted test rejects at 0.05 (Monte Carlo, then the normal
    approximation) over ``n_sets`` calibrated data sets of 3 groups."""
    rng = np.random.default_rng(seed)
    settings = GroupSettings(min_rows=10, min_events=2)
    rejected = np.zeros(2)
    total = 0
    for _ in range(n_sets):
        n = 240
        p = rng.uniform(0.05, 0.6, n)
        x = rng.normal(size=n)
        y = (rng.random(n) < p).astype(np.int64)
        codes = rng.integers(0, 3, n).astype(np.int32)
        if case == "design":
            weights = SampleWeights(np.exp(x), "design")
        else:
            keep = (y == 1) | (rng.random(n) < 0.3)
            y, p, codes = y[keep], p[keep], codes[keep]
            weights = SampleWeights(np.ones(y.size), "frequency", np.full(y.size, 0.3))
        levels = [Levels("g", codes, ("a", "b", "c"))]
        rows = WeightedRows.of(weights, y, p)
        for k, draws in enumerate((199, None)):
            specs, table, _ = weighted_group_table(levels, False, rows,
                                                   weights.kind == "frequency", rng, settings,
                                                   draws)
            rejected[k] += sum(r["p_value"] <= 0.05 for r in table if r["p_value"] is not None)
        total += len(specs)
    return rejected[0] / total, rejected[1] / total


@pytest.mark.parametrize("case", ["design", "negative_rate"])
def test_the_weighted_group_test_keeps_its_level(case) -> None:
    mc, normal = rejection_rate(case, 200, 13)
    # 600 group tests: Binomial(600, 0.05) has sd 0.009; P(rate > 0.08) < 0.001
    assert mc < 0.08 and normal < 0.08
    assert mc > 0.02 and normal > 0.02  # not a test that never rejects


def test_the_weighted_group_test_finds_a_biased_group_under_negative_sampling() -> None:
    rng = np.random.default_rng(4)
    n = 1500
    p = rng.uniform(0.05, 0.5, n)
    codes = rng.integers(0, 2, n).astype(np.int32)
    y = (rng.random(n) < np.clip(p + 0.15 * (codes == 0), 0, 1)).astype(np.int64)
    keep = (y == 1) | (rng.random(n) < 0.3)
    weights = SampleWeights(np.ones(keep.sum()), "frequency", np.full(keep.sum(), 0.3))
    table = weighted_group_table([Levels("g", codes[keep], ("a", "b"))], False,
                                 WeightedRows.of(weights, y[keep], p[keep]), True, rng,
                                 GroupSettings(), 199)[1]
    assert table[0]["status"] == "FAIL" and table[0]["bias_ci"][0] > 0
    assert table[1]["bias_ci"][0] < 0 < table[1]["bias_ci"][1]  # calibrated in population
    assert table[0]["test_method"] == "Monte Carlo (labels redrawn)"
    # the smallest p-value of 1 + 400 redraws (a half of alpha each: 10 / (0.05 * 0.5))
    assert table[0]["p_value"] == pytest.approx(2 / 401)


def test_a_weighted_failing_group_reads_the_same_in_every_output(tmp_path) -> None:
    import json
    import re
    import xml.etree.ElementTree as ET

    from tests.cli_inprocess import run_cli
    from tests.conftest import write_frame

    rng = np.random.default_rng(2)
    n = 600
    frame = pd.DataFrame({"prob": rng.uniform(0.05, 0.6, n), "race": rng.choice(["A", "B"], n)})
    truth = np.clip(frame["prob"] + 0.25 * (frame["race"] == "A"), 0, 1)
    frame["label"] = (rng.random(n) < truth).astype(int)
    frame["w"] = rng.uniform(0.5, 2.0, n)
    path = write_frame(frame, tmp_path / "preds.csv")
    out = run_cli("test", path, "--label-col", "label", "--prob-cols", "prob", "--weight-col",
                  "w", "--weight-kind", "design", "--covariates", "race", "--n-resamples",
                  "99", "--local-resamples", "199", "--json", tmp_path / "r.json",
                  "--junit", tmp_path / "r.xml", "--md", tmp_path / "r.md", "--html",
                  tmp_path / "r.html")
    assert out.code == 1, out.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    groups = {g["group"]: g for g in result["groups"]}
    html = (tmp_path / "r.html").read_text()
    for name, status in (("race=A", "fail"), ("race=B", "pass")):
        pattern = r"<tr[^>]*>(?:(?!</tr>).)*?>" + name + r"(?:</td>|<br>)(?:(?!</tr>).)*</tr>"
        rows = re.findall(pattern, html, re.S)  # the first screen's row and the table's
        statuses = {s for row in rows for s in re.findall(r"status-(\w+)", row)}
        assert statuses == {status}, (name, statuses)
    assert groups["race=A"]["status"] == "FAIL" and groups["race=B"]["status"] == "PASS"
    assert groups["race=A"]["test"] == "weighted_residual_sum"
    assert not any("group table" in item["id"]
                   for item in result["data"]["weights"]["not_weighted"])
    case = [c for c in ET.parse(tmp_path / "r.xml").getroot().iter("testcase")
            if c.get("name") == "local_consistency"][0]
    assert case.find("failure") is not None  # the gatekeeper of the group statuses
    report = (tmp_path / "r.md").read_text()
    assert [line.split("|")[-2].strip() for line in report.splitlines()
            if line.startswith("| race=A | +")] == ["FAIL"]
    assert [line.split("|")[-2].strip() for line in report.splitlines()
            if line.startswith("| race=B | ") and "[" in line] == ["PASS"]
    shown = [line for line in out.stdout.splitlines() if "race=A" in line and "│" in line]
    assert shown and shown[0].rstrip().endswith("FAIL")


def test_without_a_local_test_the_weighted_group_tests_decide_as_the_repeated_rows() -> None:
    y, p, frame, rng = frame_with_bias(400, 8)
    w = rng.integers(0, 4, y.size)
    repeat = np.repeat(np.arange(y.size), w)

    def primary(y, p, frame, **weights) -> dict:
        data = CalibrationData.from_arrays(y, p, covariates=frame, categorical=["race"],
                                           **weights)
        config = calaudit.AuditConfig(n_resamples=99, random_state=4,
                                      local=LocalConfig(tests=(), min_group_rows=20))
        tests = {t["id"]: t for t in calaudit.run_audit(data, config).to_dict()["tests"]}
        return tests["groups_bonferroni"]

    weighted = primary(y, p, frame, sample_weight=w)
    duplicated = primary(y[repeat], p[repeat], frame.iloc[repeat].reset_index(drop=True))
    assert weighted["status"] == duplicated["status"] == "FAIL"
    assert weighted["p_value"] == pytest.approx(duplicated["p_value"], rel=1e-12, abs=1e-300)
    design = primary(y, p, frame, sample_weight=w + 0.5, weight_kind="design")
    assert design["status"] == "FAIL" and design["params"]["groups_tested"] > 5


def test_multiclass_frequency_weights_equal_row_duplication_in_the_top_label_table() -> None:
    rng = np.random.default_rng(21)
    n = 300
    probs = rng.dirichlet(np.full(3, 2.0), n)
    y = np.array([rng.choice(3, p=row) for row in probs])
    frame = pd.DataFrame({"age": rng.normal(40, 10, n), "race": rng.choice(["a", "b"], n)})
    w = rng.integers(0, 4, n)
    repeat = np.repeat(np.arange(n), w)
    weighted = audit(y, probs, frame, sample_weight=w)["groups"]
    duplicated = audit(y[repeat], probs[repeat],
                       frame.iloc[repeat].reset_index(drop=True))["groups"]
    assert len(weighted) == len(duplicated) > 10
    for mine, theirs in zip(weighted, duplicated, strict=True):
        for key in FIELDS:
            assert same(mine[key], theirs[key]), (mine["group"], key, mine[key], theirs[key])


def weighted_inputs():
    from tests.test_client_reductions import group_inputs

    levels, y, p, _ = group_inputs()
    rng = np.random.default_rng(9)
    weights = SampleWeights(rng.exponential(1.0, y.size), "design",
                            rng.uniform(0.2, 1.0, y.size))
    return levels, WeightedRows.of(weights, y, p)


def test_weighted_group_moments_are_the_exact_sums() -> None:
    """Each group's weighted sums against ``math.fsum`` of its rows."""
    from calaudit.local.group_moments import source_moments
    from calaudit.local.group_sources import level_rows

    levels, rows = weighted_inputs()
    source = level_rows(None, levels, True, rows.y, rows.p, rows.w)
    moments = source_moments(source, source.groupings(), weighted=True)
    for spec in define_groups(levels, True):
        got, index = moments[spec.key[0]][spec.key[1]], spec.rows
        w, y, e = rows.w[index], rows.y[index], rows.y[index] - rows.p[index]
        total = math.fsum(w)
        bias = math.fsum(w * e) / total
        assert got.weight == pytest.approx(total, rel=1e-14)
        assert got.weight_sq == pytest.approx(math.fsum(w * w), rel=1e-14)
        assert got.events == pytest.approx(math.fsum(w * y), rel=1e-14)
        assert got.positive_weight_sq == pytest.approx(math.fsum(w * w * y), rel=1e-14)
        assert got.bias == pytest.approx(bias, rel=1e-12)
        assert got.m2 == pytest.approx(math.fsum(w * (e - bias) ** 2), rel=1e-12)
        assert got.linearised == pytest.approx(math.fsum(w * w * (e - bias) ** 2), rel=1e-12)


@pytest.mark.parametrize("threads", [2, 3])
def test_the_weighted_group_table_gives_the_same_bytes_on_any_threads(threads) -> None:
    import json

    from calaudit import scale
    from calaudit.scale import SerialExecutor, ThreadExecutor

    levels, rows = weighted_inputs()
    out = []
    for executor in (SerialExecutor(), ThreadExecutor(threads)):
        with scale.using(executor):
            table = weighted_group_table(levels, True, rows, False, np.random.default_rng(2),
                                         GroupSettings(), 99)[1]
        out.append(json.dumps(table, sort_keys=True).encode())
    assert out[0] == out[1]
