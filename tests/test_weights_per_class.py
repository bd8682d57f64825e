"""The one-vs-rest reliability panels of a multi-class model on weighted rows: frequency
weights against the repeated rows (bands included), design weights against a loop over
rows, and a weighted multi-class audit that shows them in JSON and the reports."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import calaudit
from calaudit import CalibrationData
from calaudit.data.weights import SampleWeights
from calaudit.inference.weighted_diagrams import weighted_reliability
from calaudit.metrics.consistency import consistency_band
from calaudit.metrics.reliability import reliability_bins
from calaudit.numerics.intervals import wilson_interval
from tests.cli_inprocess import run_cli


def three_classes(n: int, seed: int):
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 1.5, (n, 3))
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(proba, axis=1)).sum(axis=1).astype(np.int64)
    return y, proba, rng


def weighted_per_class(y, proba, weights, **options):
    """The one-vs-rest panels of :func:`weighted_reliability` (the top-label panel's band
    drawn first)."""
    return weighted_reliability(y, proba, weights, weights.design,
                                **options)["reliability_per_class"]


def test_frequency_weighted_panels_equal_the_repeated_rows_panels() -> None:
    y, proba, rng = three_classes(300, 1)
    w = rng.integers(0, 4, y.size)
    repeat = np.repeat(np.arange(y.size), w)
    mine = weighted_per_class(y, proba, SampleWeights(w.astype(float), "frequency"),
                              n_bins=10, band_resamples=200, rng=np.random.default_rng(7),
                              classes=["a", "b", "c"])
    rng = np.random.default_rng(7)  # the repeated rows' panels, bands in class order
    consistency_band(proba[repeat].max(axis=1), n_bins=10, strategy="uniform",
                     n_resamples=200, level=0.95, rng=rng)  # the top-label panel's first
    theirs = []
    for k, name in enumerate("abc"):
        scores = np.ascontiguousarray(proba[repeat, k])
        bins = reliability_bins(scores, (y[repeat] == k).astype(float), n_bins=10,
                                strategy="uniform").to_dict()
        band = consistency_band(scores, n_bins=10, strategy="uniform", n_resamples=200,
                                level=0.95, rng=rng).to_dict()
        theirs.append({"class": name, "bins": bins, "consistency_band": band})
    assert [p["class"] for p in mine] == ["a", "b", "c"]
    for panel, other in zip(mine, theirs, strict=True):
        for key, values in other["bins"].items():
            assert panel["bins"][key] == pytest.approx(values, rel=1e-12, abs=1e-15), key
        assert panel["bins"]["effective_size"] == panel["bins"]["count"]
        for key, values in other["consistency_band"].items():
            assert panel["consistency_band"][key] == pytest.approx(values, rel=1e-12), key


def test_frequency_weighted_audit_draws_the_repeated_rows_panels() -> None:
    y, proba, rng = three_classes(300, 4)
    w = rng.integers(0, 4, y.size)
    repeat = np.repeat(np.arange(y.size), w)
    config = calaudit.AuditConfig(n_resamples=99, random_state=4)
    mine, theirs = (calaudit.run_audit(data, config).to_dict()["diagrams"]
                    for data in (CalibrationData.from_arrays(y, proba, sample_weight=w),
                                 CalibrationData.from_arrays(y[repeat], proba[repeat])))
    assert len(mine["reliability_per_class"]) == 3
    for panel, other in zip(mine["reliability_per_class"], theirs["reliability_per_class"],
                            strict=True):
        assert panel["class"] == other["class"]
        for part in ("bins", "consistency_band"):
            for key, values in other[part].items():
                assert panel[part][key] == pytest.approx(values, rel=1e-12, abs=1e-15), key


def test_design_weighted_panel_bins_match_a_loop_over_rows() -> None:
    y, proba, rng = three_classes(250, 2)
    d = rng.uniform(0.2, 3.0, y.size)
    d[:10] = 0.0
    panels = weighted_per_class(y, proba, SampleWeights(d, "design"), n_bins=8,
                                rng=np.random.default_rng(0))
    for k, panel in enumerate(panels):
        assert panel["class"] == str(k) and panel["consistency_band"] is None
        expected = {key: [] for key in ("lower", "upper", "count", "mean_score",
                                        "observed_rate", "effective_size", "rate_low",
                                        "rate_high")}
        for b in range(8):
            total = score = events = squares = 0.0
            for i in range(y.size):
                if min(7, max(0, int(np.ceil(8 * proba[i, k])) - 1)) != b or d[i] == 0:
                    continue
                total, score, squares = total + d[i], score + d[i] * proba[i, k], \
                    squares + d[i] ** 2
                events += d[i] * (y[i] == k)
            if total > 0:
                size = total * total / squares
                low, high = wilson_interval(np.array([events / total * size]),
                                            np.array([size]))
                for key, value in (("lower", b / 8), ("upper", (b + 1) / 8),
                                   ("count", total), ("mean_score", score / total),
                                   ("observed_rate", events / total),
                                   ("effective_size", size), ("rate_low", low[0]),
                                   ("rate_high", high[0])):
                    expected[key].append(value)
        for key, values in expected.items():
            assert panel["bins"][key] == pytest.approx(values, rel=1e-12, abs=1e-14), key


@pytest.mark.slow
def test_weighted_multiclass_audit_shows_the_panels(tmp_path) -> None:
    y, proba, rng = three_classes(400, 3)
    frame = pd.DataFrame({"label": y, "p0": proba[:, 0], "p1": proba[:, 1],
                          "p2": proba[:, 2], "w": rng.uniform(0.5, 2.0, y.size)})
    frame.to_csv(tmp_path / "preds.csv", index=False)
    out = run_cli("test", tmp_path / "preds.csv", "--label-col", "label", "--prob-cols",
                  "p0,p1,p2", "--weight-col", "w", "--weight-kind", "design",
                  "--n-resamples", "99", "--json", tmp_path / "r.json", "--md",
                  tmp_path / "r.md", "--html", tmp_path / "r.html")
    assert out.code in (0, 1), out.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    panels = result["diagrams"]["reliability_per_class"]
    assert [p["class"] for p in panels] == ["p0", "p1", "p2"]
    assert all(p["consistency_band"]["n_resamples"] == 99 for p in panels)
    assert all(sum(p["bins"]["count"]) == pytest.approx(frame["w"].sum()) for p in panels)
    assert "reliability_per_class" not in json.dumps(result["data"]["weights"])
    for suffix in ("html", "md"):
        report = (tmp_path / f"r.{suffix}").read_text()
        assert "Reliability per class (one-vs-rest)" in report, suffix
        assert "All 3 classes, one-vs-rest." in report, suffix
