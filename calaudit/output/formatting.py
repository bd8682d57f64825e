"""Number and text formatting shared by the terminal summary and the templates."""

from __future__ import annotations

import math


def fmt_number(value: float | None, digits: int = 4) -> str:
    """A number with ``digits`` significant digits; ``-`` for missing."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.{digits}g}"


def fmt_pvalue(value: float | None) -> str:
    """A p-value that never prints as 0: ``< 0.001`` below 0.001."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if value < 0.001:
        return "< 0.001"
    return f"{value:.3f}"


def fmt_ci(ci: list[float] | tuple[float, float] | None, digits: int = 4) -> str:
    """``[low, high]`` or ``-``."""
    if not ci:
        return "-"
    return f"[{fmt_number(ci[0], digits)}, {fmt_number(ci[1], digits)}]"


def md_cell(value: object) -> str:
    """Text safe inside a Markdown table cell: ``|`` escaped, newlines as spaces, and
    HTML-significant characters escaped (Markdown renderers pass raw HTML through)."""
    text = str(value)
    for raw, safe in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|")):
        text = text.replace(raw, safe)
    return " ".join(text.splitlines())
