"""The HTML report: one safe, self-contained, deterministic file."""

from __future__ import annotations

import base64
import hashlib
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from calaudit.report.context import build_context
from calaudit.report.render import render_html
from tests.report import write_reports
from tests.report.synthetic import MATH_NAME, PIPE_NAME, SCRIPT

#: The verdict, the evidence, the appendix (in the PDF only with --pdf-appendix), sign-off.
SECTIONS = ["verdict", "checks", "reliability", "local", "metrics", "data", "terms", "tests",
            "nulls", "groups", "notes", "appendix", "signoff"]


class Inventory(HTMLParser):
    """Every start tag with its attributes, the text of <style>, and all text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.style = ""
        self.text: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.style += data
        else:
            self.text.append(data)


def inventory(html: str) -> Inventory:
    parser = Inventory()
    parser.feed(html)
    return parser


def test_hostile_names_are_text(binary_html):
    html = binary_html
    assert SCRIPT not in html and "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    text = " ".join(inventory(html).text)
    assert SCRIPT in text and "B|pipe" in text and MATH_NAME in text


def test_no_scripts_no_network_and_a_strict_csp(binary_html):
    html = binary_html
    found = inventory(html)
    tags = [tag for tag, _ in found.tags]
    assert not {"script", "link", "iframe", "object", "embed", "base", "form"} & set(tags)
    for tag, attrs in found.tags:
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        for name in ("src", "href"):
            if name in attrs:
                assert attrs[name].startswith(("data:image/svg+xml;base64,", "#")), attrs
    csp = [a["content"] for t, a in found.tags if t == "meta"
           and a.get("http-equiv") == "Content-Security-Policy"]
    assert len(csp) == 1
    assert "default-src 'none'" in csp[0] and "script-src 'none'" in csp[0]
    digest = base64.b64encode(hashlib.sha256(found.style.encode()).digest()).decode()
    assert f"style-src 'sha256-{digest}'" in csp[0]


def test_sections_in_reading_order(binary_html):
    ids = [a["id"] for t, a in inventory(binary_html).tags
           if t in ("section", "details") and "id" in a]
    assert ids == SECTIONS


def test_every_figure_is_an_svg_data_uri(multiclass_html):
    found = inventory(multiclass_html)
    images = [a for t, a in found.tags if t == "img"]
    assert len(images) == 8  # reliability, per class, 3 nulls, 2 LCB, bias by group
    for attrs in images:
        assert attrs["alt"]
        svg = base64.b64decode(attrs["src"].split(",", 1)[1])
        root = ET.fromstring(svg)
        assert root.tag.endswith("svg")
        assert float(root.get("width").rstrip("pt")) > 0
        assert b"<script" not in svg  # names appear only escaped, in comments


def test_signoff_is_escaped(minimal_synth):
    html = render_html(minimal_synth, {"name": "Ada <b>Lovelace</b>", "date": "2026-11-21"}
                       ).text
    assert "Ada &lt;b&gt;Lovelace&lt;/b&gt;" in html and "2026-11-21" in html


def test_same_result_same_bytes(binary_html, binary_synth):
    assert render_html(binary_synth).text == binary_html


def test_synthetic_report_with_2000_lcb_points_is_small(binary_html):
    assert len(binary_html.encode("utf-8")) < 2_000_000


def test_minimal_result_renders(minimal_synth):
    html = render_html(minimal_synth).text
    assert "This result contains no hypothesis tests." in html and 'id="local"' not in html
    assert "<img" not in html


@pytest.mark.parametrize("fixture", ["credit_result", "image_result"])
def test_sample_reports_are_small_and_complete(fixture, request, tmp_path):
    result = request.getfixturevalue(fixture)
    path = tmp_path / "report.html"
    write_reports(result, html=path)
    size = path.stat().st_size
    assert size < 2_000_000, size
    html = path.read_text(encoding="utf-8")
    n_figures = len(build_context(result).figures())  # grows with the battery
    assert html.count("<img ") == n_figures >= (2 if fixture == "image_result" else 1)
    assert re.search(r'<section id="verdict" class="verdict verdict-(pass|fail)"', html)
    assert result["inputs"]["sha256"] in html
    assert "<th scope=\"row\">BLAS</th>" in html and result["environment"]["blas"]


def test_group_names_with_pipes_stay_in_one_cell(binary_html):
    html = binary_html
    assert html.count(f"race={PIPE_NAME.split(chr(10))[0]}") >= 2


def test_other_modules_can_add_an_evidence_section(monkeypatch):
    from calaudit.report import context
    from calaudit.report.views import EvidenceSection
    from tests.report import synthetic

    def build(result, namer):
        return EvidenceSection(id="extra-section", title="Extra evidence",
                               summary="added by a builder", html_template="html/data.html")

    monkeypatch.setattr(context, "EVIDENCE_BUILDERS", [build])
    html = render_html(synthetic.minimal_result()).text
    assert '<details class="section" id="extra-section">' in html
    assert '<a href="#extra-section">Extra evidence</a>' in html
    assert html.index('id="extra-section"') < html.index('id="notes"')
