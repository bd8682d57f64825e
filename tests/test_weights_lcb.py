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
    assert mine["curves"] and same(mine["curves"], theirs["curves"])


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
    # design weights: the linearised ratio's standard error, residuals about LCB_j
    se = np.array([np.sqrt(sum(K[i, j] ** 2 * w[i] ** 2 * (r[i] - values[j]) ** 2
                               for i in range(n)))
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
    # the curve against age: weighted Gaussian average of the LCB values, HC0 band
    curve, = lcb["curves"][0]["groups"]
    x = frame["age"].to_numpy()
    grid, h = np.asarray(curve["x"]), curve["bandwidth"]
    kish = w.sum() ** 2 / (w ** 2).sum()
    mean_x = np.dot(w, x) / w.sum()
    sd = np.sqrt(np.dot(w, (x - mean_x) ** 2) / w.sum() * kish / (kish - 1))
    order = np.argsort(x)
    cumulative = np.cumsum(w[order])

    def quantile(q):
        return x[order][np.searchsorted(cumulative, q * w.sum())]

    spread = min(sd, (quantile(0.75) - quantile(0.25)) / 1.34)
    assert h == pytest.approx(0.9 * spread * kish ** -0.2, rel=1e-12)
    assert grid[0] == quantile(0.02) and grid[-1] == quantile(0.98)
    assert curve["n"] == pytest.approx(kish, rel=1e-12)
    D = np.array([sum(K[i, j] * w[i] for i in range(n)) for j in range(n)])
    for t, at in enumerate(grid):
        g = w * np.exp(-0.5 * ((at - x) / h) ** 2)
        assert curve["lcb"][t] == pytest.approx(np.dot(g, values) / g.sum(), rel=1e-10)
        coefficient = K @ (g / (g.sum() * D))  # of r_i / w_i: sum_j K_ij w_j(t) / D_j
        se_t = np.sqrt(np.sum((w * coefficient * r) ** 2))
        assert curve["se"][t] == pytest.approx(se_t, rel=1e-9)
    weighted, mass = kernel_sums(p.reshape(-1, 1), prob_bw, cov,
                                 np.array([lcb["cov_kernel"]["bandwidths"]["age"]]), r, w)
    np.testing.assert_allclose(loo_fit(weighted, mass, r, w, w), loo, rtol=1e-10)


def diagnostics_bytes(executor, monkeypatch) -> str:
    """A weighted audit with covariates (attribution, LCB with curves, panels, disparity),
    its reductions cut into several tasks."""
    import json

    from calaudit.attribution import irls
    from calaudit.local import lcb_curves

    monkeypatch.setattr(irls, "PART_ROWS", 128)
    monkeypatch.setattr(lcb_curves, "CURVE_ROWS", 128)
    y, p, frame, rng = biased_frame(600, 5)
    data = CalibrationData.from_arrays(y, p, covariates=frame, categorical=["race"],
                                       sample_weight=rng.uniform(0.3, 3.0, y.size),
                                       weight_kind="design", negative_rate=0.5)
    config = calaudit.AuditConfig(n_resamples=49, random_state=6, executor=executor,
                                  local=LocalConfig(n_resamples=49, min_group_rows=20))
    payload = calaudit.run_audit(data, config).to_dict()
    return json.dumps({k: payload[k] for k in ("local", "groups", "attribution", "disparity")},
                      sort_keys=True, default=str)


def test_weighted_diagnostics_give_the_same_bytes_on_threads_and_dask(monkeypatch,
                                                                      one_worker) -> None:
    from calaudit.scale import DaskExecutor, SerialExecutor, ThreadExecutor
    from tests.conftest import dask_partials

    serial = diagnostics_bytes(SerialExecutor(), monkeypatch)
    assert diagnostics_bytes(ThreadExecutor(2), monkeypatch) == serial
    calls = dask_partials(monkeypatch)
    assert diagnostics_bytes(DaskExecutor(one_worker), monkeypatch) == serial
    for partial in ("glm_partial", "mean_partial", "curve_sums_partial",
                    "_row_products_partial"):
        assert partial in calls, f"{partial} did not run on the executor"
