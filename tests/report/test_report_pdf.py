"""The PDF report (``--pdf``, WeasyPrint from the ``calaudit[pdf]`` extra), checked with
poppler: at most 8 pages without the appendix, page 1 the decision and its evidence, the
appendix only with ``--pdf-appendix``, no page ending on a heading, its figures drawn
(page 1 rasterised with ``pdftoppm``). Page images are left in ``test-artifacts/`` for
people to look at."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from html import unescape

import pytest

from calaudit.audit.gate import result_checks
from calaudit.exceptions import ConfigError
from calaudit.report.render import printable, render_pdf
from tests.report import write_reports

pytest.importorskip("weasyprint")
POPPLER = all(shutil.which(tool) for tool in ("pdftotext", "pdftoppm", "pdfinfo"))
pytestmark = pytest.mark.skipif(not POPPLER, reason="poppler-utils is not installed")
#: the tests of the sample's PDFs (WeasyPrint prints two, poppler reads them)
slow_pdf = pytest.mark.slow


def pdf_pages(path) -> list[str]:
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True,
                          text=True, check=True).stdout
    return text.split("\f")[:-1]


@pytest.fixture(scope="module")
def credit_pdfs(credit_result, tmp_path_factory):
    """The sample's PDF without and with the appendix, and the HTML each was printed
    from (for its headings): what ``write_reports`` handed to ``render_pdf``, recorded
    (not rendered a second time)."""
    from calaudit.report import render

    folder = tmp_path_factory.mktemp("pdf")
    printed: list[str] = []

    def recorded(html: str) -> bytes:
        printed.append(html)
        return render_pdf(html)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(render, "render_pdf", recorded)
        write_reports(credit_result, pdf=folder / "r.pdf")
        write_reports(credit_result, pdf=folder / "a.pdf", pdf_appendix=True)
    main, appendix = printed
    return {"main": (folder / "r.pdf", main), "appendix": (folder / "a.pdf", appendix)}


def page_count(path) -> int:
    info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True,
                          check=True).stdout
    assert re.search(r"Page size: +595.276 x 841.89 pts \(A4\)", info)
    return int(next(line for line in info.splitlines() if line.startswith("Pages:"))
               .split()[1])


@slow_pdf
def test_the_pdf_is_at_most_8_pages_and_the_appendix_is_on_request(credit_pdfs):
    main, appendix = credit_pdfs["main"][0], credit_pdfs["appendix"][0]
    pages = page_count(main)
    assert 3 <= pages <= 8, pages
    assert page_count(appendix) > pages
    text, full = "\n".join(pdf_pages(main)), "\n".join(pdf_pages(appendix))
    for appendix_only in ("Null distributions", "Group table", "Resolved configuration",
                          "The bins in numbers", "What a p-value means here"):
        assert appendix_only not in text and appendix_only in full, appendix_only
    for evidence in ("Checks", "Reliability diagrams", "Local calibration",
                     "Who is miscalibrated", "Calibration error estimates", "Data",
                     "Terms used above", "Sign-off"):
        assert evidence in text, evidence


@slow_pdf
def test_the_pdf_lists_every_check(credit_pdfs, credit_result):
    text = "\n".join(pdf_pages(credit_pdfs["main"][0]))
    for check in result_checks(credit_result):
        assert check.id in text, check.id


@slow_pdf
def test_page_one_states_the_decision_and_its_evidence(credit_pdfs, credit_result):
    first = " ".join(pdf_pages(credit_pdfs["main"][0])[0].split())
    assert first.startswith("Calibration audit: credit_default.csv")
    assert (f"{credit_result['verdict']} The predicted probabilities are right on average "
            "but off for some groups of similar rows.") in first
    for evidence in ("The local test rejects", "Where (bias = observed rate - mean "
                     "prediction", "Groups with the clearest bias", "race=B -0.05",
                     "Reliability of the groups with the clearest bias"):
        assert evidence in first, evidence


def last_lines(path) -> list[str]:
    """The last line of text of every page, page numbers left out."""
    out = []
    for text in pdf_pages(path):
        lines = [line.strip() for line in text.splitlines() if line.strip()
                 and not re.fullmatch(r"\d+ ?/ ?\d+", line.strip())]
        out.append(lines[-1] if lines else "")
    return out


def headings(html: str) -> set[str]:
    found = re.findall(r"<h[23][^>]*>(.*?)</h[23]>", html, flags=re.S)
    return {unescape(re.sub(r"<[^>]+>", "", h)).strip() for h in found} - {"", "Verdict"}


@slow_pdf
@pytest.mark.parametrize("document", ["main", "appendix"])
def test_no_page_ends_with_a_heading(credit_pdfs, document):
    pdf, html = credit_pdfs[document]
    titles = headings(html)
    assert {"Checks", "Sign-off"} <= titles
    for number, line in enumerate(last_lines(pdf), 1):
        assert not any(line.startswith(title) for title in titles), (number, line)


@slow_pdf
def test_page_one_is_drawn(credit_pdfs, artifacts, tmp_path):
    """The picture under the verdict is on page 1, drawn (rasterised with poppler)."""
    import numpy as np
    from PIL import Image

    prefix = tmp_path / "page"
    subprocess.run(["pdftoppm", "-r", "60", "-png", "-f", "1", "-l", "1",
                    str(credit_pdfs["main"][0]), str(prefix)], check=True)
    png = next(tmp_path.glob("page*.png"))
    shutil.copy(png, artifacts / "report-pdf-page-1.png")
    pixels = np.asarray(Image.open(png).convert("RGB")).astype(int)
    saturation = pixels.max(axis=2) - pixels.min(axis=2)
    lower = saturation[saturation.shape[0] // 2:]  # the figure sits under the verdict box
    assert (lower > 60).mean() > 0.002  # blue dots and whiskers are drawn


def test_sections_become_plain_blocks_for_print():
    html = ('<details class="section" id="a"><summary><h2>x</h2></summary>'
            '<div class="section-body">y</div></details><details open>z</details>')
    assert printable(html) == ('<div class="section" id="a"><div class="section-head">'
                               '<h2>x</h2></div><div class="section-body">y</div></div>'
                               '<div>z</div>')


def test_without_weasyprint_pdf_is_a_configuration_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "weasyprint", None)
    with pytest.raises(ConfigError, match=r"pip install 'calaudit\[pdf\]'"):
        render_pdf("<html></html>")
