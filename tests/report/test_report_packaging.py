"""The report templates are found in a source checkout and shipped in the wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from calaudit.output.templates import jinja_environment, template_dirs
from tests.report.conftest import REPO

TEMPLATES = sorted(p.relative_to(REPO / "templates").as_posix()
                   for p in (REPO / "templates").rglob("*") if p.is_file())


def test_every_template_loads():
    assert {"report.html", "report.md", "report.css", "html/macros.html"} <= set(TEMPLATES)
    env = jinja_environment()
    for name in TEMPLATES:
        if name.endswith((".html", ".md")):
            env.get_template(name)
    assert (template_dirs()[0] / "report.css").is_file()


def test_html_templates_are_autoescaped_and_markdown_is_not():
    env = jinja_environment()
    assert env.autoescape("report.html") and env.autoescape("html/local.html")
    assert not env.autoescape("report.md")


@pytest.mark.slow
def test_the_wheel_ships_every_template(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp_path), str(REPO)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("calaudit-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"calaudit/templates/{t}" for t in TEMPLATES} <= names
    assert {"calaudit/report/render.py", "calaudit/audit/diagrams.py"} <= names
