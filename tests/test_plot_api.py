"""calaudit.plot: Display objects drawn with the report's plotting code."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import calaudit  # noqa: E402
from calaudit.audit.config import LocalConfig  # noqa: E402
from calaudit.metrics.smooth_ece import smooth_ece  # noqa: E402
from calaudit.plot import (  # noqa: E402
    BiasByGroupDisplay,
    LcbDisplay,
    ReliabilityDisplay,
    SmoothReliabilityDisplay,
)


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(8)
    n = 400
    group = rng.choice(["a", "b"], n)
    p = rng.uniform(0.05, 0.95, n)
    truth = np.clip(p + np.where(group == "a", 0.12, -0.12), 0, 1)
    return pd.DataFrame({"y": (rng.uniform(size=n) < truth).astype(int), "p": p,
                         "age": rng.uniform(20, 80, n), "group": group})


@pytest.fixture(scope="module")
def result(frame):
    data = calaudit.CalibrationData.from_arrays(frame.y, frame.p,
                                                covariates=frame[["age", "group"]])
    config = calaudit.AuditConfig(n_resamples=50, random_state=2,
                                  local=LocalConfig(n_resamples=50, group_ci_resamples=50))
    return calaudit.run_audit(data, config)


def test_reliability_from_predictions_matches_the_audit(frame, result):
    display = ReliabilityDisplay.from_predictions(frame.y, frame.p, random_state=2,
                                                  n_bins=15, n_resamples=50)
    assert isinstance(display.figure_, Figure) and isinstance(display.ax_, Axes)
    assert display.hist_ax_ is not None and len(display.figure_.axes) == 2
    recorded = result.diagrams["reliability"]
    np.testing.assert_allclose(display.bins["observed_rate"], recorded["bins"]["observed_rate"])
    np.testing.assert_allclose(display.band["low"], recorded["consistency_band"]["low"])
    again = ReliabilityDisplay.from_result(result.to_dict(), histogram=False)
    assert len(again.figure_.axes) == 1


def test_displays_draw_into_given_axes(frame, result):
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, 2)
    try:
        ReliabilityDisplay.from_predictions(frame.y, frame.p, band=False, ax=axes[0, 0])
        smooth = SmoothReliabilityDisplay.from_result(result, ax=axes[0, 1])
        LcbDisplay.from_result(result, covariate="age", ax=axes[1, 0])
        BiasByGroupDisplay.from_result(result, ax=axes[1, 1])
        assert all(ax.has_data() for ax in axes.flat)
        assert smooth.figure_ is figure
        assert smooth.smece == pytest.approx(smooth_ece(frame.y, frame.p))
    finally:
        plt.close(figure)


def test_local_displays_from_predictions(frame):
    lcb = LcbDisplay.from_predictions(frame.y, frame.p, frame[["age", "group"]],
                                      covariate="age", group_by="group")
    assert lcb.curve["covariate"] == "age" and lcb.curve["group_by"] == "group"
    assert len(lcb.ax_.get_legend().get_texts()) == 2
    bias = BiasByGroupDisplay.from_predictions(frame.y, frame.p, frame[["group"]])
    assert {r["group"] for r in bias.rows} == {"group=a", "group=b"}
    labels = [t.get_text() for t in bias.ax_.get_yticklabels()]
    assert labels == ["group=b", "group=a"]  # sorted by bias, b is over-predicted


def test_missing_data_is_explained(frame, result):
    with pytest.raises(KeyError, match="curves: age by group"):
        LcbDisplay.from_result(result, covariate="income")
    with pytest.raises(ValueError, match="covariates"):
        LcbDisplay.from_predictions(frame.y, frame.p, {})
    with pytest.raises(ValueError, match="no group"):
        BiasByGroupDisplay.from_result({"groups": []})


def test_report_draws_the_smoothed_reliability_diagram(result):
    from calaudit.report.context import build_context

    context = build_context(result.to_dict())
    figure = context.reliability.smooth_figure
    assert figure is not None and figure.kind == "smooth_reliability"
    assert figure in context.figures()
    assert f"{result.metric('smece').value:.4g}"[:5] in figure.caption
