"""The notebook view of an :class:`~calaudit.results.AuditResult` (``result._repr_html_()``):
the verdict and story, the checks and the groups with the clearest bias, installed by the
package through :mod:`calaudit.display`."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from calaudit.output.checklist import check_lines, counts_sentence
from calaudit.output.formatting import fmt_bias, fmt_bias_ci
from calaudit.output.story import plain, story
from calaudit.result_views import status_text

#: Status colours: the reports' palette (their figures draw in it too).
STATUS_COLOURS = {"PASS": "#1a7f37", "FAIL": "#cf222e", "ERROR": "#cf222e", "WARN": "#9a6700",
                  "INCONCLUSIVE": "#8250df", "SKIPPED": "#6e7781"}


def _badge(status: str | None) -> str:
    if not status:
        return ""
    colour = STATUS_COLOURS.get(status, "#57606a")
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
    """The HTML Jupyter shows for a result: the verdict and :func:`~calaudit.output.story.story`,
    the gate's checks (diagnostics marked) and the groups with the clearest bias."""
    payload = result.to_dict()
    lines = check_lines(payload, result.checks or None)
    sentences = [html.escape(plain(s)) for s in story(payload, lines)]
    parts = [f"<div><h4>calaudit: {_badge(status_text(result.verdict))} on "
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
              _number(g.get("p_value_adjusted")), _badge(status_text(g.get("status"))))
             for g in groups]))
    parts.append("<p><code>result.to_frame()</code>, <code>result.groups_frame()</code>: "
                 "the numbers as DataFrames.</p></div>")
    return "\n".join(parts)
