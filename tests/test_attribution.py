"""Attribution (recalibration GLM): LR tests against a direct Newton fit, standardised
biases, the summary sentence, explained_by, disparity; the issue's region case (small n)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import special, stats

from calaudit.attribution.design import build_terms
from calaudit.attribution.explain import AttributionSettings, attribute, summary_sentence
from calaudit.attribution.model import (
    ModelRows,
    covariate_tests,
    logit_offset,
    standardised_bias,
)
from calaudit.audit.config import AuditConfig, LocalConfig
from calaudit.audit.local_calibration import LocalCalibrationStage
from calaudit.audit.runner import run_audit
from calaudit.data.dataset import CalibrationData
from calaudit.local.groups import covariate_levels
from tests.reference import design_matrix
from validation.diagnosis_cases import one_region


def _newton(y, offset, x, steps=50):
    """Logistic regression with an offset by plain Newton-Raphson; returns the deviance."""
    beta = np.zeros(x.shape[1])
    for _ in range(steps):
        q = special.expit(offset + x @ beta)
        beta += np.linalg.solve(x.T @ (x * (q * (1 - q))[:, None]), x.T @ (y - q))
    q = special.expit(offset + x @ beta)
    return -2 * np.sum(y * np.log(q) + (1 - y) * np.log(1 - q)), beta


def _region_data(n=4000, seed=7):
    y, p, covs, bias = one_region(n, seed)
    data = CalibrationData.from_arrays(y, p, covariates=covs, categorical=["region", "gender"])
    return data, y.astype(float), p, covs, bias


def _terms(data, y):
    levels = [covariate_levels(c, 4) for c in data.covariates]
    return build_terms(levels, [c.kind for c in data.covariates], y, 30, 5)


def test_lr_tests_match_a_direct_newton_fit():
    data, y, p, _, _ = _region_data(2000, 3)
    terms, rows = _terms(data, y)
    offset = logit_offset(p)
    _, pvalues = covariate_tests(ModelRows.build(y, offset, p, terms, rows), terms)
    full, _ = _newton(y[rows], offset[rows], design_matrix(terms, rows))
    for term in terms:
        others = [t for t in terms if t.name != term.name]
        reduced, _ = _newton(y[rows], offset[rows], design_matrix(others, rows))
        null, _ = _newton(y[rows], offset[rows], design_matrix([], rows))
        alone, _ = _newton(y[rows], offset[rows], design_matrix([term], rows))
        df = len(term.columns)
        assert pvalues[term.name][0] == pytest.approx(stats.chi2.sf(reduced - full, df),
                                                      rel=1e-6, abs=1e-12)
        assert pvalues[term.name][1] == pytest.approx(stats.chi2.sf(null - alone, df),
                                                      rel=1e-6, abs=1e-12)


def test_standardised_bias_and_delta_interval():
    data, y, p, _, _ = _region_data(2000, 4)
    terms, rows = _terms(data, y)
    offset = logit_offset(p)
    model = ModelRows.build(y, offset, p, terms, rows)
    full, _ = covariate_tests(model, terms)
    _, beta = _newton(y[rows], offset[rows], design_matrix(terms, rows))
    south = terms[0].labels.index("South")
    x = design_matrix(terms, rows, ("region", south))
    direct = special.expit(offset[rows] + x @ beta).mean() - p[rows].mean()
    bias, low, high = standardised_bias(full, terms, model, "region", south, 1.96)
    assert bias == pytest.approx(direct, abs=1e-7)
    # delta method: numeric gradient of the standardised mean
    def mean_at(b):
        return special.expit(offset[rows] + x @ b).mean()
    grad = np.array([(mean_at(beta + e) - mean_at(beta - e)) / 2e-6
                     for e in np.eye(beta.size) * 1e-6])
    se = np.sqrt(grad @ full.cov @ grad)
    assert (high - low) / 2 == pytest.approx(1.96 * se, rel=1e-4)


def test_region_case_names_region_and_marks_spill_over_explained():
    data, y, p, covs, bias = _region_data()
    config = AuditConfig(seed=1, n_resamples=50,
                         local=LocalConfig(tests=("none",), group_ci_resamples=100))
    out = LocalCalibrationStage().run(data, config, np.random.default_rng(1))
    by_name = {e["covariate"]: e for e in out.attribution["covariates"]}
    assert by_name["region"]["p_value_adjusted"] < 0.001
    assert by_name["region"]["status"] == "FAIL"
    assert by_name["gender"]["p_value_adjusted"] > 0.05
    assert by_name["age"]["p_value_adjusted"] > 0.05
    assert out.attribution["summary"].startswith("region explains it: South ")
    assert out.attribution["role"] == "diagnostic"
    groups = {g["group"]: g for g in out.groups}
    assert abs(groups["region=South"]["mean_lcb"] - 0.11) <= 0.3 * 0.11
    for region in ("North", "East", "West", "Central"):
        assert abs(groups[f"region={region}"]["mean_lcb"]) < 0.02
    spill = [g for g in out.groups if g["status"] == "FAIL" and "region" not in g["covariates"]]
    assert all(g["explained_by"] == ["region"] for g in spill)
    assert groups["region=South"]["explained_by"] == []
    assert all(g["explained_by"] is None for g in out.groups if g["status"] != "FAIL")
    region = next(d for d in out.disparity if d["covariate"] == "region")
    biases = [g["bias"] for g in out.groups if g["kind"] == "single"
              and "region" in g["covariates"]]
    assert region["difference"] == pytest.approx(max(biases) - min(biases))
    assert region["ci"][0] <= region["difference"] <= region["ci"][1]
    panels = out.local["group_reliability"]
    assert panels[0]["group"] == "region=South" and panels[0]["consistency_band"] is not None


def test_sentence_wording():
    entry = {"covariate": "region", "status": "FAIL", "levels": [
        {"level": "South", "bias": 0.112, "ci": [0.09, 0.13]},
        {"level": "North", "bias": 0.004, "ci": [-0.01, 0.02]}]}
    section = {"covariates": [entry, {"covariate": "gender", "status": "PASS", "levels": []},
                              {"covariate": "age", "status": "PASS", "levels": []}]}
    groups = [{"group": "region=South", "bias": 0.114, "bias_ci": [0.085, 0.141]}]
    assert summary_sentence(section, groups) == (
        "region explains it: South +0.114 [+0.085, +0.141]; after adjusting for region, gender "
        "and age show no bias")
    assert summary_sentence(section).startswith("region explains it: South adjusted +0.112 "
                                                "[+0.090, +0.130]")
    for e in section["covariates"]:
        e["status"] = "PASS"
    assert summary_sentence(section).startswith("no covariate explains a bias")


def _entry(name, status, levels, alone=0.5, given=0.5):
    return {"covariate": name, "status": status, "p_value_adjusted": given,
            "p_value_alone_adjusted": alone,
            "levels": [{"level": lv, "bias": b, "ci": ci} for lv, b, ci in levels]}


def test_sentence_names_covariates_that_carry_the_same_signal():
    """Two covariates each biased alone but neither given the other (collinear): the
    sentence says they carry the same signal instead of 'no covariate explains a bias'."""
    section = {"alpha": 0.05, "covariates": [
        _entry("student", "PASS", [("No", 0.004, [-0.002, 0.010]),
                                   ("Yes", -0.012, [-0.020, -0.004])], alone=1e-4),
        _entry("income", "PASS", [("[0, 20]", -0.010, [-0.018, -0.002]),
                                  ("(20, 70]", 0.003, [-0.003, 0.009])], alone=0.003)]}
    groups = [{"group": "student=Yes", "bias": -0.026, "bias_ci": [-0.038, -0.013]}]
    sentence = summary_sentence(section, groups)
    assert sentence.startswith("student or income: they carry the same signal")
    assert "Yes -0.026 [-0.038, -0.013]" in sentence  # the group table's numbers
    assert "income [0, 20] adjusted -0.010" not in sentence
    assert "[0, 20] adjusted -0.010 [-0.018, -0.002]" in sentence  # no group row: labelled
    assert "no covariate explains" not in sentence


def test_sentence_quotes_the_group_table_only_when_it_tells_the_same():
    """A group interval through 0 (simultaneous over many groups) beside an attribution
    that finds the level biased: the sentence quotes the adjusted bias, labelled."""
    section = {"alpha": 0.05, "covariates": [
        _entry("sex", "FAIL", [("Male", 0.025, [0.012, 0.038]),
                               ("Female", -0.023, [-0.04, -0.006])], 1e-3, 1e-3)]}
    groups = [{"group": "sex=Male", "bias": 0.023, "bias_ci": [-0.005, 0.050]},
              {"group": "sex=Female", "bias": -0.030, "bias_ci": [-0.050, -0.010]}]
    sentence = summary_sentence(section, groups)
    assert "Male adjusted +0.025 [+0.012, +0.038]" in sentence
    assert "Female -0.030 [-0.050, -0.010]" in sentence


def test_sentence_does_not_call_an_overall_shift_explained():
    """Every level biased the same way: an overall miscalibration, not explained by the
    covariate."""
    bands = [(f"band {k}", b, [b - 0.02, b + 0.02]) for k, b in
             enumerate((-0.20, -0.17, -0.15, -0.14))]
    section = {"alpha": 0.05, "covariates": [_entry("ink", "FAIL", bands, 1e-6, 1e-6)]}
    sentence = summary_sentence(section)
    assert "ink explains" not in sentence
    assert sentence.startswith("the model is biased the same way in every level of ink "
                               "(-0.200 to -0.140): an overall shift")


def test_sentence_after_a_local_test_that_did_not_reject_is_a_lead():
    section = {"alpha": 0.05, "covariates": [
        _entry("Age", "FAIL", [("[28, 46]", -0.063, [-0.126, -0.001])], 0.01, 0.011),
        _entry("Sex", "PASS", [("F", -0.05, [-0.1, 0.01])])]}
    sentence = summary_sentence(section, local_rejected=False)
    assert sentence.startswith("the local test does not reject; the recalibration model "
                               "points at Age (adjusted p Age 0.011)")
    assert "a lead to check, not a finding" in sentence and "explains" not in sentence
    assert summary_sentence(section, local_rejected=True).startswith("Age explains it")


def test_sentence_names_a_covariate_whose_signal_another_carries():
    section = {"alpha": 0.05, "covariates": [
        _entry("region", "FAIL", [("South", 0.112, [0.09, 0.13])], 1e-9, 1e-9),
        _entry("state", "PASS", [("TX", 0.1, [0.05, 0.15])], alone=1e-5)]}
    assert summary_sentence(section).endswith(
        "after adjusting for region, state shows no bias (state alone does: the same "
        "signal as region)")


def test_fit_failure_is_inconclusive():
    levels = [covariate_levels(type("C", (), {"name": "g", "kind": "categorical",
                                               "values": np.zeros(50, int),
                                               "categories": ("a",)})(), 4)]
    rng = np.random.default_rng(0)
    p = rng.uniform(0.2, 0.8, 50)
    out = attribute(levels, ["categorical"], (rng.random(50) < p).astype(float), p,
                    AttributionSettings())
    assert out.section["covariates"][0]["status"] == "INCONCLUSIVE"


def test_audit_result_json_carries_the_new_sections():
    data, *_ = _region_data(600, 2)
    config = AuditConfig(seed=3, n_resamples=50,
                         local=LocalConfig(n_resamples=20, group_ci_resamples=50))
    result = run_audit(data, config)
    doc = json.loads(json.dumps(result.to_dict()))
    assert {"attribution", "disparity"} <= doc.keys()
    assert result.attribution["covariates"][0]["covariate"] == "region"
    assert {"covariate", "p_value", "p_value_adjusted", "status", "levels"} <= \
        doc["attribution"]["covariates"][0].keys()
    assert {"level", "bias", "ci"} <= doc["attribution"]["covariates"][0]["levels"][0].keys()
    assert all("explained_by" in g for g in doc["groups"])
    assert "cv_curve" in doc["local"]["lcb"]["bandwidth_selection"]
    assert len(doc["disparity"]) == 3


def test_disparity_normal_interval_without_resampling():
    from calaudit.attribution.disparity import disparity
    from calaudit.local.group_sources import level_table
    from calaudit.local.groups import GroupSettings

    rng = np.random.default_rng(0)
    n = 900
    codes = rng.integers(0, 3, n)
    p = rng.uniform(0.2, 0.8, n)
    y = (rng.random(n) < p + np.array([0.1, 0.0, -0.1])[codes]).astype(float)
    cov = type("C", (), {"name": "g", "kind": "categorical", "values": codes,
                         "categories": ("a", "b", "c")})()
    specs, table, values = level_table(None, [covariate_levels(cov, 4)], False, y, p, None,
                                       rng, GroupSettings(resample=False))
    (entry,) = disparity(table, specs, ["g"], values, rng, 100, 0.95, resample=False)
    d = y - p
    top, bottom = np.flatnonzero(codes == 0), np.flatnonzero(codes == 2)
    se = np.sqrt(d[top].var(ddof=1) / top.size + d[bottom].var(ddof=1) / bottom.size)
    diff = d[top].mean() - d[bottom].mean()
    assert entry["difference"] == pytest.approx(diff)
    assert entry["ci"] == pytest.approx([diff - 1.959964 * se, diff + 1.959964 * se], rel=1e-5)
    assert entry["largest"]["group"] == "g=a" and entry["smallest"]["group"] == "g=c"


def _statsmodels_fit(y, offset, x):
    import statsmodels.api as sm

    res = sm.GLM(y, x, family=sm.families.Binomial(), offset=offset).fit(tol=1e-14,
                                                                         maxiter=200)
    return res.deviance, np.asarray(res.params), np.asarray(res.cov_params())


@pytest.mark.parametrize("part_rows", [64, 65_536])
def test_irls_on_cell_sums_matches_statsmodels(monkeypatch, part_rows):
    """The reduction fit (per-cell sums over row chunks) against statsmodels' IRLS on the
    dense design: deviance, coefficients and covariance to 1e-10, whatever the chunk size."""
    from calaudit.attribution import irls
    from calaudit.attribution.model import fit_glm

    monkeypatch.setattr(irls, "PART_ROWS", part_rows)
    data, y, p, _, _ = _region_data(3000, 5)
    terms, rows = _terms(data, y)
    offset = logit_offset(p)
    model = ModelRows.build(y, offset, p, terms, rows)
    for subset in (terms, terms[1:], terms[:1], []):
        fit = fit_glm(model, subset)
        dev, params, cov = _statsmodels_fit(y[rows], offset[rows], design_matrix(subset, rows))
        assert fit.deviance == pytest.approx(dev, rel=1e-10)
        np.testing.assert_allclose(fit.params, params, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(fit.cov, cov, rtol=1e-10, atol=1e-12)


def test_cells_reproduce_the_dense_design_and_sums():
    from calaudit.attribution.design import Cells
    from calaudit.attribution.irls import fitted, glm_partial, model_rows, ordered_sum

    data, y, p, _, _ = _region_data(1500, 6)
    terms, rows = _terms(data, y)
    offset = logit_offset(p)[rows]
    cells = Cells.build(terms, rows)
    for subset, override in ((terms, None), (terms[::-1][:2], (terms[0].name, 1)), ([], None)):
        np.testing.assert_array_equal(cells.design(subset, override)[cells.cell],
                                      design_matrix(subset, rows, override))
    x = design_matrix(terms, rows)
    beta = np.random.default_rng(0).normal(0, 0.3, x.shape[1])
    q = special.expit(offset + x @ beta)
    design = cells.design(terms)
    sums = ordered_sum(glm_partial, rows.size, {"rows": model_rows(y[rows], offset, cells.cell),
                                                "cell_eta": design @ beta})
    np.testing.assert_allclose(design.T @ (design * sums["weight"][:, None]),
                               x.T @ (x * (q * (1 - q))[:, None]), rtol=1e-12)
    np.testing.assert_allclose(design.T @ sums["residual"], x.T @ (y[rows] - q),
                               rtol=1e-10, atol=1e-10)
    dense_dev = -2 * np.sum(y[rows] * np.log(q) + (1 - y[rows]) * np.log(1 - q))
    assert sums["deviance"][0] == pytest.approx(dense_dev, rel=1e-12)
    np.testing.assert_allclose(fitted(offset, cells.cell, design @ beta), q, rtol=1e-14)


def test_separated_fit_raises_a_fit_error():
    from calaudit.attribution.explain import FIT_ERRORS
    from calaudit.attribution.irls import fit_many, model_rows

    cell = np.repeat([0, 1], 50).astype(np.int32)
    rows = model_rows((cell == 1).astype(float), np.zeros(100), cell)
    (result,) = fit_many(100, [np.array([[1.0, 0.0], [1.0, 1.0]])], rows)
    assert isinstance(result, FIT_ERRORS)


def test_disparity_above_the_normal_rule_matches_the_row_bootstrap(monkeypatch):
    """Levels of NORMAL_MIN_ROWS+ rows: the disparity interval from normal draws of the
    level means agrees with the stratified row bootstrap (the old path) to Monte Carlo
    error."""
    from calaudit.attribution.disparity import disparity
    from calaudit.local import groups as grp
    from calaudit.local.group_sources import level_table

    rng = np.random.default_rng(0)
    n = 3 * grp.NORMAL_MIN_ROWS
    codes = np.repeat([0, 1, 2], grp.NORMAL_MIN_ROWS)
    p = rng.uniform(0.2, 0.8, n)
    y = (rng.random(n) < p + np.array([0.02, 0.0, -0.01])[codes]).astype(float)
    levels = [grp.Levels("g", codes, ("a", "b", "c"))]

    def table(seed):
        return level_table(None, levels, False, y, p, None, np.random.default_rng(seed),
                           grp.GroupSettings(resample=False))

    specs, rows, values = table(0)
    (new,) = disparity(rows, specs, ["g"], values, np.random.default_rng(1), 2000, 0.95)
    monkeypatch.setattr(grp, "NORMAL_MIN_ROWS", 10**9)  # every level's rows gathered
    specs, rows, values = table(0)
    assert set(values.gathered) == {"g=a", "g=b", "g=c"}
    (old,) = disparity(rows, specs, ["g"], values, np.random.default_rng(1), 2000, 0.95)
    width = old["ci"][1] - old["ci"][0]
    assert new["ci"] == pytest.approx(old["ci"], abs=0.08 * width)
    assert new["difference"] == old["difference"]


def test_cells_without_mixed_radix_keys_are_the_same(monkeypatch):
    from calaudit.attribution import design

    data, y, p, _, _ = _region_data(800, 8)
    terms, rows = _terms(data, y)
    keyed = design.Cells.build(terms, rows)
    monkeypatch.setattr(design, "MAX_KEYS", 1.0)
    unkeyed = design.Cells.build(terms, rows)
    np.testing.assert_array_equal(keyed.cell, unkeyed.cell)
    np.testing.assert_array_equal(keyed.codes, unkeyed.codes)
    np.testing.assert_array_equal(unkeyed.design(terms)[unkeyed.cell],
                                  design_matrix(terms, rows))
