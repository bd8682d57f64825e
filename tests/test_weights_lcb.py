"""The local calibration bias on weighted rows: frequency weights against row duplication,
the weighted LCB, its pointwise standard errors and cross-validation score against loops
over rows (design weights, negatives kept at a rate)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import calaudit
from calaudit import CalibrationData
from calaudit.audit.config import LocalConfig
from tests.test_weights_diagnostics import biased_frame, same


def audit(y, p, frame, **weights) -> dict:
    data = CalibrationData.from_arrays(y, p, covariates=frame, categorical=["race"],
                                       **weights)
    config = calaudit.AuditConfig(n_resamples=99, random_state=4, local=LocalConfig(
        n_resamples=99, min_group_rows=20, lcb_cv_max_rows=5000))
    return calaudit.run_audit(data, config).to_dict()


def test_frequency_weighted_lcb_equals_the_repeated_rows() -> None:
    y, p, frame, rng = biased_frame(400, 3)
    w = rng.integers(0, 4, y.size)
    repeat = np.repeat(np.arange(y.size), w)
    weighted = audit(y, p, frame, sample_weight=w)
    repeated = audit(y[repeat], p[repeat], frame.iloc[repeat].reset_index(drop=True))
    mine, theirs = weighted["local"]["lcb"], repeated["local"]["lcb"]
    for key in ("summary", "prob_kernel", "cov_kernel", "view"):
        assert same(mine[key], theirs[key]), key
    for key in ("prob_bandwidth", "cov_bandwidths", "cv_curve", "rows_used", "refine_rows",
                "prob_grid", "cov_grid"):
        assert same(mine["bandwidth_selection"][key], theirs["bandwidth_selection"][key]), key
    first = {}
    for at, row in enumerate(theirs["points"]["row"]):
        first.setdefault(int(repeat[row]), at)
    assert len(mine["points"]["row"]) == np.count_nonzero(w) == len(first)
    for at, row in enumerate(mine["points"]["row"]):
        for key in ("lcb", "lcb_se", "lcb_low", "lcb_high", "prediction"):
            assert same(float(mine["points"][key][at]),
                        float(theirs["points"][key][first[int(row)]])), key
    for group, other in zip(weighted["groups"], repeated["groups"], strict=True):
        assert same(group["mean_lcb"], other["mean_lcb"])
    assert [g["group"] for g in mine["top_groups"]] == [g["group"] for g in theirs["top_groups"]]
    assert mine["curves"] == [] and theirs["curves"]


def kernel(prob, cov, prob_bw, cov_bws):
    """The LCB's product kernel by a double loop over rows."""
    n = prob.size
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = np.exp(-(prob[i] - prob[j]) ** 2 / (2 * prob_bw ** 2)
                               - sum((cov[i, c] - cov[j, c]) ** 2 / (2 * b ** 2)
                                     for c, b in enumerate(cov_bws)))
    return out


@pytest.mark.parametrize("rate", [None, 0.3])
def test_weighted_lcb_matches_a_loop_over_rows(rate) -> None:
    from calaudit.local.encoding import encode_covariates
    from calaudit.local.lcb_bandwidth import kernel_sums, loo_fit

    rng = np.random.default_rng(7)
    n = 160
    p = rng.uniform(0.05, 0.9, n)
    frame = pd.DataFrame({"age": rng.normal(40.0, 10.0, n)})
    y = (rng.random(n) < np.clip(p + 0.2 * (frame["age"] > 45), 0, 1)).astype(np.int64)
    d = rng.uniform(0.2, 3.0, n)
    extra = {} if rate is None else {"negative_rate": rate}
    data = CalibrationData.from_arrays(y, p, covariates=frame, sample_weight=d,
                                       weight_kind="design", **extra)
    config = calaudit.AuditConfig(n_resamples=99, random_state=4,
                                  local=LocalConfig(n_resamples=99, min_group_rows=20))
    lcb = calaudit.run_audit(data, config).to_dict()["local"]["lcb"]
    w = np.where(y == 1, d, d / (rate or 1.0))
    r = y - p
    encoded = encode_covariates(data.covariates, standardize=True, lazy=True, weights=d)
    cov = np.asarray(encoded.features[np.arange(n)], dtype=np.float64).reshape(n, -1)
    prob_bw = lcb["prob_kernel"]["bandwidth"]
    K = kernel(p, cov, prob_bw, [lcb["cov_kernel"]["bandwidths"]["age"]])
    values = np.array([sum(K[i, j] * w[i] * r[i] for i in range(n))
                       / sum(K[i, j] * w[i] for i in range(n)) for j in range(n)])
    se = np.array([np.sqrt(sum(K[i, j] ** 2 * w[i] ** 2 * r[i] ** 2 for i in range(n)))
                   / sum(K[i, j] * w[i] for i in range(n)) for j in range(n)])
    points = lcb["points"]
    rows = np.asarray(points["row"])
    assert rows.size == n
    np.testing.assert_allclose(points["lcb"], values[rows], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(points["lcb_se"], se[rows], rtol=1e-10, atol=1e-13)
    summary = lcb["summary"]
    mean = np.dot(w, values) / w.sum()
    assert summary["mean"] == pytest.approx(mean, rel=1e-10)
    assert summary["sd"] == pytest.approx(np.sqrt(np.dot(w, (values - mean) ** 2) / w.sum()),
                                          rel=1e-9)
    order = np.argsort(values)
    median = values[order][np.searchsorted(np.cumsum(w[order]), w.sum() / 2)]
    assert summary["quantiles"]["0.5"] == pytest.approx(median, rel=1e-12)
    # the CV score of the chosen bandwidths: leave the row (one unit of a design weight) out
    loo = np.array([sum(K[i, j] * w[i] * r[i] for i in range(n) if i != j)
                    / sum(K[i, j] * w[i] for i in range(n) if i != j) for j in range(n)])
    score = np.dot(w, (r - loo) ** 2) / w.sum()
    chosen = [c for c in lcb["bandwidth_selection"]["cv_curve"]
              if c["prob_bandwidth"] == prob_bw
              and c["cov_bandwidths"] == lcb["cov_kernel"]["bandwidths"]]
    assert chosen and chosen[0]["score"] == pytest.approx(score, rel=1e-9)
    weighted, mass = kernel_sums(p.reshape(-1, 1), prob_bw, cov,
                                 np.array([lcb["cov_kernel"]["bandwidths"]["age"]]), r, w)
    np.testing.assert_allclose(loo_fit(weighted, mass, r, w, w), loo, rtol=1e-10)
