"""Number and text formatting shared by the terminal summary and the templates."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

# a group's bias and interval, written as the group table writes them
from calaudit.local.groups import format_bias as fmt_bias  # noqa: F401
from calaudit.local.groups import format_interval as fmt_bias_ci  # noqa: F401

# a number and a p-value, written as the gate's checks write them
from calaudit.results import fmt_delta, fmt_number, fmt_pvalue  # noqa: F401


def reproducible() -> bool:
    """Whether ``SOURCE_DATE_EPOCH`` asks for reproducible outputs: no timings then."""
    return bool(os.environ.get("SOURCE_DATE_EPOCH", "").strip())


def fmt_p_clause(value: float | None, name: str = "p") -> str:
    """``p = 0.020``, or ``p < 0.001`` when :func:`fmt_pvalue` shows a bound."""
    text = fmt_pvalue(value)
    return f"{name} {text}" if text.startswith("<") else f"{name} = {text}"


def fmt_ci(ci: list[float] | tuple[float, float] | None, digits: int = 4) -> str:
    """``[low, high]`` or ``-``."""
    if not ci:
        return "-"
    return f"[{fmt_number(ci[0], digits)}, {fmt_number(ci[1], digits)}]"


#: Markdown punctuation that could change a cell's structure or formatting; each is
#: backslash-escaped (CommonMark: any ASCII punctuation may be escaped).
_MD_ESCAPES = ("\\", "`", "*", "_", "[", "]", "|")
_HTML_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"))


def md_cell(value: object) -> str:
    """Text safe inside a Markdown table cell or heading: one line (newlines and other
    line breaks become spaces), backslash, backtick, ``*``, ``_``, brackets and ``|``
    escaped, and HTML-significant characters escaped (Markdown renderers pass raw HTML
    through).

    >>> md_cell("a|b\\n<i>x</i>")
    'a\\\\|b &lt;i&gt;x&lt;/i&gt;'
    """
    text = " ".join(str(value).splitlines()).strip()
    for char in _MD_ESCAPES:
        text = text.replace(char, "\\" + char)
    for raw, safe in _HTML_ESCAPES:
        text = text.replace(raw, safe)
    return text


def fmt_count(value: int | float | None) -> str:
    """An integer count with thousands separators; ``-`` for missing."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{int(value):,}"


def fmt_size(value: int | float | None) -> str:
    """A group's size: rows, or on weighted rows its weight or effective size, rounded
    to a whole number with thousands separators; ``-`` for missing."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{round(value):,}"


def fmt_percent(value: float | None, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage; ``-`` for missing."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{100.0 * value:.{digits}f}%"


def fmt_signed(value: float | None, digits: int = 3) -> str:
    """A signed number with ``digits`` significant digits (``+0.0571``); ``-`` for missing."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:+.{digits}g}"


def fmt_value(value: object, digits: int = 4) -> str:
    """Any JSON value as short text: numbers via :func:`fmt_number`, lists joined by
    commas, mappings as ``key=value``, ``None`` as ``-``."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int,)):
        return str(value)
    if isinstance(value, float):
        return fmt_number(value, digits)
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt_value(v, digits) for v in value) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k}={fmt_value(v, digits)}" for k, v in value.items()) or "-"
    return str(value)


def fmt_intercepts(advice: Mapping[str, Any]) -> str:
    """A recalibration's intercepts: ``intercepts by C: a 0.1, b -0.2`` or ``intercept 0.1``."""
    if advice.get("group_intercepts"):
        return f"intercepts by {advice.get('covariate')}: " + ", ".join(
            f"{k} {fmt_number(v)}" for k, v in advice["group_intercepts"].items())
    return f"intercept {fmt_number(advice.get('intercept'))}"


def weights_kind(weights: Mapping[str, Any]) -> str:
    """What the weights are: ``frequency weights from 'w'``, or negatives kept at a rate."""
    kind = ("negatives kept at a rate, weighted back by 1/r" if weights.get("label_dependent")
            else f"{weights.get('kind')} weights")
    return kind + (f" from '{weights['column']}'" if weights.get("column") else "")


def weights_line(data: Mapping[str, Any]) -> str | None:
    """``weighted audit: ...`` from the ``data`` section (None when unweighted)."""
    weights = data.get("weights")
    if not weights:
        return None
    left_out = "; ".join(f"{item['id']} ({item['reason']})"
                         for item in weights.get("not_weighted") or ())
    return (f"weighted audit ({weights_kind(weights)}): sum of weights {weights['sum']:.6g}, "
            f"effective sample size {weights['effective_sample_size']:.6g}, "
            f"sample size of the rules {weights['sample_size']:.6g}"
            + (f"; not weighted, left out: {left_out}" if left_out else ""))
