"""Finding and rendering the jinja2 templates: the packaged ``calaudit/templates`` first,
then the source checkout's top-level ``templates/``."""

from __future__ import annotations

from pathlib import Path

from calaudit.output import formatting
from calaudit.output.story import plain
from calaudit.resources import resource_dirs


def template_dirs() -> list[Path]:
    """Existing template directories, most specific first."""
    return resource_dirs("templates", "report.md")


def jinja_environment():
    """A jinja2 environment: HTML autoescaped, undefined names are errors, our filters."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(p) for p in template_dirs()]),
        autoescape=jinja2.select_autoescape(["html", "htm", "xml"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        number=formatting.fmt_number,
        pvalue=formatting.fmt_pvalue,
        ci=formatting.fmt_ci,
        md=formatting.md_cell,
        count=formatting.fmt_count,
        percent=formatting.fmt_percent,
        signed=formatting.fmt_signed,
        value=formatting.fmt_value,
        plain=plain,
    )
    return env
