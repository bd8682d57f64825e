"""What ``calaudit report`` does: read a saved JSON result (an audit or a comparison),
render the requested reports without recomputing anything, write them all or none and say
what was written. The reports name the JSON they come from and its SHA-256."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from calaudit.cli.options import SIGNOFF_FLAGS
from calaudit.data.result_file import check_result, read_json_result
from calaudit.exceptions import ConfigError, InputError
from calaudit.output.files import check_targets, write_all
from calaudit.report.comparison import is_comparison
from calaudit.report.render import pdf_engine, render_reports

#: Sections the templates expect, filled with empty values when a result lacks them.
FILLED = {"local": dict, "groups": list, "diagrams": dict, "environment": dict}


def run_from_options(params: Mapping[str, Any]) -> list[Path]:
    """``calaudit report``: :func:`render_saved` with the command's options."""
    signoff = {name.removeprefix("signoff_"): params[name] for name in SIGNOFF_FLAGS
               if params.get(name)}
    return render_saved(params["results"], params.get("html"), params.get("md"), signoff,
               pdf=params.get("pdf"), pdf_appendix=bool(params.get("pdf_appendix")))


def render_saved(results: Path, html: str | Path | None, md: str | Path | None,
        signoff: dict[str, str], pdf: str | Path | None = None,
        pdf_appendix: bool = False) -> list[Path]:
    """Render ``results`` to ``html``, ``md`` and/or ``pdf`` (with the appendix when
    ``pdf_appendix``); returns the paths written."""
    if html is None and md is None and pdf is None:
        raise ConfigError("nothing to write: give --html PATH, --md PATH and/or --pdf PATH")
    check_targets([("--md", md), ("--html", html), ("--pdf", pdf)])
    if pdf is not None:
        pdf_engine()
    payload, raw = read_json_result(results)
    if isinstance(payload, dict) and is_comparison(payload):
        result = payload
    else:  # checked, and the sections the templates expect filled when a result lacks them
        result = dict(check_result(payload, str(results)))
        for key, kind in FILLED.items():
            result.setdefault(key, kind())
    source = {"path": str(results), "sha256": hashlib.sha256(raw).hexdigest()}
    try:
        documents = render_reports(result, html=html, md=md, pdf=pdf, signoff=signoff,
                                   source=source, pdf_appendix=pdf_appendix)
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
        raise InputError(f"malformed result ({type(exc).__name__}: {exc})",
                         source=str(results), rule="result_schema",
                         hint="give the file written by calaudit test --json") from None
    write_all(documents)
    kind = "comparison" if is_comparison(result) else "audit"
    for path, _ in documents:
        if path.suffix != ".svg":
            sys.stdout.write(f"wrote {path} ({kind} report from {results}, "
                             f"sha256 {source['sha256'][:12]})\n")
    figures = sum(1 for path, _ in documents if path.suffix == ".svg")
    if figures:
        sys.stdout.write(f"wrote {figures} figure(s) next to the Markdown report\n")
    return [path for path, _ in documents]
