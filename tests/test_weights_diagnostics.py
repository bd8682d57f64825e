"""The local diagnostics on weighted rows: the groups' reliability panels against row
duplication and a direct loop over rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

import calaudit
from calaudit import CalibrationData
from calaudit.audit.config import LocalConfig
from calaudit.data.weights import SampleWeights
from calaudit.local.group_reliability import group_panels
from calaudit.local.groups import GroupSpec
from calaudit.numerics.intervals import wilson_interval
from tests.reference import design_matrix


def biased_frame(n: int, seed: int):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.6, n)
    frame = pd.DataFrame({"race": rng.choice(["A", "B", "C"], n),
                          "age": rng.normal(40.0, 10.0, n)})
    y = (rng.random(n) < np.clip(p + 0.2 * (frame["race"] == "A"), 0, 1)).astype(np.int64)
    return y, p, frame, rng


def audit(y, p, frame, **weights) -> dict:
    data = CalibrationData.from_arrays(y, p, covariates=frame, categorical=["race"],
                                       **weights)
    config = calaudit.AuditConfig(n_resamples=99, random_state=4, local=LocalConfig(
        n_resamples=99, resample_dtype="float64", min_group_rows=20))
    return calaudit.run_audit(data, config).to_dict()


def same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12, abs=1e-15)
    return a == b


@pytest.fixture(scope="module")
def weighted_and_repeated():
    y, p, frame, rng = biased_frame(500, 3)
    w = rng.integers(0, 4, y.size)
    repeat = np.repeat(np.arange(y.size), w)
    return (audit(y, p, frame, sample_weight=w),
            audit(y[repeat], p[repeat], frame.iloc[repeat].reset_index(drop=True)))


def test_frequency_weighted_panels_equal_the_repeated_rows_panels(weighted_and_repeated):
    weighted, repeated = (r["local"]["group_reliability"] for r in weighted_and_repeated)
    assert len(weighted) == len(repeated) > 3
    for mine, theirs in zip(weighted, repeated, strict=True):
        assert mine["consistency_band"] is not None
        for key in theirs:
            if key == "bins":
                assert all(same(mine["bins"][k], theirs["bins"][k]) for k in theirs["bins"])
                assert mine["bins"]["effective_size"] == mine["bins"]["count"]
            elif key != "explained_by":
                assert same(mine[key], theirs[key]), (mine["group"], key)


@pytest.mark.parametrize("kind, rate", [("design", None), ("frequency", 0.3)])
def test_weighted_panel_bins_match_a_loop_over_rows(kind, rate) -> None:
    rng = np.random.default_rng(11)
    n = 400
    p = rng.uniform(0.0, 1.0, n)
    y = (rng.random(n) < p).astype(np.float64)
    d = rng.uniform(0.2, 3.0, n) if kind == "design" else rng.integers(0, 4, n).astype(float)
    weights = SampleWeights(d, kind, None if rate is None else np.full(n, rate))
    rows = np.flatnonzero(rng.random(n) < 0.6).astype(np.int32)
    table = [{"group": "g=a", "status": "PASS", "bias": 0.1, "n": 1.0}]
    spec = GroupSpec("g=a", "single", {"g": "a"}, rows)
    panel, = group_panels(table, [spec], y, p, n_bins=10, strategy="uniform",
                          n_resamples=None, level=0.95, rng=np.random.default_rng(0),
                          weights=weights)
    bins = panel["bins"]
    expected = {k: [] for k in ("lower", "count", "mean_score", "observed_rate",
                                "effective_size", "rate_low", "rate_high")}
    for b in range(10):
        total = score = events = squares = 0.0
        for i in rows:
            if min(9, max(0, int(np.ceil(10 * p[i])) - 1)) != b:
                continue
            w = d[i] if y[i] == 1 or rate is None else d[i] / rate
            total, score, events, squares = (total + w, score + w * p[i],
                                             events + w * y[i], squares + w * w)
        if total > 0:
            size = total * total / squares
            low, high = wilson_interval(np.array([events / total * size]), np.array([size]))
            for key, value in (("lower", b / 10), ("count", total),
                               ("mean_score", score / total),
                               ("observed_rate", events / total), ("effective_size", size),
                               ("rate_low", low[0]), ("rate_high", high[0])):
                expected[key].append(value)
    for key, values in expected.items():
        assert bins[key] == pytest.approx(values, rel=1e-12, abs=1e-14), key
    assert panel["consistency_band"] is None


def test_weighted_panel_bands_hold_a_calibrated_groups_rates() -> None:
    rng = np.random.default_rng(5)
    n = 3000
    p = rng.uniform(0.0, 1.0, n)
    y = (rng.random(n) < p / (p + 0.3 * (1 - p))).astype(np.float64)  # negatives kept at 0.3
    weights = SampleWeights(np.ones(n), "frequency", np.full(n, 0.3))
    spec = GroupSpec("g=a", "single", {"g": "a"}, np.arange(n, dtype=np.int32))
    table = [{"group": "g=a", "status": "PASS", "bias": 0.0, "n": float(n)}]
    panel, = group_panels(table, [spec], y, p, n_bins=5, strategy="uniform",
                          n_resamples=400, level=0.95, rng=np.random.default_rng(1),
                          weights=weights)
    band, rate = panel["consistency_band"], np.array(panel["bins"]["observed_rate"])
    assert band["level"] == 0.95 and band["n_resamples"] == 400
    assert np.all(np.array(band["low"]) < np.array(panel["bins"]["mean_score"]))
    assert np.all(np.array(band["high"]) > np.array(panel["bins"]["mean_score"]))
    assert np.mean((np.array(band["low"]) <= rate) & (rate <= np.array(band["high"]))) >= 0.6


def test_frequency_weighted_attribution_and_disparity_equal_the_repeated_rows(
        weighted_and_repeated):
    weighted, repeated = weighted_and_repeated
    section, theirs = weighted["attribution"], repeated["attribution"]
    assert section.pop("weights")["covariance"].startswith("model-based")
    assert same(section, theirs) and section["explaining"]
    assert same(weighted["disparity"], repeated["disparity"]) and weighted["disparity"]
    assert same([g.get("explained_by") for g in weighted["groups"]],
                [g.get("explained_by") for g in repeated["groups"]])
    assert any(g.get("explained_by") is not None for g in weighted["groups"])
    for panel in weighted["local"]["group_reliability"]:  # explained_by as the table's
        row, = (g for g in weighted["groups"] if g["group"] == panel["group"])
        assert panel["explained_by"] == row.get("explained_by")
    assert [item["id"] for item in weighted["data"]["weights"]["not_weighted"]] == [
        "skce_ul, skce_block"]


def region_rows(n: int, seed: int):
    """A binary model biased in one region; age has no effect; design weights that
    depend on the covariates."""
    rng = np.random.default_rng(seed)
    region = rng.choice(["N", "S", "E"], n)
    age = rng.choice(["young", "old"], n)
    p = rng.uniform(0.1, 0.8, n)
    truth = special.expit(special.logit(p) + 0.6 * (region == "S"))
    y = (rng.random(n) < truth).astype(np.float64)
    d = rng.uniform(0.3, 3.0, n) * np.where(age == "old", 2.0, 1.0)
    return y, p, region, age, d


def _sm_fit(y, offset, x, **weights):
    import statsmodels.api as sm

    model = sm.GLM(y, x, family=sm.families.Binomial(), offset=offset, **weights)
    robust = "var_weights" in weights
    result = model.fit(tol=1e-14, maxiter=200, **({"cov_type": "HC0"} if robust else {}))
    return np.asarray(result.params), np.asarray(result.cov_params())


@pytest.mark.parametrize("kind", ["frequency", "design"])
def test_the_weighted_fit_matches_statsmodels(kind) -> None:
    from calaudit.attribution.model import ModelRows, fit_glm, logit_offset
    from calaudit.attribution.weighted import ModelWeights

    y, p, region, age, d = region_rows(2000, 1)
    if kind == "frequency":
        d = np.round(d)
    mw = ModelWeights.of(SampleWeights(d, kind), y)
    terms, rows = build_levels(y, region, age, mw)
    offset = logit_offset(p)
    model = ModelRows.build(y, offset, p, terms, rows, mw.a, mw.m)
    for subset in (terms, terms[:1], []):
        fit = fit_glm(model, subset)
        x = design_matrix(subset, rows)
        key = "freq_weights" if kind == "frequency" else "var_weights"
        params, cov = _sm_fit(y[rows], offset[rows], x, **{key: d[rows]})
        np.testing.assert_allclose(fit.params, params, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(fit.cov, cov, rtol=1e-9, atol=1e-12)
        if kind == "frequency":  # the repeated rows' fit
            repeat = np.repeat(rows, d[rows].astype(np.int64))
            params, cov = _sm_fit(y[repeat], offset[repeat], design_matrix(subset, repeat))
            np.testing.assert_allclose(fit.params, params, rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(fit.cov, cov, rtol=1e-9, atol=1e-12)


def build_levels(y, region, age, mw):
    from calaudit.attribution.design import build_terms
    from calaudit.local.groups import Levels

    levels = [Levels(name, np.unique(v, return_inverse=True)[1], tuple(np.unique(v)))
              for name, v in (("region", region), ("age", age))]
    return build_terms(levels, ["categorical"] * 2, y, 30, 5, mw.a, mw.frequency)


@pytest.mark.parametrize("rate", [None, 0.4])
def test_weighted_attribution_matches_a_loop_over_rows(rate) -> None:
    """Design weights (and negatives kept at a rate): the Wald statistics of the sandwich
    covariance and the standardised biases against a row-by-row computation from the
    fitted coefficients."""
    from calaudit.attribution.explain import AttributionSettings, attribute
    from calaudit.attribution.weighted import ModelWeights
    from calaudit.local.groups import Levels

    y, p, region, age, d = region_rows(1500, 2)
    weights = SampleWeights(d, "design", None if rate is None else np.full(y.size, rate))
    mw = ModelWeights.of(weights, y)
    levels = [Levels(name, np.unique(v, return_inverse=True)[1], tuple(np.unique(v)))
              for name, v in (("region", region), ("age", age))]
    section = attribute(levels, ["categorical"] * 2, y, p, AttributionSettings(), "binary",
                        mw).section
    a = np.where(y > 0, d, d / (rate or 1.0))
    offset = special.logit(np.clip(p, 1e-6, 1 - 1e-6))
    x = np.column_stack([np.ones(y.size)] + [(v == level).astype(float)
                                             for v, level in ((region, "N"), (region, "S"),
                                                              (age, "old"))])
    beta = np.zeros(4)  # the full model by a plain weighted Newton loop
    for _ in range(50):
        q = special.expit(offset + x @ beta)
        beta += np.linalg.solve(x.T @ (x * (a * q * (1 - q))[:, None]), x.T @ (a * (y - q)))
    q = special.expit(offset + x @ beta)
    bread = np.linalg.inv(sum(a[i] * q[i] * (1 - q[i]) * np.outer(x[i], x[i])
                              for i in range(y.size)))
    meat = sum(a[i] ** 2 * (y[i] - q[i]) ** 2 * np.outer(x[i], x[i]) for i in range(y.size))
    cov = bread @ meat @ bread
    entries = {e["covariate"]: e for e in section["covariates"]}
    assert section["test"].startswith("Wald") and "lr_statistic" not in entries["region"]
    for name, columns in (("region", [1, 2]), ("age", [3])):
        b = beta[columns]
        wald = b @ np.linalg.solve(cov[np.ix_(columns, columns)], b)
        assert entries[name]["wald_statistic"] == pytest.approx(wald, rel=1e-8)
        assert entries[name]["p_value"] == pytest.approx(
            stats.chi2.sf(wald, len(columns)), rel=1e-7, abs=1e-300)
    assert entries["region"]["status"] == "FAIL" and entries["age"]["status"] == "PASS"
    z = stats.norm.ppf(0.975)
    for level in entries["region"]["levels"]:
        xs = x.copy()
        xs[:, 1:3] = [level["level"] == "N", level["level"] == "S"]
        total = 0.0
        grad = np.zeros(4)
        for i in range(y.size):
            qi = special.expit(offset[i] + xs[i] @ beta)
            total += a[i] * qi
            grad += a[i] * qi * (1 - qi) * xs[i]
        bias = total / a.sum() - np.dot(a, p) / a.sum()
        se = np.sqrt(grad @ cov @ grad) / a.sum()
        assert level["bias"] == pytest.approx(bias, rel=1e-9, abs=1e-12)
        assert level["ci"] == pytest.approx([bias - z * se, bias + z * se], rel=1e-7)
        w_level = a[region == level["level"]]
        assert level["n"] == pytest.approx(w_level.sum() ** 2 / (w_level ** 2).sum())


@pytest.mark.slow
def test_a_weighted_attribution_reads_the_same_in_every_output(tmp_path) -> None:
    import json
    import re
    import xml.etree.ElementTree as ET

    from tests.cli_inprocess import run_cli
    from tests.conftest import write_frame

    rng = np.random.default_rng(2)
    n = 900
    frame = pd.DataFrame({"prob": rng.uniform(0.05, 0.6, n), "race": rng.choice(["A", "B"], n),
                          "age": rng.choice(["young", "old"], n)})
    truth = np.clip(frame["prob"] + 0.25 * (frame["race"] == "A"), 0, 1)
    frame["label"] = (rng.random(n) < truth).astype(int)
    frame["w"] = rng.uniform(0.5, 2.0, n)
    path = write_frame(frame, tmp_path / "preds.csv")
    out = run_cli("test", path, "--label-col", "label", "--prob-cols", "prob", "--weight-col",
                  "w", "--weight-kind", "design", "--covariates", "race,age",
                  "--n-resamples", "99", "--local-resamples", "199", "--json",
                  tmp_path / "r.json", "--junit", tmp_path / "r.xml", "--md", tmp_path / "r.md",
                  "--html", tmp_path / "r.html")
    assert out.code == 1, out.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    section = result["attribution"]
    assert section["weights"]["covariance"].startswith("sandwich")
    assert section["explaining"] == ["race"] and "race explains it" in section["summary"]
    words = " ".join(section["summary"].split())
    html = re.sub(r"<[^>]+>", "", (tmp_path / "r.html").read_text())
    markdown = (tmp_path / "r.md").read_text()
    for text in (out.stdout.replace("│", " "), markdown, html):
        text = re.sub(r"\\([\[\]_])", r"\1", text.replace("&amp;", "&"))  # markdown escapes
        assert words in " ".join(text.split())
        line, = [part for part in text.split("\n") if "not weighted, left out" in part]
        assert "skce_ul, skce_block" in line and "LCB" not in line
        assert "smooth reliability diagram" not in line
    assert "Wald test of the sandwich covariance" in markdown
    assert "Wald test of the sandwich covariance" in html
    gaps = {gap["covariate"]: gap for gap in result["disparity"]}
    assert gaps["race"]["method"].endswith("(group table)")
    assert gaps["race"]["difference"] > 0.15 > gaps["age"]["difference"]
    for gap in gaps.values():
        assert f"| {gap['covariate']} | {gap['difference']:.3g} |" in markdown
    assert "reliability-by-group" in (tmp_path / "r.html").read_text()
    assert {p["group"] for p in result["local"]["group_reliability"]} >= {"race=A", "race=B"}
    from calaudit.output.formatting import fmt_signed

    lcb = result["local"]["lcb"]  # the weighted LCB's summary in both reports
    assert lcb["weights"]["kind"] == "design" and lcb["curves"] == []  # no numeric covariate
    for key in ("mean", "min", "max"):
        shown = fmt_signed(lcb["summary"][key])
        assert shown in markdown and shown in html, (key, shown)
    case, = [c for c in ET.parse(tmp_path / "r.xml").getroot().iter("testcase")
             if c.get("name") == "local_consistency"]
    assert case.find("failure") is not None


def test_multiclass_frequency_weighted_diagnostics_equal_the_repeated_rows() -> None:
    rng = np.random.default_rng(9)
    n = 500
    proba = rng.dirichlet([2, 2, 2], n)
    frame = pd.DataFrame({"race": rng.choice(["A", "B"], n), "age": rng.normal(40, 10, n)})
    wrong = (frame["race"] == "A").to_numpy() & (rng.random(n) < 0.3)
    y = np.where(wrong, proba.argmin(axis=1),
                 [rng.choice(3, p=row) for row in proba]).astype(np.int64)
    w = rng.integers(0, 4, n)
    repeat = np.repeat(np.arange(n), w)

    def run(y, proba, frame, **weights):
        data = CalibrationData.from_arrays(y, proba, covariates=frame, categorical=["race"],
                                           **weights)
        config = calaudit.AuditConfig(n_resamples=49, random_state=4, local=LocalConfig(
            n_resamples=49, min_group_rows=20, lcb_cv_max_rows=5000))
        return calaudit.run_audit(data, config).to_dict()

    mine = run(y, proba, frame, sample_weight=w)
    theirs = run(y[repeat], proba[repeat], frame.iloc[repeat].reset_index(drop=True))
    assert mine["attribution"]["view"] == "top-label"
    mine["attribution"].pop("weights")
    assert same(mine["attribution"], theirs["attribution"])
    assert same(mine["disparity"], theirs["disparity"])
    assert same(mine["local"]["lcb"]["summary"], theirs["local"]["lcb"]["summary"])
    assert same(mine["local"]["lcb"]["curves"], theirs["local"]["lcb"]["curves"])
    for panel, other in zip(mine["local"]["group_reliability"],
                            theirs["local"]["group_reliability"], strict=True):
        assert same(panel["consistency_band"], other["consistency_band"])
        assert same(panel["bins"]["observed_rate"], other["bins"]["observed_rate"])


def test_weighted_disparity_without_resampling_matches_a_loop() -> None:
    from calaudit.attribution.disparity import disparity
    from calaudit.local.group_moments import source_moments
    from calaudit.local.group_sources import GroupValues
    from calaudit.local.groups import GroupSpec
    from calaudit.local.weighted_groups import WeightedRows
    from calaudit.scale import ArrayRows

    rng = np.random.default_rng(4)
    n = 300
    p = rng.uniform(0.1, 0.7, n)
    y = (rng.random(n) < p + 0.1 * (np.arange(n) < 100)).astype(np.float64)
    d = rng.uniform(0.3, 3.0, n)
    rows = WeightedRows.of(SampleWeights(d, "design"), y, p)
    specs, table = [], []
    codes = (np.arange(n) >= 100).astype(np.int32)
    source = ArrayRows({"y": y, "p": p, "w": rows.w, "g": codes})
    moments = source_moments(source, [("g", 2)], weighted=True)[0]
    for code, part in enumerate((np.arange(0, 100), np.arange(100, 300))):
        e, w = y[part] - p[part], d[part]
        bias = np.dot(w, e) / w.sum()
        specs.append(GroupSpec(f"g={code}", "single", {"g": str(code)},
                               part.astype(np.int32), key=(0, code)))
        table.append({"group": f"g={code}", "status": "PASS", "bias": bias})
    values = GroupValues({s.name: moments[code] for code, s in enumerate(specs)}, {}, {},
                         None)
    gap, = disparity(table, specs, ["g"], values, np.random.default_rng(0), 99, 0.95,
                     resample=False, weighted=rows)

    def se(part):  # the larger of the linearised and the effective-size standard errors
        e, w = y[part] - p[part], d[part]
        bias, size = np.dot(w, e) / w.sum(), w.sum() ** 2 / np.dot(w, w)
        linearised = np.sqrt(part.size / (part.size - 1) * np.sum(w * w * (e - bias) ** 2)
                             ) / w.sum()
        return max(linearised, np.sqrt(np.sum(w * (e - bias) ** 2) / w.sum() / (size - 1)))

    spread = np.sqrt(se(specs[0].rows) ** 2 + se(specs[1].rows) ** 2)
    difference = abs(table[0]["bias"] - table[1]["bias"])
    assert gap["difference"] == pytest.approx(difference, rel=1e-12)
    assert gap["ci"] == pytest.approx([difference - stats.norm.ppf(0.975) * spread,
                                       difference + stats.norm.ppf(0.975) * spread], rel=1e-9)
