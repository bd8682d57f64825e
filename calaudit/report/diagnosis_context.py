"""View model of the "Who is miscalibrated, and why" section: the attribution summary
sentence and table (``attribution``), the between-group disparity (``disparity``), the
failing groups explained by other covariates (``groups[*].explained_by``) and the
per-group reliability diagrams (``local.group_reliability``); ``docs/result-schema.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from calaudit.output.formatting import fmt_ci, fmt_pvalue, fmt_signed
from calaudit.report.views import FigureView

if TYPE_CHECKING:
    from calaudit.report.figures import FigureNamer


@dataclass(frozen=True)
class AttributionRow:
    covariate: str
    p_value: str
    p_adjusted: str
    p_alone: str
    status: str
    levels: str


@dataclass(frozen=True)
class DisparityRow:
    covariate: str
    difference: str
    ci: str
    largest: str
    smallest: str


@dataclass(frozen=True)
class ExplainedRow:
    group: str
    bias: str
    bias_after: str
    explained_by: str


@dataclass(frozen=True)
class DiagnosisView:
    summary: str
    attribution: tuple[AttributionRow, ...]
    disparity: tuple[DisparityRow, ...]
    explained: tuple[ExplainedRow, ...]
    remaining: str
    figure: FigureView | None
    #: the attribution's test, as the reports name it
    test: str = "likelihood-ratio test"

    def figures(self) -> tuple[FigureView, ...]:
        return () if self.figure is None else (self.figure,)


def _levels(entry: Mapping[str, Any]) -> str:
    parts = []
    for lv in entry.get("levels") or ():
        if lv.get("bias") is None:
            parts.append(f"{lv['level']} (too small)")
        else:
            low, high = lv["ci"]
            parts.append(f"{lv['level']} {lv['bias']:+.3f} [{low:+.3f}, {high:+.3f}]")
    return "; ".join(parts) or "-"


def _explained(groups: list[Mapping[str, Any]]) -> tuple[tuple[ExplainedRow, ...], str]:
    failing = [g for g in groups if g.get("status") == "FAIL"]
    explained = [g for g in failing if g.get("explained_by")]
    rows = tuple(ExplainedRow(str(g["group"]), fmt_signed(g.get("bias")),
                              fmt_signed(g.get("bias_after_adjustment")),
                              ", ".join(g["explained_by"])) for g in explained)
    own = len(failing) - len(explained)
    remaining = (f"{len(failing)} failing groups: {len(explained)} explained by other "
                 f"covariates, {own} with a bias of their own." if failing else "")
    return rows, remaining


def _figure(panels: list[Mapping[str, Any]], namer: FigureNamer) -> FigureView | None:
    if not panels:
        return None
    names = ", ".join(str(p["group"]) for p in panels[:3])
    return namer.view(
        "reliability_by_group", "Reliability by group",
        f"Reliability diagrams of {len(panels)} groups, most biased first ({names}).",
        "One panel per group (categories of categorical covariates, quantile bands of "
        "numeric ones), the most biased first. Dots: observed frequency per bin with 95% "
        "Wilson intervals; grey bars: where a calibrated model's frequencies fall 95% of "
        "the time; dashed: perfect calibration. Panel titles give the group's bias.",
        {"panels": panels}, slug="reliability-by-group")


def build_diagnosis(result: Mapping[str, Any], namer: FigureNamer) -> DiagnosisView | None:
    """``None`` when the result has no attribution, disparity or group diagrams."""
    attribution = result.get("attribution") or {}
    disparity = list(result.get("disparity") or ())
    panels = list(((result.get("local") or {}).get("group_reliability")) or ())
    if not attribution and not disparity and not panels:
        return None
    rows = tuple(AttributionRow(
        covariate=str(e.get("covariate")), p_value=fmt_pvalue(e.get("p_value")),
        p_adjusted=fmt_pvalue(e.get("p_value_adjusted")),
        p_alone=fmt_pvalue(e.get("p_value_alone_adjusted")), status=str(e.get("status")),
        levels=_levels(e)) for e in attribution.get("covariates") or ())
    spread = tuple(DisparityRow(
        covariate=str(d["covariate"]), difference=_plain(d.get("difference")),
        ci=fmt_ci(d.get("ci"), 3),
        largest=_extreme(d["covariate"], d["largest"]),
        smallest=_extreme(d["covariate"], d["smallest"]))
        for d in disparity)
    explained, remaining = _explained(list(result.get("groups") or ()))
    return DiagnosisView(summary=str(attribution.get("summary") or ""), attribution=rows,
                         disparity=spread, explained=explained, remaining=remaining,
                         figure=_figure(panels, namer),
                         test="Wald test of the sandwich covariance of the weighted fit"
                         if str(attribution.get("test", "")).startswith("Wald")
                         else "likelihood-ratio test")


def _extreme(covariate: str, group: Mapping[str, Any]) -> str:
    """``A (+0.055)``: the level (without ``covariate=``) and its bias."""
    name = str(group["group"]).removeprefix(f"{covariate}=")
    return f"{name} ({fmt_signed(group['bias'])})"


def _plain(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.3g}"
