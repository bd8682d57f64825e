"""The Markdown report: gold files, safe tables, image links that resolve."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from calaudit.report.render import markdown_files_dir, render_markdown
from tests.report import goldtest, synthetic, write_reports

IMAGE_LINK = re.compile(r"!\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)\)")


@pytest.fixture(scope="module")
def rendered() -> dict:
    """Each synthetic result rendered once, as ``report.md``."""
    return {name: render_markdown(build(), "report.md") for name, build in (
        ("binary", synthetic.binary_result), ("multiclass", synthetic.multiclass_result),
        ("minimal", synthetic.minimal_result))}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["binary", "multiclass", "minimal"])
def test_gold(rendered, name):
    goldtest.compare(f"{name}.md", rendered[name].text)


def test_scrubs_remove_dates_and_versions():
    text = ("audited 2026-01-02T03:04:05Z by calaudit 0.1.0rc1\n"
            "| numpy | 2.4.6 |\n| report rendered with | matplotlib 3.11.2, jinja2 3.1.6 |\n")
    assert goldtest.scrub(text) == ("audited DATE by calaudit VER\n| numpy | VER |\n"
                                    "| report rendered with | VER |\n")


def unescaped_pipes(line: str) -> int:
    count, escaped = 0, False
    for char in line:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "|":
            count += 1
    return count


def tables(text: str) -> list[list[str]]:
    blocks, current = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    return blocks + ([current] if current else [])


@pytest.mark.parametrize("name", ["binary", "multiclass", "minimal"])
def test_tables_keep_their_shape_and_no_html_leaks(rendered, name):
    text = rendered[name].text
    found = tables(text)
    assert len(found) >= 4
    for table in found:
        widths = {unescaped_pipes(line) for line in table}
        assert len(widths) == 1, table
        assert re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", table[1]), table[:2]
    assert "<script" not in text and "<b>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered["binary"].text


@pytest.mark.slow
def test_every_image_link_resolves(tmp_path):
    md = tmp_path / "audit results" / "my report (v1).md"
    written = write_reports(synthetic.multiclass_result(), md=md)
    text = md.read_text(encoding="utf-8")
    links = IMAGE_LINK.findall(text)
    assert len(links) == 8
    folder = md.parent / markdown_files_dir(md)
    assert folder.name == "my report (v1)_files"
    targets = {(md.parent / unquote(link)).resolve() for link in links}
    assert all(target.is_file() for target in targets)
    assert targets == {p.resolve() for p in folder.iterdir()}
    assert written[-1] == md  # figures first, then the Markdown that links to them
    assert all(t.read_text(encoding="utf-8").startswith("<?xml") for t in targets)


def test_markdown_files_are_keyed_relative_to_the_report(rendered):
    files = rendered["binary"].files
    assert all(name.startswith("report_files/figure-") for name in files)
    assert all(Path(name).suffix == ".svg" for name in files)


def test_a_commonmark_renderer_keeps_names_as_text_and_tables_intact(rendered):
    """Render with markdown-it (CommonMark + GFM tables, raw HTML allowed: the worst
    case): no element comes from a name, every table row has the header's width."""
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(
        rendered["binary"].text)
    assert "<script" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "race=B|pipe newline" in html and "$x$ [link](http://e.x) *star*" in html
    for table in re.findall(r"<table>.*?</table>", html, re.S):
        rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
        widths = {len(re.findall(r"<t[hd][ >]", row)) for row in rows}
        assert len(widths) == 1, table[:300]
    assert len(re.findall(r"<img ", html)) == 7


def test_the_documents_of_one_run_draw_each_figure_once(monkeypatch, tmp_path):
    """HTML, Markdown (and PDF) of one result share the drawn figures: each figure is drawn
    once, and the documents are those rendered one at a time."""
    from calaudit.report import render

    result = synthetic.binary_result()
    alone_md = render.render_markdown(result, tmp_path / "r.md")
    alone_html = render.render_html(result).text
    calls: list[str] = []
    draw = render.draw_svg
    monkeypatch.setattr(render, "draw_svg", lambda view: calls.append(view.key) or draw(view))
    pending = dict(render.render_reports(result, html=tmp_path / "r.html",
                                         md=tmp_path / "r.md"))
    assert calls and len(calls) == len(set(calls)) == len(alone_md.files)
    assert pending[tmp_path / "r.html"] == alone_html
    assert pending[tmp_path / "r.md"] == alone_md.text
    assert all(pending[tmp_path / name] == svg for name, svg in alone_md.files.items())
