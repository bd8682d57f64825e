"""The diagrams stage: consistency bands, score histograms and per-class bins."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from calaudit.audit.config import AuditConfig, BinningConfig
from calaudit.audit.diagrams import DiagramsStage
from calaudit.audit.runner import run_audit
from calaudit.data.dataset import CalibrationData
from calaudit.data.load import load
from calaudit.metrics.consistency import consistency_band
from calaudit.metrics.diagrams import score_histogram
from calaudit.metrics.ece import binned_calibration
from calaudit.numerics.random import stream
from tests.reference_diagrams import band_loops, exact_rate_quantile, histogram_loops

SAMPLES = Path(__file__).resolve().parents[1] / "sample_data"


def test_band_matches_loop_reference():
    rng = np.random.default_rng(3)
    scores = rng.beta(0.7, 1.5, 60)
    scores[:3] = (0.0, 1.0, 0.5)
    band = consistency_band(scores, n_bins=6, n_resamples=50, level=0.9,
                            rng=np.random.default_rng(11))
    low, high = band_loops(scores, 6, 50, 0.9, np.random.default_rng(11))
    np.testing.assert_allclose(band.low, low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(band.high, high, rtol=0, atol=1e-12)


def test_band_converges_to_exact_poisson_binomial_quantiles():
    rng = np.random.default_rng(5)
    scores = rng.uniform(0.02, 0.98, 300)
    band = consistency_band(scores, n_bins=5, n_resamples=20000, level=0.9,
                            rng=np.random.default_rng(1))
    edges = np.linspace(0, 1, 6)
    for b in range(5):
        members = scores[(scores > edges[b]) & (scores <= edges[b + 1])]
        step = 1.0 / members.size
        assert abs(band.low[b] - exact_rate_quantile(members, 0.05)) <= step + 1e-12
        assert abs(band.high[b] - exact_rate_quantile(members, 0.95)) <= step + 1e-12


def test_band_follows_the_bins_of_the_reliability_diagram():
    rng = np.random.default_rng(8)
    scores = rng.beta(2, 5, 500)
    outcomes = (rng.random(500) < scores).astype(float)
    for strategy in ("uniform", "quantile"):
        band = consistency_band(scores, n_bins=12, strategy=strategy, n_resamples=200,
                                rng=np.random.default_rng(0))
        y_proba = np.column_stack([1 - scores, scores])
        bins = binned_calibration(outcomes.astype(np.int64), y_proba, n_bins=12,
                                  strategy=strategy)
        assert band.low.shape == bins.count.shape
        assert np.all(band.low <= band.high)
        # the band of a calibrated model is centred near each bin's mean score
        inside = (band.low <= bins.mean_score + 1e-9) & (bins.mean_score <= band.high + 1e-9)
        assert inside.mean() > 0.9


def test_histogram_is_right_closed_and_complete():
    scores = np.array([0.0, 0.02, 0.5, 0.51, 0.999, 1.0, 0.25])
    hist = score_histogram(scores, n_bins=4)
    assert hist["counts"] == histogram_loops(scores, 4) == [3, 1, 1, 2]
    assert hist["edges"] == [0.0, 0.25, 0.5, 0.75, 1.0]


def _audit_diagrams(data, **config):
    return run_audit(data, AuditConfig(**config)).to_dict()["diagrams"]


def test_binary_stage_output_on_sample_data():
    data = load(SAMPLES / "credit_default.csv")
    diagrams = _audit_diagrams(data, n_resamples=200)
    reliability = diagrams["reliability"]
    assert reliability["notion"] == "binary"
    assert "reliability_per_class" not in diagrams
    bins, band = reliability["bins"], reliability["consistency_band"]
    assert len(band["low"]) == len(bins["count"]) == len(band["high"])
    assert band["n_resamples"] == 200 and band["level"] == 0.95
    assert sum(reliability["histogram"]["counts"]) == data.n == sum(bins["count"])


def test_multiclass_stage_gives_one_panel_per_class():
    data = load(SAMPLES / "image_classifier.npz")
    diagrams = _audit_diagrams(data, n_resamples=100, binning=BinningConfig(n_bins=10))
    assert diagrams["reliability"]["notion"] == "top-label"
    per_class = diagrams["reliability_per_class"]
    assert [p["class"] for p in per_class] == list(data.classes)
    for k, panel in enumerate(per_class):
        events = int(sum(np.array(panel["bins"]["count"]) *
                         np.array(panel["bins"]["observed_rate"])).round())
        assert events == int((data.y_true == k).sum())
        assert len(panel["consistency_band"]["low"]) == len(panel["bins"]["count"])


def test_estimates_only_run_records_no_band():
    data = load(SAMPLES / "credit_default.csv")
    diagrams = _audit_diagrams(data, run_tests=False)
    assert diagrams["reliability"]["consistency_band"] is None
    assert diagrams["reliability"]["bins"]["count"]


def test_stage_is_deterministic_per_seed():
    data = CalibrationData.from_arrays(np.array([0, 1, 1, 0, 1] * 40),
                                       np.linspace(0.05, 0.95, 200))
    config = AuditConfig(n_resamples=100)
    first = DiagramsStage().run(data, config, stream(4, "diagrams"))
    again = DiagramsStage().run(data, config, stream(4, "diagrams"))
    other = DiagramsStage().run(data, config, stream(5, "diagrams"))
    band = first.diagrams["reliability"]["consistency_band"]
    assert band == again.diagrams["reliability"]["consistency_band"]
    assert band != other.diagrams["reliability"]["consistency_band"]


@pytest.mark.parametrize("n", [1, 3])
def test_tiny_inputs(n):
    band = consistency_band(np.full(n, 0.4), n_bins=3, n_resamples=10,
                            rng=np.random.default_rng(0))
    assert band.low.shape == (1,)
