"""What ``calaudit report`` does: read a saved JSON result, render the requested reports
without recomputing anything, write them atomically."""

from __future__ import annotations

from pathlib import Path

from calaudit.exceptions import ConfigError, InputError
from calaudit.output.files import check_targets, write_all
from calaudit.report.load import read_result
from calaudit.report.render import render_reports


def run(results: Path, html: str | Path | None, md: str | Path | None,
        signoff: dict[str, str]) -> list[Path]:
    """Render ``results`` to ``html`` and/or ``md``; returns the paths written."""
    if html is None and md is None:
        raise ConfigError("nothing to write: give --html PATH and/or --md PATH")
    check_targets([("--md", md), ("--html", html)])
    result = read_result(results)
    try:
        documents = render_reports(result, html=html, md=md, signoff=signoff)
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
        raise InputError(f"malformed result ({type(exc).__name__}: {exc})",
                         source=str(results), rule="schema",
                         hint="give the file written by calaudit test --json") from None
    write_all(documents)
    return [path for path, _ in documents]
