"""Local calibration on weighted rows: KLCE^2_w against a double loop over weighted units
written from its definition, frequency weights against row duplication, the level of the
weighted local test (design weights, frequency weights, negatives kept at a rate) and the
refusals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import calaudit
from calaudit import CalibrationData
from calaudit.audit.config import LocalConfig
from calaudit.audit.local_calibration import LocalCalibrationStage
from calaudit.data.weights import SampleWeights
from calaudit.exceptions import ConfigError
from calaudit.local.bandwidth import weighted_median
from calaudit.local.kernel import GaussianProductGram
from calaudit.local.levels import covariate_levels
from calaudit.local.weighted_klce import WeightedUnits, weighted_klce2


def loop_klce(p, x, y, t, f, r, gamma_p: float, gamma_x: float) -> float:
    """sum over pairs of distinct units a != b of w_a w_b k(a, b) (y_a - p_a)(y_b - p_b),
    over sum_{a != b} w_a w_b: row i expanded into t_i units that share its label; a
    positive unit weighs f_i, a negative f_i / r_i."""
    units = []
    for i in range(p.size):
        weight = f[i] if y[i] == 1 else f[i] / r[i]
        units += [(p[i], x[i], y[i], weight)] * int(t[i])
    top = bottom = 0.0
    for a, (pa, xa, ya, wa) in enumerate(units):
        for b, (pb, xb, yb, wb) in enumerate(units):
            if a == b:
                continue
            k = np.exp(-gamma_p * (pa - pb) ** 2 - gamma_x * np.sum((xa - xb) ** 2))
            top += wa * wb * k * (ya - pa) * (yb - pb)
            bottom += wa * wb
    return top / bottom


def small_case(seed: int = 3, n: int = 40):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n)
    x = rng.normal(size=(n, 2))
    y = (rng.random(n) < p).astype(np.int64)
    return p, x, y, rng


@pytest.mark.parametrize("kind, rate", [("design", None), ("frequency", None),
                                        ("design", 0.3), ("frequency", 0.25)])
def test_weighted_klce_matches_the_double_loop_over_units(kind, rate) -> None:
    p, x, y, rng = small_case()
    d = rng.integers(0, 4, p.size).astype(float) if kind == "frequency" \
        else rng.exponential(1.0, p.size)
    rates = None if rate is None else rng.uniform(rate, 1.0, p.size)
    weights = SampleWeights(d, kind, rates)
    gamma_p, gamma_x = 3.0, 0.4
    gram = GaussianProductGram(np.column_stack([p * np.sqrt(gamma_p), x * np.sqrt(gamma_x)]))
    units = WeightedUnits.of(weights, p)
    got = weighted_klce2(gram, y, units)
    t = d if kind == "frequency" else np.ones(p.size)
    f = np.ones(p.size) if kind == "frequency" else d
    want = loop_klce(p, x, y, t, f, np.ones(p.size) if rates is None else rates,
                     gamma_p, gamma_x)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_weighted_median_and_bands_of_whole_weights_are_those_of_the_repeated_rows() -> None:
    rng = np.random.default_rng(8)
    values = rng.normal(size=31)
    counts = rng.integers(0, 4, 31)
    repeated = np.repeat(values, counts)
    assert weighted_median(values, counts.astype(float), True) == np.median(repeated)
    cov = type("Cov", (), {"name": "v", "kind": "numeric", "values": values,
                           "categories": ()})()
    levels = covariate_levels(cov, 4, counts.astype(float), True)
    from calaudit.local.groups import quantile_bands
    codes, labels = quantile_bands(repeated, 4)
    assert levels.labels == labels
    np.testing.assert_array_equal(np.repeat(levels.codes, counts), codes)


def local_frame(n: int, seed: int, bias: float = 0.0):
    rng = np.random.default_rng(seed)
    age = rng.normal(40.0, 10.0, n)
    group = rng.choice(["a", "b", "c"], n)
    p = rng.uniform(0.05, 0.7, n)
    truth = np.clip(p + bias * (group == "a"), 0.0, 1.0)
    y = (rng.random(n) < truth).astype(np.int64)
    return y, p, pd.DataFrame({"age": age, "group": group})


def run(y, p, frame, resamples: int = 99, **weights) -> dict:
    data = CalibrationData.from_arrays(y, p, covariates=frame, categorical=["group"],
                                       **weights)
    config = calaudit.AuditConfig(n_resamples=resamples, random_state=4,
                                  local=LocalConfig(n_resamples=resamples,
                                                          resample_dtype="float64"))
    return calaudit.run_audit(data, config).to_dict()


def test_frequency_weights_equal_row_duplication_for_the_local_statistics() -> None:
    y, p, frame = local_frame(150, 2)
    w = np.random.default_rng(5).integers(0, 4, y.size)
    repeat = np.repeat(np.arange(y.size), w)
    weighted = run(y, p, frame, sample_weight=w)
    duplicated = run(y[repeat], p[repeat], frame.iloc[repeat].reset_index(drop=True))
    a, b = weighted["local"]["klce"], duplicated["local"]["klce"]
    assert a["statistic"] == pytest.approx(b["statistic"], rel=1e-12, abs=1e-15)
    for key in ("prob_kernel", "cov_kernel"):
        assert a[key]["bandwidth"] == pytest.approx(b[key]["bandwidth"], rel=1e-12)
    assert a["encoding"]["age"]["mean"] == pytest.approx(b["encoding"]["age"]["mean"],
                                                         rel=1e-12)
    assert a["encoding"]["age"]["sd"] == pytest.approx(b["encoding"]["age"]["sd"], rel=1e-12)
    members = {t["id"]: t for t in weighted["tests"]}["local_consistency"]["params"]["members"]
    dup = {t["id"]: t for t in duplicated["tests"]}["local_consistency"]["params"]["members"]
    for mine, theirs in zip(members, dup, strict=True):  # deterministic: the observed scores
        assert mine["name"] == theirs["name"] and mine["df"] == theirs["df"]
        assert mine["statistic"] == pytest.approx(theirs["statistic"], rel=1e-10, abs=1e-15)


def test_unit_weights_give_the_unweighted_statistic() -> None:
    y, p, frame = local_frame(120, 6)
    weighted = run(y, p, frame, sample_weight=np.ones(y.size))
    plain = run(y, p, frame)
    assert weighted["local"]["klce"]["statistic"] == pytest.approx(
        plain["local"]["klce"]["statistic"], rel=1e-12)


def level_rejections(make, n_sets: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    rejected = 0
    for _ in range(n_sets):
        y, p, frame, weights = make(rng)
        data = CalibrationData.from_arrays(y, p, covariates=frame, **weights)
        config = calaudit.AuditConfig(local=LocalConfig(n_resamples=99, diagnostics=False))
        out = LocalCalibrationStage().run(data, config, rng)  # the local stage alone
        rejected += {t.id: t for t in out.tests}["local_consistency"].p_value <= 0.05
    return rejected / n_sets


@pytest.mark.parametrize("case", ["design", "negative_rate"])
def test_the_weighted_local_test_keeps_its_level(case) -> None:
    def make(rng):
        n = 400
        p = rng.uniform(0.05, 0.6, n)
        x = rng.normal(size=n)
        y = (rng.random(n) < p).astype(np.int64)
        if case == "design":
            return y, p, pd.DataFrame({"x": x}), {"sample_weight": np.exp(x),
                                                  "weight_kind": "design"}
        keep = (y == 1) | (rng.random(n) < 0.3)
        return y[keep], p[keep], pd.DataFrame({"x": x[keep]}), {"negative_rate": 0.3}
    # 40 data sets: the rejection count is Binomial(40, <= 0.05); P(>= 7) < 0.01
    assert level_rejections(make, 40, 11) < 7 / 40


def test_weighted_local_refusals() -> None:
    y, p, frame = local_frame(100, 1)
    data = CalibrationData.from_arrays(y, p, covariates=frame, sample_weight=np.ones(100))
    for local, message in ((({"tests": ("klce_bootstrap",)}), "no weighted version"),):
        config = calaudit.AuditConfig(local=LocalConfig(**local))
        with pytest.raises(ConfigError, match=message):
            calaudit.run_audit(data, config)


def test_a_small_weighted_sample_is_inconclusive_and_metrics_give_the_same_statistic() -> None:
    y, p, frame = local_frame(150, 9)
    design = CalibrationData.from_arrays(y, p, covariates=frame, categorical=["group"],
                                         sample_weight=np.full(150, 7.0),
                                         weight_kind="design")
    small = calaudit.run_audit(design, calaudit.AuditConfig(
        n_resamples=19, local=LocalConfig(n_resamples=19, min_group_rows=151))).to_dict()
    local = {t["id"]: t for t in small["tests"]}["local_consistency"]
    assert local["status"] == "INCONCLUSIVE"
    assert "sample size 150 < min_group_rows 151" in local["message"]
    data = CalibrationData.from_arrays(y, p, covariates=frame, categorical=["group"],
                                       negative_rate=0.5)
    tested = calaudit.run_audit(data, calaudit.AuditConfig(
        n_resamples=19, local=LocalConfig(n_resamples=19))).to_dict()
    estimated = calaudit.run_audit(data, calaudit.AuditConfig(run_tests=False)).to_dict()
    assert tested["local"]["klce"]["statistic"] == pytest.approx(
        estimated["local"]["klce"]["statistic"], rel=1e-12)
    assert "hoeffding" not in tested["local"]["klce"]
    assert {g["test"] for g in tested["groups"]} == {"weighted_residual_sum"}


def loop_vector_klce(probs, x, y, t, f, gamma_p: float, gamma_x: float) -> float:
    """Multi-class: sum over pairs of distinct units of w_a w_b k(a, b) <e_ya - p_a,
    e_yb - p_b> over sum_{a != b} w_a w_b (units as in :func:`loop_klce`)."""
    m = probs.shape[1]
    units = []
    for i in range(probs.shape[0]):
        units += [(probs[i], x[i], np.eye(m)[y[i]] - probs[i], f[i])] * int(t[i])
    top = bottom = 0.0
    for a, (pa, xa, ra, wa) in enumerate(units):
        for b, (pb, xb, rb, wb) in enumerate(units):
            if a != b:
                k = np.exp(-gamma_p * np.sum((pa - pb) ** 2) - gamma_x * np.sum((xa - xb) ** 2))
                top += wa * wb * k * float(ra @ rb)
                bottom += wa * wb
    return top / bottom


@pytest.mark.parametrize("kind", ["design", "frequency"])
def test_multiclass_weighted_klce_matches_the_double_loop_over_units(kind) -> None:
    from calaudit.local.weighted_klce import VectorUnits

    rng = np.random.default_rng(12)
    probs = rng.dirichlet(np.ones(3), 30)
    x = rng.normal(size=(30, 2))
    y = np.array([rng.choice(3, p=row) for row in probs])
    d = rng.integers(0, 4, 30).astype(float) if kind == "frequency" \
        else rng.exponential(1.0, 30)
    units = VectorUnits.of(SampleWeights(d, kind), probs)
    gamma_p, gamma_x = 2.0, 0.3
    gram = GaussianProductGram(np.column_stack([probs * np.sqrt(gamma_p),
                                                x * np.sqrt(gamma_x)]))
    t = d if kind == "frequency" else np.ones(30)
    f = np.ones(30) if kind == "frequency" else d
    want = loop_vector_klce(probs, x, y, t, f, gamma_p, gamma_x)
    assert weighted_klce2(gram, y, units) == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_multiclass_frequency_weights_equal_row_duplication_and_design_keeps_the_level() -> None:
    rng = np.random.default_rng(21)
    n = 150
    probs = rng.dirichlet(np.full(3, 2.0), n)
    y = np.array([rng.choice(3, p=row) for row in probs])
    frame = pd.DataFrame({"age": rng.normal(40, 10, n), "group": rng.choice(["a", "b"], n)})
    w = rng.integers(0, 4, n)
    repeat = np.repeat(np.arange(n), w)
    weighted = run(y, probs, frame, sample_weight=w)
    duplicated = run(y[repeat], probs[repeat], frame.iloc[repeat].reset_index(drop=True))
    a, b = weighted["local"]["klce"], duplicated["local"]["klce"]
    assert a["statistic"] == pytest.approx(b["statistic"], rel=1e-12, abs=1e-15)
    members = {t["id"]: t for t in weighted["tests"]}["local_consistency"]["params"]["members"]
    dup = {t["id"]: t for t in duplicated["tests"]}["local_consistency"]["params"]["members"]
    for mine, theirs in zip(members, dup, strict=True):
        assert mine["name"] == theirs["name"] and mine["df"] == theirs["df"]
        assert mine["statistic"] == pytest.approx(theirs["statistic"], rel=1e-10, abs=1e-15)
    assert len(a["per_class"]) == 3  # the one-vs-rest views
    for mine, theirs in zip(a["per_class"], b["per_class"], strict=True):
        assert mine["class"] == theirs["class"] and 0 < mine["p_value"] <= 1
        assert mine["statistic"] == pytest.approx(theirs["statistic"], rel=1e-12, abs=1e-15)
        assert mine["prob_kernel"]["bandwidth"] == pytest.approx(
            theirs["prob_kernel"]["bandwidth"], rel=1e-12)

    def make(rng):
        probs = rng.dirichlet(np.full(3, 2.0), 300)
        y = np.array([rng.choice(3, p=row) for row in probs])
        x = rng.normal(size=300)
        return y, probs, pd.DataFrame({"x": x}), {"sample_weight": np.exp(x),
                                                  "weight_kind": "design"}
    assert level_rejections(make, 30, 5) < 6 / 30  # Binomial(30, 0.05): P(>= 6) < 0.01


def test_a_weighted_local_failure_reads_the_same_in_every_output(tmp_path) -> None:
    import json
    import xml.etree.ElementTree as ET

    from tests.cli_inprocess import run_cli
    from tests.conftest import write_frame

    rng = np.random.default_rng(2)
    n = 600
    frame = pd.DataFrame({"prob": rng.uniform(0.05, 0.6, n), "race": rng.choice(["A", "B"], n)})
    truth = np.clip(frame["prob"] + 0.25 * (frame["race"] == "A"), 0, 1)
    frame["label"] = (rng.random(n) < truth).astype(int)
    frame["w"] = rng.integers(1, 4, n)
    path = write_frame(frame, tmp_path / "preds.csv")
    out = run_cli("test", path, "--label-col", "label", "--prob-cols", "prob", "--weight-col",
                  "w", "--covariates", "race", "--n-resamples", "99", "--local-resamples",
                  "99", "--json", tmp_path / "r.json", "--junit", tmp_path / "r.xml",
                  "--md", tmp_path / "r.md")
    assert out.code == 1, out.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    local = {t["id"]: t for t in result["tests"]}["local_consistency"]
    assert local["status"] == "FAIL" and local["params"]["weights"] == "frequency"
    case = [c for c in ET.parse(tmp_path / "r.xml").getroot().iter("testcase")
            if c.get("name") == "local_consistency"][0]
    assert case.find("failure") is not None
    assert "| test:local\\_consistency | FAIL |" in (tmp_path / "r.md").read_text()
    assert "local_consistency" in out.stdout and "FAIL" in out.stdout
