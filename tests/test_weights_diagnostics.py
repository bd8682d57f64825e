"""The local diagnostics on weighted rows: the groups' reliability panels against row
duplication and a direct loop over rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import calaudit
from calaudit import CalibrationData
from calaudit.audit.config import LocalConfig
from calaudit.data.weights import SampleWeights
from calaudit.local.group_reliability import group_panels
from calaudit.local.groups import GroupSpec
from calaudit.numerics.intervals import wilson_interval


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
