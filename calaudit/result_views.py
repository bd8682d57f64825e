"""Notebook views of an :class:`~calaudit.results.AuditResult`: pandas DataFrames and the
HTML that Jupyter shows for a result (the verdict and its story, checks, the groups with
the clearest bias).

Everything is read from the result's fields; nothing is recomputed. pandas is imported
only when a frame is asked for.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from calaudit.output.formatting import fmt_bias, fmt_bias_ci

#: Columns of :func:`checks_frame`, in order.
CHECK_COLUMNS = ("kind", "id", "title", "value", "ci_low", "ci_high", "statistic", "p_value",
                 "p_value_adjusted", "status", "message")
#: Status colours (the reports' palette).
COLOURS = {"PASS": "#1a7f37", "FAIL": "#cf222e", "ERROR": "#cf222e", "WARN": "#9a6700",
           "INCONCLUSIVE": "#8250df", "SKIPPED": "#6e7781"}


def _status(value: Any) -> str | None:
    return None if value is None else str(getattr(value, "value", value))


def check_rows(result) -> list[dict[str, Any]]:
    """One row per metric and per test (``kind`` says which), in the audit's order."""
    rows = []
    for m in result.metrics:
        low, high = m.ci if m.ci is not None else (math.nan, math.nan)
        rows.append({"kind": "metric", "id": m.id, "title": m.title, "value": m.value,
                     "ci_low": low, "ci_high": high, "statistic": math.nan,
                     "p_value": math.nan, "p_value_adjusted": math.nan,
                     "status": _status(m.status), "message": m.message})
    for t in result.tests:
        rows.append({"kind": "test", "id": t.id, "title": t.title, "value": t.estimate,
                     "ci_low": math.nan, "ci_high": math.nan, "statistic": t.statistic,
                     "p_value": t.p_value,
                     "p_value_adjusted": (math.nan if t.p_value_adjusted is None
                                          else t.p_value_adjusted),
                     "status": _status(t.status), "message": t.message})
    return rows


def checks_frame(result):
    """``result.to_frame()``: metrics and tests as a DataFrame indexed by ``(kind, id)``."""
    import pandas as pd

    frame = pd.DataFrame(check_rows(result), columns=list(CHECK_COLUMNS))
    return frame.set_index(["kind", "id"])


def groups_frame(result):
    """``result.groups_frame()``: the group table (one row per group or intersection), the
    bias interval split into ``bias_ci_low`` / ``bias_ci_high``, sorted by adjusted p-value
    then by absolute bias. Empty (with the columns) when the audit had no covariates."""
    import pandas as pd

    rows = []
    for group in result.groups:
        row = {k: v for k, v in dict(group).items() if k not in ("bias_ci", "covariates")}
        low, high = (group.get("bias_ci") or (None, None))[:2]
        row["bias_ci_low"] = math.nan if low is None else low
        row["bias_ci_high"] = math.nan if high is None else high
        rows.append(row)
    columns = ["group", "kind", "n", "events", "mean_prediction", "observed_rate", "bias",
               "bias_ci_low", "bias_ci_high", "p_value", "p_value_adjusted", "status"]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=columns)
    ordered = [c for c in columns if c in frame.columns]
    frame = frame[ordered + [c for c in frame.columns if c not in ordered]]
    order = frame.assign(_abs=frame["bias"].abs()).sort_values(
        ["p_value_adjusted", "_abs"], ascending=[True, False], kind="stable").index
    return frame.loc[order].reset_index(drop=True)


def _badge(status: str | None) -> str:
    if not status:
        return ""
    colour = COLOURS.get(status, "#57606a")
    return (f'<span style="color:white;background:{colour};padding:1px 6px;'
            f'border-radius:3px;font-weight:600">{html.escape(status)}</span>')


def _number(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return f"{value:.4g}" if isinstance(value, float) else html.escape(str(value))


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th style='text-align:left'>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>"
                   for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def result_html(result, top: int = 5) -> str:
    """The HTML Jupyter shows for a result: the verdict and the story every report leads
    with (:func:`calaudit.output.story.story`: the decision, its evidence, which
    covariates explain it), the checks (``result.checks``, the gate's list, the diagnostic
    tests marked as not deciding) and the groups with the clearest bias."""
    from calaudit.output.checklist import check_lines, counts_sentence
    from calaudit.output.story import plain, story

    payload = result.to_dict()
    lines = check_lines(payload, result.checks or None)
    sentences = [html.escape(plain(s)) for s in story(payload, lines)]
    parts = [f"<div><h4>calaudit: {_badge(_status(result.verdict))} on "
             f"{result.data.get('n', '?')} rows, {result.data.get('n_classes', '?')} classes"
             f"</h4>", f"<p><strong>{sentences[0]}</strong></p>"]
    if sentences[1:]:
        parts.append("<ul>" + "".join(f"<li>{s}</li>" for s in sentences[1:]) + "</ul>")
    parts.append(f"<p>Checks: {html.escape(counts_sentence(lines))}.</p>")
    parts.append(_table(
        ("check", "kind", "decides", "estimate", "p-value", "adjusted", "status"),
        [(html.escape(c.id), c.kind, "yes" if c.gates else "no (diagnostic)",
          _number(c.value), _number(c.p_value), _number(c.p_value_adjusted),
          _badge(c.status)) for c in lines]))
    groups = list((result.local.get("lcb") or {}).get("top_groups") or [])[:top]
    if groups:
        parts.append("<p>Groups with the clearest bias, strongest evidence first (bias = "
                     "observed rate - mean prediction):</p>")
        parts.append(_table(
            ("group", "rows", "bias", "interval", "adjusted p", "status"),
            [(html.escape(str(g.get("group"))), _number(g.get("n")),
              html.escape(fmt_bias(g.get("bias"))), html.escape(fmt_bias_ci(g.get("bias_ci"))),
              _number(g.get("p_value_adjusted")), _badge(_status(g.get("status"))))
             for g in groups]))
    parts.append("<p><code>result.to_frame()</code>, <code>result.groups_frame()</code>: "
                 "the numbers as DataFrames.</p></div>")
    return "\n".join(parts)
