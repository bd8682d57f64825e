"""Report tests; :func:`write_reports` renders and writes reports as the commands do."""

from __future__ import annotations

from pathlib import Path

from calaudit.output.files import write_all
from calaudit.report.render import render_reports


def write_reports(result, **options) -> list[Path]:
    """Render every requested report of ``result`` in memory (``html``, ``md``, ``pdf``,
    ``signoff``, ``source``, ``pdf_appendix``), then write the files all together; the
    paths written."""
    pending = render_reports(result, **options)
    write_all(pending)
    return [path for path, _ in pending]
