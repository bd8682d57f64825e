"""Drift plots of a monitoring state draw every panel from the state alone."""

from __future__ import annotations

import numpy as np

from calaudit.monitoring import MonitorConfig, start, update
from calaudit.monitoring.plots import drift_figure, reliability_figure


def test_drift_and_reliability_figures():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.95, 6 * 500)
    window = np.repeat(np.arange(6), 500)
    y = (rng.uniform(size=p.size) < np.where(window >= 3, np.minimum(p + 0.2, 1), p))
    group = rng.choice(["a", "b"], p.size)
    state = update(start(MonitorConfig(window=500, groups=(("g", ("a", "b")),), n_boot=5)),
                   p, y.astype(int), covariates={"g": group})
    fig = drift_figure(state)
    assert [ax.get_ylabel() for ax in fig.axes] == ["ECE", "CITL", "slope", "group bias",
                                                     "e-process"]
    e_line = fig.axes[-1].lines[0]
    np.testing.assert_allclose(e_line.get_ydata(), state.table()["e_process"])
    assert state.eprocess.alarm_window > 0
    rel = reliability_figure(state)
    assert [line.get_label() for line in rel.axes[0].lines[1:]] == [
        "window rows 1-500", "window rows 2501-3000"]
