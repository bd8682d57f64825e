"""Plots for notebooks and scripts, as scikit-learn's ``Display`` objects::

    display = ReliabilityDisplay.from_predictions(y_true, y_proba)
    display.figure_.savefig("reliability.png")

``from_predictions`` runs the audit stage that computes the data (with the audit's seed
conventions), ``from_result`` reads an :class:`~calaudit.results.AuditResult` or its JSON
payload; both draw with :mod:`calaudit.report.plots` into ``ax`` or a new ``pyplot``
figure, kept in ``figure_`` and ``ax_``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from calaudit.audit.battery import SmoothEceStage
from calaudit.audit.config import AuditConfig, BinningConfig, LocalConfig
from calaudit.audit.diagrams import DiagramsStage
from calaudit.audit.local_calibration import LocalCalibrationStage
from calaudit.data.dataset import CalibrationData
from calaudit.numerics.random import one_seed, stream
from calaudit.report import plots
from calaudit.report.reliability_context import AXIS_LABELS

__all__ = ["ReliabilityDisplay", "SmoothReliabilityDisplay", "LcbDisplay",
           "BiasByGroupDisplay"]

#: Groups drawn by :class:`BiasByGroupDisplay` by default (the largest |bias|).
MAX_GROUPS = 20


def _part(result: Any, name: str) -> Any:
    """A top-level field of an ``AuditResult`` or of its JSON payload."""
    return result.get(name) if isinstance(result, Mapping) else getattr(result, name)


def _run(stage, y_true, y_proba, covariates, config: AuditConfig):
    data = CalibrationData.from_arrays(y_true, y_proba, covariates=covariates)
    return stage.run(data, config, stream(config.seed, stage.name))


def _seed(random_state, rng) -> int:
    return int(one_seed(0, random_state=random_state, rng=rng))


def _new_figure(figsize: tuple[float, float], rows: int = 1, **kwargs: Any):
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=figsize, layout="constrained")
    return figure, figure.subplots(rows, 1, **kwargs)


class _Display:
    figure_: Any = None
    ax_: Any = None

    def _drawn(self, ax) -> _Display:
        self.ax_, self.figure_ = ax, ax.figure
        return self


class ReliabilityDisplay(_Display):
    """Binned reliability diagram: observed frequency against mean prediction per bin, with
    Wilson intervals, the consistency band of a calibrated model (when computed) and, in a
    new figure, the histogram of the scores below (``hist_ax_``).

    Attributes: ``bins``, ``band`` (``None`` without band), ``histogram``, ``notion``,
    ``figure_``, ``ax_``, ``hist_ax_``.
    """

    def __init__(self, bins: Mapping[str, Sequence[float]], band: Mapping | None = None,
                 histogram: Mapping | None = None, notion: str = "binary") -> None:
        self.bins, self.band, self.histogram, self.notion = bins, band, histogram, notion
        self.hist_ax_ = None

    def plot(self, ax=None, *, histogram: bool = True) -> ReliabilityDisplay:
        xlabel, ylabel = AXIS_LABELS.get(self.notion, AXIS_LABELS["binary"])
        with plots.plot_style():
            if ax is None and histogram and self.histogram:
                _, (ax, self.hist_ax_) = _new_figure((6.4, 5.4), 2, sharex=True,
                                                     height_ratios=(3.2, 1.0))
                plots.plot_score_histogram(self.histogram, self.hist_ax_, xlabel=xlabel)
                xlabel = ""
            elif ax is None:
                ax = _new_figure((6.4, 4.4))[1]
            plots.plot_reliability(self.bins, self.band, ax, xlabel=xlabel, ylabel=ylabel)
        return self._drawn(ax)

    @classmethod
    def from_predictions(cls, y_true, y_proba, *, n_bins: int = 15,
                         strategy: str = "uniform", band: bool = True,
                         n_resamples: int = 1000, random_state: int | None = None,
                         rng: int | None = None, ax=None, histogram: bool = True
                         ) -> ReliabilityDisplay:
        """Bins (and, with ``band=True``, the 95% consistency band from ``n_resamples``
        label sets redrawn from the predictions, seeded by ``random_state``) as ``calaudit
        test`` computes them."""
        config = AuditConfig(seed=_seed(random_state, rng), run_tests=band,
                             n_resamples=n_resamples,
                             binning=BinningConfig(n_bins=n_bins, strategy=strategy))
        output = _run(DiagramsStage(), y_true, y_proba, None, config)
        return cls._from_diagram(output.diagrams["reliability"]).plot(ax,
                                                                      histogram=histogram)

    @classmethod
    def from_result(cls, result, ax=None, *, histogram: bool = True) -> ReliabilityDisplay:
        """The reliability diagram recorded in an audit result."""
        diagram = (_part(result, "diagrams") or {}).get("reliability")
        if not diagram:
            raise ValueError("this result has no reliability diagram data")
        return cls._from_diagram(diagram).plot(ax, histogram=histogram)

    @classmethod
    def _from_diagram(cls, diagram: Mapping[str, Any]) -> ReliabilityDisplay:
        return cls(diagram["bins"], diagram.get("consistency_band"), diagram.get("histogram"),
                   str(diagram.get("notion", "binary")))


class SmoothReliabilityDisplay(_Display):
    """Smoothed reliability diagram of the smooth ECE (Blasiok & Nakkiran 2023): the
    kernel-smoothed outcome rate at the smECE bandwidth, thicker where predictions are
    dense. Attributes: ``curve`` (``t``, ``mu``, ``density``, ``sigma``, ``smece``),
    ``smece``, ``sigma``, ``figure_``, ``ax_``."""

    def __init__(self, curve: Mapping[str, Any], notion: str = "binary") -> None:
        self.curve, self.notion = curve, notion
        self.smece, self.sigma = curve.get("smece"), curve.get("sigma")

    def plot(self, ax=None) -> SmoothReliabilityDisplay:
        xlabel, ylabel = AXIS_LABELS.get(self.notion, AXIS_LABELS["binary"])
        with plots.plot_style():
            ax = ax if ax is not None else _new_figure((6.4, 4.4))[1]
            plots.plot_smooth_reliability(self.curve, ax, xlabel=xlabel,
                                          ylabel=f"{ylabel} (smoothed)")
        return self._drawn(ax)

    @classmethod
    def from_predictions(cls, y_true, y_proba, *, ax=None) -> SmoothReliabilityDisplay:
        output = _run(SmoothEceStage(), y_true, y_proba, None, AuditConfig(run_tests=False))
        return cls._from_diagram(output.diagrams["smooth_reliability"]).plot(ax)

    @classmethod
    def from_result(cls, result, ax=None) -> SmoothReliabilityDisplay:
        diagram = (_part(result, "diagrams") or {}).get("smooth_reliability")
        if not diagram:
            raise ValueError("this result has no smooth reliability data")
        return cls._from_diagram(diagram).plot(ax)

    @classmethod
    def _from_diagram(cls, diagram: Mapping[str, Any]) -> SmoothReliabilityDisplay:
        return cls(diagram, str(diagram.get("notion", "binary")))


class LcbDisplay(_Display):
    """Local calibration bias of each row against one numeric covariate, coloured by
    group, with each group's smoothed curve and band (Vashistha & Farahi, Figure 6).
    Attributes: ``curve``, ``points``, ``figure_``, ``ax_``."""

    def __init__(self, curve: Mapping[str, Any], points: Mapping[str, Any] | None = None):
        self.curve, self.points = curve, points

    def plot(self, ax=None) -> LcbDisplay:
        with plots.plot_style():
            ax = ax if ax is not None else _new_figure((6.4, 4.4))[1]
            plots.plot_lcb_by_covariate(self.curve, self.points, ax)
        return self._drawn(ax)

    @classmethod
    def from_result(cls, result, covariate: str | None = None, group_by: str | None = None,
                    ax=None) -> LcbDisplay:
        """The curve of ``covariate`` (split by ``group_by``) recorded in a result; the first
        curve when not given."""
        lcb = (_part(result, "local") or {}).get("lcb") or {}
        curves = list(lcb.get("curves") or ())
        chosen = [c for c in curves if (covariate is None or c.get("covariate") == covariate)
                  and (group_by is None or c.get("group_by") == group_by)]
        if not chosen:
            available = ", ".join(f"{c.get('covariate')} by {c.get('group_by') or '-'}"
                                  for c in curves) or "none (no numeric covariate)"
            raise KeyError(f"no LCB curve for covariate={covariate!r}, group_by={group_by!r}; "
                           f"curves: {available}")
        return cls(chosen[0], lcb.get("points")).plot(ax)

    @classmethod
    def from_predictions(cls, y_true, y_proba, covariates, *, covariate: str | None = None,
                         group_by: str | None = None, random_state: int | None = None,
                         rng: int | None = None, ax=None) -> LcbDisplay:
        """Run the local calibration stage (no tests) and plot one curve."""
        config = AuditConfig(seed=_seed(random_state, rng), run_tests=False,
                             local=LocalConfig(tests=()))
        output = _run(LocalCalibrationStage(), y_true, y_proba, covariates, config)
        if not output.local:
            raise ValueError("covariates are needed for local calibration plots")
        return cls.from_result({"local": output.local}, covariate, group_by, ax)


class BiasByGroupDisplay(_Display):
    """Bias (observed rate - mean prediction) of each group with its interval, coloured by
    status (the ``max_groups`` largest |bias|). Attributes: ``rows``, ``figure_``,
    ``ax_``."""

    def __init__(self, rows: Sequence[Mapping[str, Any]]) -> None:
        self.rows = list(rows)

    def plot(self, ax=None) -> BiasByGroupDisplay:
        with plots.plot_style():
            if ax is None:
                ax = _new_figure((6.4, 1.1 + 0.24 * max(len(self.rows), 1)))[1]
            plots.plot_bias_by_group(self.rows, ax)
        return self._drawn(ax)

    @classmethod
    def from_result(cls, result, *, max_groups: int = MAX_GROUPS, ax=None
                    ) -> BiasByGroupDisplay:
        groups = [g for g in _part(result, "groups") or ()
                  if g.get("bias") is not None and math.isfinite(float(g["bias"]))]
        if not groups:
            raise ValueError("this result has no group diagnostics (audit with covariates)")
        shown = sorted(groups, key=lambda g: -abs(float(g["bias"])))[:max_groups]
        return cls(shown).plot(ax)

    @classmethod
    def from_predictions(cls, y_true, y_proba, covariates, *, max_groups: int = MAX_GROUPS,
                         random_state: int | None = None, rng: int | None = None, ax=None
                         ) -> BiasByGroupDisplay:
        """Run the local calibration stage and plot its group table (groups graded with
        the audit's defaults; bias intervals from its bootstrap)."""
        config = AuditConfig(seed=_seed(random_state, rng),
                             local=LocalConfig(tests=()))
        output = _run(LocalCalibrationStage(), y_true, y_proba, covariates, config)
        return cls.from_result({"groups": output.groups}, max_groups=max_groups, ax=ax)
