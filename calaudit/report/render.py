"""Render a JSON result as an HTML, Markdown or PDF report (a pure function of the result and
the sign-off fields: same result, same bytes).

HTML is one file: inline CSS allowed by its sha256 in a Content-Security-Policy that
forbids scripts and fetches, figures as ``data:image/svg+xml`` URIs. Markdown has the same
sections, figures in ``<stem>_files/``. PDF is the HTML printed by WeasyPrint
(``calaudit[pdf]``), sections expanded, the appendix only with ``--pdf-appendix``."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from calaudit import limits
from calaudit.audit.gate import Check
from calaudit.exceptions import ConfigError
from calaudit.output.templates import jinja_environment
from calaudit.report.comparison import build_comparison, is_comparison
from calaudit.report.context import build_context
from calaudit.report.figures import draw_svg
from calaudit.report.views import ReportContext

CSS_TEMPLATE = "report.css"


@dataclass(frozen=True)
class RenderedReport:
    """A rendered document and the files it links to (relative path -> content)."""

    text: str
    files: Mapping[str, str] = field(default_factory=dict)


def content_security_policy(css: str) -> str:
    """No scripts, no fetches, no frames or forms; images only from ``data:`` URIs and
    the one inline stylesheet, identified by its hash."""
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return ("default-src 'none'; script-src 'none'; object-src 'none'; base-uri 'none'; "
            f"form-action 'none'; img-src data:; style-src 'sha256-{digest}'")


def svg_data_uri(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def _svgs(context: ReportContext, drawn: dict[str, str] | None = None) -> dict[str, str]:
    """Each figure of ``context`` as SVG, by key; ``drawn`` keeps the figures already drawn
    for the same result (one drawing for every document of a run)."""
    drawn = {} if drawn is None else drawn
    for view in context.figures():
        if view.key not in drawn:
            drawn[view.key] = draw_svg(view)
    return {view.key: drawn[view.key] for view in context.figures()}


def shown(value: Any, limit: int | None = None) -> Any:
    """``value`` (a result, sign-off fields) with every text and key longer than
    ``REPORT_MAX_TEXT`` characters shortened in the middle, for the reports only."""
    limit = limits.REPORT_MAX_TEXT if limit is None else limit
    if isinstance(value, str):
        return value if len(value) <= limit else \
            f"{value[:limit // 2 - 2]} … {value[-(limit // 2 - 2):]}"
    if isinstance(value, Mapping):
        return {shown(key, limit): shown(item, limit) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [shown(item, limit) for item in value]
    return value


def render_html(result: Mapping[str, Any], signoff: Mapping[str, str] | None = None,
                source: Mapping[str, str] | None = None, *, appendix: bool = True,
                checks: Sequence[Check] | None = None,
                drawn: dict[str, str] | None = None) -> RenderedReport:
    """The single-file HTML report. ``source`` (``path``, ``sha256``) names the saved JSON a
    re-rendered report comes from; ``appendix=False`` leaves out the appendix (the PDF
    without ``--pdf-appendix``); ``checks``: the gate's list (else built from the result);
    ``drawn``: figures already drawn for this result, by key (filled as they are drawn)."""
    from markupsafe import Markup

    result, signoff, source = shown(result), shown(signoff), shown(source)
    env = jinja_environment()
    css = env.loader.get_source(env, CSS_TEMPLATE)[0]  # type: ignore[union-attr]
    if is_comparison(result):
        context = build_comparison(result, signoff, source)
        text = env.get_template("comparison.html").render(
            ctx=context, css=Markup(css), csp=content_security_policy(css))
        return RenderedReport(text)
    context = build_context(result, signoff, source, checks)
    images = {key: svg_data_uri(svg) for key, svg in _svgs(context, drawn).items()}
    text = env.get_template("report.html").render(
        ctx=context, images=images, css=Markup(css), csp=content_security_policy(css),
        appendix=appendix)
    return RenderedReport(text)


def printable(html: str) -> str:
    """The HTML as the PDF lays it out: every collapsible section a plain block, so WeasyPrint
    can break a long table across pages."""
    html = re.sub(r"<details\b([^>]*?)(?: open)?>", r"<div\1>", html)
    html = html.replace("</details>", "</div>")
    return html.replace("<summary>", '<div class="section-head">').replace("</summary>",
                                                                           "</div>")


def pdf_engine() -> Any:
    """WeasyPrint (``calaudit[pdf]``), imported; its absence or missing system libraries is a
    :class:`~calaudit.exceptions.ConfigError`, raised before the audit."""
    try:
        import weasyprint
    except ImportError:
        raise ConfigError("--pdf needs WeasyPrint: pip install 'calaudit[pdf]'") from None
    except OSError as exc:
        reason = " ".join(str(exc).split())
        raise ConfigError(f"--pdf: WeasyPrint cannot load its system libraries "
                          f"({reason[:160]})",
                          hint="install Pango (e.g. apt install libpango-1.0-0 "
                               "libpangoft2-1.0-0, or brew install pango); see WeasyPrint's "
                               "installation notes") from None
    import logging

    logging.getLogger("weasyprint").setLevel(logging.ERROR)
    logging.getLogger("fontTools").setLevel(logging.ERROR)
    return weasyprint


#: The PDF's own rule over the report's stylesheet: ``overflow-wrap: anywhere`` makes
#: WeasyPrint measure a table cell's narrowest width at every character, a cost that grows
#: with the cube of a word's length (a 2,000-character name took 49 s, a 100,000-character
#: one did not finish); ``break-word`` wraps the same text in linear time (0.4 s at 20,000).
PDF_CSS = "* { overflow-wrap: break-word !important; }"


def render_pdf(html: str) -> bytes:
    """The HTML report printed to PDF by WeasyPrint (:func:`pdf_engine`), laid out as
    :func:`printable` says, with :data:`PDF_CSS` over the report's stylesheet."""
    engine = pdf_engine()
    return engine.HTML(string=printable(html)).write_pdf(
        stylesheets=[engine.CSS(string=PDF_CSS)])


def markdown_files_dir(md_path: str | Path) -> str:
    """Name of the figure directory next to a Markdown report: ``<stem>_files``."""
    return f"{Path(md_path).stem}_files"


def render_markdown(result: Mapping[str, Any], md_path: str | Path,
                    signoff: Mapping[str, str] | None = None,
                    source: Mapping[str, str] | None = None,
                    checks: Sequence[Check] | None = None,
                    drawn: dict[str, str] | None = None) -> RenderedReport:
    """The Markdown report for ``md_path``, its figures in ``files`` (paths relative to its
    directory); ``checks`` and ``drawn`` as for :func:`render_html`."""
    result, signoff, source = shown(result), shown(signoff), shown(source)
    if is_comparison(result):
        context = build_comparison(result, signoff, source)
        return RenderedReport(jinja_environment().get_template("comparison.md").render(ctx=context))
    context = build_context(result, signoff, source, checks)
    folder = markdown_files_dir(md_path)
    files = {f"{folder}/{view.filename}": svg
             for view, svg in zip(context.figures(), _svgs(context, drawn).values(), strict=True)}
    images = {view.key: quote(f"{folder}/{view.filename}") for view in context.figures()}
    text = jinja_environment().get_template("report.md").render(ctx=context, images=images)
    return RenderedReport(text, files)


def render_reports(result: Mapping[str, Any], *, html: str | Path | None = None,
                   md: str | Path | None = None, signoff: Mapping[str, str] | None = None,
                   pdf: str | Path | None = None, source: Mapping[str, str] | None = None,
                   pdf_appendix: bool = False, checks: Sequence[Check] | None = None
                   ) -> list[tuple[Path, str | bytes]]:
    """Every requested document as ``(path, content)``, a Markdown report's figures first;
    ``checks``: the gate's list (else built from ``result``). Each figure is drawn once for
    all of them."""
    pending: list[tuple[Path, str | bytes]] = []
    drawn: dict[str, str] = {}
    if md is not None:
        report = render_markdown(result, md, signoff, source, checks, drawn)
        pending += [(Path(md).parent / name, svg) for name, svg in report.files.items()]
        pending.append((Path(md), report.text))
    if html is not None:
        pending.append((Path(html), render_html(result, signoff, source, checks=checks,
                                                drawn=drawn).text))
    if pdf is not None:
        printed = render_html(result, signoff, source, appendix=pdf_appendix, checks=checks,
                              drawn=drawn).text
        pending.append((Path(pdf), render_pdf(printed)))
    return pending

