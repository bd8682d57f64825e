"""What ``calaudit report`` does: read a saved JSON result (an audit or a comparison),
render the requested reports without recomputing anything, write them atomically and say
what was written. The reports name the JSON they come from and its SHA-256."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from calaudit.data.result_file import read_json_result
from calaudit.exceptions import ConfigError, InputError
from calaudit.output.files import write_atomic
from calaudit.report.comparison import is_comparison
from calaudit.report.load import read_result
from calaudit.report.render import render_reports


def run(results: Path, html: Path | None, md: Path | None,
        signoff: dict[str, str], pdf: Path | None = None) -> list[Path]:
    """Render ``results`` to ``html``, ``md`` and/or ``pdf``; returns the paths written."""
    if html is None and md is None and pdf is None:
        raise ConfigError("nothing to write: give --html PATH, --md PATH and/or --pdf PATH")
    payload, raw = read_json_result(results)
    result = payload if isinstance(payload, dict) and is_comparison(payload) \
        else read_result(results)
    source = {"path": str(results), "sha256": hashlib.sha256(raw).hexdigest()}
    try:
        documents = render_reports(result, html=html, md=md, pdf=pdf, signoff=signoff,
                                   source=source)
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
        raise InputError(f"malformed result ({type(exc).__name__}: {exc})",
                         source=str(results), rule="schema",
                         hint="give the file written by calaudit test --json") from None
    for path, content in documents:
        try:
            write_atomic(path, content)
        except OSError as exc:
            raise ConfigError(f"{path}: cannot write output: {exc.strerror or exc}") from None
    kind = "comparison" if is_comparison(result) else "audit"
    for path, _ in documents:
        if path.suffix != ".svg":
            sys.stdout.write(f"wrote {path} ({kind} report from {results}, "
                             f"sha256 {source['sha256'][:12]})\n")
    figures = sum(1 for path, _ in documents if path.suffix == ".svg")
    if figures:
        sys.stdout.write(f"wrote {figures} figure(s) next to the Markdown report\n")
    return [path for path, _ in documents]
