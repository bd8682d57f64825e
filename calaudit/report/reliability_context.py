"""View model of the report's reliability section (``diagrams`` of the JSON result,
``docs/result-schema.md``): the reliability diagram (binary or top-label) with its
consistency band and its bins as a table, the smoothed reliability diagram of the smooth
ECE, and the per-class small multiples (one-vs-rest).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from calaudit import limits
from calaudit.output.formatting import fmt_ci, fmt_count, fmt_number, fmt_percent
from calaudit.report.views import BinRow, FigureView, ReliabilityView

if TYPE_CHECKING:
    from calaudit.report.figures import FigureNamer

MAX_PER_CLASS_PANELS = 40


def _outside(rate: float | None, low: float | None, high: float | None) -> bool:
    if rate is None or low is None or high is None:
        return False
    return rate < low or rate > high


def bin_rows(bins: Mapping[str, Sequence[Any]], band: Mapping[str, Any] | None
             ) -> tuple[BinRow, ...]:
    """The reliability bins as a table (the figure's numbers, for readers and print)."""
    rows = []
    for i, count in enumerate(bins.get("count") or ()):
        low = band["low"][i] if band else None
        high = band["high"][i] if band else None
        rate = bins["observed_rate"][i]
        rows.append(BinRow(
            range=f"({fmt_number(bins['lower'][i], 3)}, {fmt_number(bins['upper'][i], 3)}]",
            count=fmt_count(count), mean_score=fmt_number(bins["mean_score"][i], 3),
            observed=fmt_number(rate, 3),
            interval=fmt_ci([bins["rate_low"][i], bins["rate_high"][i]], 3),
            band=fmt_ci([low, high], 3) if band else "-",
            outside=_outside(rate, low, high)))
    return tuple(rows)


#: Axis labels of a reliability diagram by its notion (binary or top-label).
AXIS_LABELS = {"binary": ("predicted probability", "observed frequency"),
               "top-label": ("confidence (probability of the predicted class)", "accuracy")}


def _axis_labels(result: Mapping[str, Any], notion: str) -> tuple[str, str]:
    classes = (result.get("data") or {}).get("classes") or []
    if notion == "binary" and len(classes) == 2:
        return (f"predicted probability of class {classes[1]}",
                f"observed frequency of class {classes[1]}")
    return AXIS_LABELS.get(notion, AXIS_LABELS["binary"])


def build_reliability(result: Mapping[str, Any], namer: FigureNamer) -> ReliabilityView:
    """The reliability diagrams: top-level (binary or top-label) and per class."""
    diagrams = result.get("diagrams") or {}
    main = diagrams.get("reliability")
    figure, rows, summary, notion = None, (), "No reliability data in this result.", "-"
    if main and main.get("bins"):
        notion = str(main.get("notion", "-"))
        band = main.get("consistency_band")
        rows = bin_rows(main["bins"], band)
        xlabel, ylabel = _axis_labels(result, notion)
        summary = _reliability_summary(rows, band, main)
        figure = namer.view(
            "reliability", f"Reliability diagram ({notion})",
            alt=f"Reliability diagram ({notion}): observed frequency against mean predicted "
                f"probability in {len(rows)} bins. {summary}",
            caption=summary,
            data={"bins": main["bins"], "band": band, "histogram": main.get("histogram"),
                  "xlabel": xlabel, "ylabel": ylabel})
    per_class = diagrams.get("reliability_per_class") or []
    per_class_figure, per_class_summary = None, ""
    if per_class:
        shown = per_class[:MAX_PER_CLASS_PANELS]
        per_class_summary = (f"{len(shown)} of {len(per_class)} classes shown."
                             if len(shown) < len(per_class) else
                             f"All {len(per_class)} classes, one-vs-rest.")
        outside = sum(r.outside for p in per_class
                      for r in bin_rows(p.get("bins") or {}, p.get("consistency_band")))
        if any(p.get("consistency_band") for p in per_class):
            per_class_summary += (f" {outside} bin(s) over all classes fall outside their "
                                  f"consistency band.")
        per_class_figure = namer.view(
            "reliability_per_class", "Reliability per class (one-vs-rest)",
            alt=f"Small multiples: one reliability diagram per class for "
                f"{len(shown)} classes. {per_class_summary}",
            caption=per_class_summary, data={"panels": shown})
    return ReliabilityView(summary=summary, figure=figure,
                           bins=tuple(rows[:limits.REPORT_MAX_ROWS]),
                           bins_more=max(len(rows) - limits.REPORT_MAX_ROWS, 0),
                           per_class_figure=per_class_figure,
                           per_class_summary=per_class_summary,
                           smooth_figure=smooth_reliability_view(result, namer))


def smooth_reliability_view(result: Mapping[str, Any], namer: FigureNamer
                              ) -> FigureView | None:
    """The smoothed reliability diagram of the smooth ECE (``diagrams.smooth_reliability``)."""
    curve = (result.get("diagrams") or {}).get("smooth_reliability")
    if not curve or not curve.get("t"):
        return None
    notion = str(curve.get("notion", "-"))
    xlabel, ylabel = _axis_labels(result, notion)
    caption = (f"Smooth ECE {fmt_number(curve.get('smece'))} at bandwidth "
               f"{fmt_number(curve.get('sigma'))} (the fixed point sigma = smECE_sigma): the "
               f"observed frequency smoothed by a Gaussian kernel of that width, drawn "
               f"thicker where predictions are dense (Blasiok and Nakkiran 2023).")
    if curve.get("weights"):
        caption += f" Every row counts with its weight ({curve['weights']} weights)."
    return namer.view(
        "smooth_reliability", f"Smoothed reliability diagram ({notion})",
        alt=f"Smoothed reliability diagram ({notion}): kernel-smoothed observed frequency "
            f"against predicted probability, with the density of predictions. {caption}",
        caption=caption, data={**curve, "xlabel": xlabel, "ylabel": f"{ylabel} (smoothed)"})


def _reliability_summary(rows: Sequence[BinRow], band: Mapping[str, Any] | None,
                         main: Mapping[str, Any]) -> str:
    text = f"{len(rows)} non-empty {main.get('binning', '')} bins (of {main.get('n_bins', '-')})."
    if band:
        outside = sum(r.outside for r in rows)
        text += (f" {outside} of {len(rows)} bins fall outside the "
                 f"{fmt_percent(band.get('level', 0.95), 0)} consistency band "
                 f"({fmt_count(band.get('n_resamples'))} label redraws).")
    else:
        text += " No consistency band (computed only when tests run)."
    return text
