"""View model of the local-calibration section: the KLCE result, the local calibration
bias (LCB) plots and summary, and the group table (``local`` and ``groups`` of the JSON
result, ``docs/result-schema.md``)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from calaudit import limits
from calaudit.local.groups import excludes_zero
from calaudit.output.formatting import (
    fmt_bias,
    fmt_bias_ci,
    fmt_count,
    fmt_number,
    fmt_p_clause,
    fmt_pvalue,
    fmt_signed,
    fmt_size,
    fmt_value,
)
from calaudit.report.views import FigureView, GroupRow, KeyValue, KlceView, LocalView, TestRow

if TYPE_CHECKING:
    from calaudit.report.figures import FigureNamer

#: The bias-by-group plot shows at most this many groups (the strongest evidence).
MAX_BIAS_ROWS = 24
STATUS_ORDER = ("FAIL", "ERROR", "WARN", "INCONCLUSIVE", "SKIPPED", "PASS")


def local_test_ids(result: Mapping[str, Any]) -> set[str]:
    klce = (result.get("local") or {}).get("klce") or {}
    return {str(t) for t in klce.get("tests") or ()}


def test_scope(test: Mapping[str, Any], result: Mapping[str, Any]) -> str:
    """``local`` for covariate-local tests (listed in ``local.klce.tests`` or with a
    ``klce`` id), ``monitoring`` for the e-process over time, ``global`` otherwise."""
    test_id = str(test.get("id"))
    if test.get("family") == "monitoring":
        return "monitoring"
    return "local" if test_id in local_test_ids(result) or test_id.startswith("klce") \
        else "global"


def build_local(result: Mapping[str, Any], tests: Sequence[TestRow], namer: FigureNamer
                ) -> LocalView | None:
    """``None`` when the result has neither ``local`` nor ``groups`` (no covariates)."""
    local = result.get("local") or {}
    groups = list(result.get("groups") or ())
    if not local and not groups:
        return None
    lcb = local.get("lcb") or {}
    klce = local.get("klce")
    alpha = float((result.get("config") or {}).get("alpha", 0.05))
    return LocalView(
        klce=build_klce(klce, tests) if klce else None,
        lcb_summary=_lcb_summary(lcb.get("summary") or {}) + _lcb_kernels(lcb),
        lcb_figures=tuple(_lcb_figure(curve, lcb.get("points"), namer)
                          for curve in lcb.get("curves") or ()),
        top_groups=tuple(group_table_row(g, first_screen_note(g, alpha)) for g in
                         (lcb.get("top_groups") or ())[:limits.REPORT_MAX_ROWS]),
        bias_figure=_bias_figure(groups, namer),
        groups=tuple(group_table_row(g) for g in listed_groups(groups)),
        group_counts=_group_counts(groups),
    )


def build_klce(klce: Mapping[str, Any], tests: Sequence[TestRow]) -> KlceView:
    ids = [str(t) for t in klce.get("tests") or ()]
    by_id = {t.id: t for t in tests}
    return KlceView(
        statistic=fmt_number(klce.get("statistic")),
        covariates=", ".join(str(c) for c in klce.get("covariates") or ()) or "-",
        encoding=tuple(KeyValue(str(name), _encoding(enc))
                       for name, enc in (klce.get("encoding") or {}).items()),
        kernels=tuple(KeyValue(label, _kernel(klce[key]))
                      for key, label in (("prob_kernel", "kernel on predictions"),
                                         ("cov_kernel", "kernel on covariates"))
                      if klce.get(key)),
        tests=tuple(by_id[i] for i in ids if i in by_id),
        hoeffding=_hoeffding(klce.get("hoeffding"),
                             any(by_id[i].status == "FAIL" for i in ids if i in by_id)),
        per_class=tuple(
            KeyValue(str(row.get("class")),
                     f"statistic {fmt_number(row.get('statistic'))}, "
                     f"{fmt_p_clause(row.get('p_value'))}")
            for row in klce.get("per_class") or ()),
    )


def _encoding(enc: Mapping[str, Any]) -> str:
    if enc.get("type") == "categorical":
        cats = ", ".join(str(c) for c in enc.get("categories") or ())
        return f"categorical ({cats}), one-hot, scale {fmt_number(enc.get('scale'))}"
    return (f"numeric, standardised (mean {fmt_number(enc.get('mean'))}, "
            f"sd {fmt_number(enc.get('sd'))})")


def _kernel(kernel: Mapping[str, Any]) -> str:
    source = kernel.get("source")
    origin = {"median": "median heuristic", "option": "set by option"}.get(source, source)
    return (f"{kernel.get('type', '-')}, bandwidth {fmt_number(kernel.get('bandwidth'))} "
            f"(gamma {fmt_number(kernel.get('gamma'))}" + (f", {origin})" if origin else ")"))


def _hoeffding(region: Mapping[str, Any] | None, test_failed: bool = False) -> str:
    """The distribution-free Hoeffding check, worded so that it never seems to contradict
    a resampling test that rejected: the bound is far less powerful and does not gate."""
    if not region:
        return ""
    text = (f"Diagnostic, does not gate: Hoeffding acceptance region (a conservative, "
            f"distribution-free bound) at alpha {fmt_value(region.get('alpha'))}: threshold "
            f"{fmt_number(region.get('threshold'))}, bound {fmt_number(region.get('bound'))}; ")
    if region.get("reject"):
        return text + "the bound also rejects calibration."
    if test_failed:
        return text + ("the bound is not exceeded. This does not contradict the FAIL above: "
                       "the bound holds for every distribution and so needs far more rows to "
                       "reject than the resampling test, which decides.")
    return text + "the bound is not exceeded (it rejects only with large effects or many rows)."


def _lcb_summary(summary: Mapping[str, Any]) -> tuple[KeyValue, ...]:
    rows = [KeyValue(label, fmt_signed(summary[key]) if key in ("mean", "min", "max")
                     else fmt_number(summary[key], 3))
            for key, label in (("mean", "mean"), ("mean_abs", "mean |LCB|"), ("sd", "sd"),
                               ("min", "min"), ("max", "max"))
            if summary.get(key) is not None]
    quantiles = summary.get("quantiles") or {}
    if quantiles:
        rows.append(KeyValue("quantiles", ", ".join(
            f"{_quantile_label(q)}: {fmt_signed(v)}" for q, v in quantiles.items())))
    return tuple(rows)


def _lcb_kernels(lcb: Mapping[str, Any]) -> tuple[KeyValue, ...]:
    """The LCB estimate's bandwidths (``local.lcb.bandwidth_selection``), if recorded."""
    chosen = lcb.get("bandwidth_selection") or {}
    if not chosen:
        return ()
    covs = ", ".join(f"{name} {'pooled' if value >= 10 else fmt_number(value, 3)}"
                     for name, value in (chosen.get("cov_bandwidths") or {}).items())
    how = ("leave-one-out cross-validation" if chosen.get("source") == "loo_cv"
           else "given")
    return (KeyValue("bandwidths (estimation)",
                     f"prediction {fmt_number(chosen.get('prob_bandwidth'), 3)}; "
                     f"covariates: {covs} ({how})"),)


def _quantile_label(q: str) -> str:
    try:
        return f"{100 * float(q):g}%"
    except ValueError:
        return str(q)


def _lcb_figure(curve: Mapping[str, Any], points: Mapping[str, Any] | None,
                namer: FigureNamer) -> FigureView:
    covariate, group_by = str(curve.get("covariate")), curve.get("group_by")
    by = f" by {group_by}" if group_by else ""
    groups = [str(g.get("group")) for g in curve.get("groups") or ()]
    n_points = len((points or {}).get("lcb") or ())
    caption = (f"Local calibration bias of {fmt_count(n_points)} rows against {covariate}"
               f"{by}; lines: smoothed bias per group ({', '.join(groups) or 'all rows'}).")
    return namer.view(
        "lcb", f"Local calibration bias against {covariate}{by}",
        alt=f"Scatter plot of local calibration bias against {covariate}{by}, with a smoothed "
            f"curve per group. {caption}",
        caption=caption, data={"curve": curve, "points": points},
        slug=f"lcb-{covariate}")


def _finite(value: Any) -> bool:
    return value is not None and math.isfinite(float(value))


def _evidence(group: Mapping[str, Any]) -> tuple[float, float]:
    adjusted, raw = group.get("p_value_adjusted"), group.get("p_value")
    return (1.0 if adjusted is None else adjusted, 1.0 if raw is None else raw)


def _bias_figure(groups: Sequence[Mapping[str, Any]], namer: FigureNamer
                 ) -> FigureView | None:
    """Each covariate's groups and the intersections whose interval excludes 0, at most
    :data:`MAX_BIAS_ROWS`, the strongest evidence kept."""
    plotted = [g for g in groups if _finite(g.get("bias"))
               and (g.get("kind") != "intersection" or excludes_zero(g))]
    if not plotted:
        return None
    shown = sorted(plotted, key=_evidence)[:MAX_BIAS_ROWS]
    left = len(groups) - len(shown)
    caption = (f"{len(shown)} of {len(groups)} groups"
               + (": each covariate's groups and the intersections whose interval excludes "
                  "0" if left else "")
               + (", the strongest evidence first" if len(shown) < len(plotted) else "")
               + "; bars: interval of the bias; hollow markers: INCONCLUSIVE. Every group is "
                 "in the group table.")
    return namer.view(
        "bias_by_group", "Bias by group",
        alt=f"Dot plot of observed rate minus mean prediction per group, sorted by bias, "
            f"with intervals. {caption}",
        caption=caption, data={"rows": shown})


def count_text(counts: Counter[str]) -> str:
    """``2 FAIL, 1 INCONCLUSIVE, 4 PASS`` (most serious first)."""
    order = [s for s in STATUS_ORDER if counts[s]] + sorted(set(counts) - set(STATUS_ORDER))
    return ", ".join(f"{counts[s]} {s}" for s in order) or "none graded"


def listed_groups(groups: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The groups a report's table lists: all of them, or the ``REPORT_MAX_ROWS`` most
    serious (by status, then in the result's order)."""
    if len(groups) <= limits.REPORT_MAX_ROWS:
        return list(groups)
    rank = {status: k for k, status in enumerate(STATUS_ORDER)}
    order = sorted(range(len(groups)),
                   key=lambda k: (rank.get(str(groups[k].get("status")), len(rank)), k))
    return [groups[k] for k in sorted(order[:limits.REPORT_MAX_ROWS])]


def _group_counts(groups: Sequence[Mapping[str, Any]]) -> str:
    if not groups:
        return "No group diagnostics in this result."
    counts = Counter(str(g.get("status") or "-") for g in groups)
    text = f"{len(groups)} groups: {count_text(counts)}."
    if len(groups) > limits.REPORT_MAX_ROWS:
        text += (f" The table lists the {limits.REPORT_MAX_ROWS} most serious; every group "
                 "is in the JSON result (groups).")
    return text


def first_screen_note(group: Mapping[str, Any], alpha: float) -> str:
    """Why a PASS group whose interval excludes 0 is not a FAIL, in plain words (``""``
    otherwise): adjusted p above alpha, no local test ran, or the local test did not reject."""
    if group.get("status") != "PASS":
        return ""
    adjusted = group.get("p_value_adjusted")
    if adjusted is not None and adjusted > alpha:
        return "not a finding: adjusted p above alpha"
    if "gatekeeper" in group and group["gatekeeper"] is None:
        return "not gated: no local test ran"
    return "not a finding: the local test did not reject"


def group_table_row(group: Mapping[str, Any], note: str = "") -> GroupRow:
    return GroupRow(
        group=str(group.get("group")), kind=str(group.get("kind") or "-"),
        n=fmt_size(group.get("n")), events=fmt_size(group.get("events")),
        mean_prediction=fmt_number(group.get("mean_prediction"), 3),
        observed_rate=fmt_number(group.get("observed_rate"), 3),
        bias=fmt_bias(group.get("bias")), bias_ci=fmt_bias_ci(group.get("bias_ci")),
        mean_lcb=fmt_signed(group.get("mean_lcb")), test=str(group.get("test") or "-"),
        p_value=fmt_pvalue(group.get("p_value")),
        p_adjusted=fmt_pvalue(group.get("p_value_adjusted")),
        status=str(group.get("status") or "-"), message=str(group.get("message") or ""),
        note=note)
