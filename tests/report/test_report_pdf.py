"""The PDF report (``--pdf``, WeasyPrint from the ``calaudit[pdf]`` extra), checked with
poppler: it opens, has a page per section, its text holds the verdict and every check,
and its figures are drawn (pages rasterised with ``pdftoppm``). Page images are left in
``test-artifacts/`` for people to look at."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from calaudit.audit.checks import result_checks
from calaudit.exceptions import ConfigError
from calaudit.report.render import expand_sections, render_pdf, write_reports

pytest.importorskip("weasyprint")
POPPLER = all(shutil.which(tool) for tool in ("pdftotext", "pdftoppm", "pdfinfo"))
pytestmark = pytest.mark.skipif(not POPPLER, reason="poppler-utils is not installed")


def pdf_pages(path) -> list[str]:
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True,
                          text=True, check=True).stdout
    return text.split("\f")[:-1]


@pytest.fixture(scope="module")
def credit_pdf(credit_result, tmp_path_factory):
    folder = tmp_path_factory.mktemp("pdf")
    write_reports(credit_result, pdf=folder / "r.pdf", html=folder / "r.html")
    return folder / "r.pdf"


def test_the_pdf_opens_with_a_page_per_section(credit_pdf):
    info = subprocess.run(["pdfinfo", str(credit_pdf)], capture_output=True, text=True,
                          check=True).stdout
    pages = int(next(line for line in info.splitlines() if line.startswith("Pages:"))
                .split()[1])
    assert 10 <= pages <= 40, pages
    assert re.search(r"Page size: +595.276 x 841.89 pts \(A4\)", info)
    texts = pdf_pages(credit_pdf)
    assert len(texts) == pages
    starts = [t.strip().splitlines()[0].strip() for t in texts if t.strip()]
    for title in ("Calibration error estimates", "Calibration tests", "Reliability diagrams",
                  "Local calibration", "Data", "Reading this report",
                  "Methods and configuration"):
        assert any(start.startswith(title) for start in starts), (title, starts)


def test_the_pdf_text_has_the_verdict_and_every_check(credit_pdf, credit_result):
    texts = pdf_pages(credit_pdf)
    assert f"{credit_result['verdict']} At least one check" in " ".join(texts[0].split())
    everything = "\n".join(texts)
    for check in result_checks(credit_result):
        assert check.id in everything, check.id
    assert "The bins in numbers" in everything  # expanded, not hidden in a closed section
    assert "Resolved configuration" in everything


def test_the_pdf_figures_are_drawn(credit_pdf, artifacts, tmp_path):
    from PIL import Image

    texts = pdf_pages(credit_pdf)
    page = next(i for i, t in enumerate(texts) if "Reliability diagram (binary)" in t) + 1
    prefix = tmp_path / "page"
    subprocess.run(["pdftoppm", "-r", "60", "-png", "-f", str(page), "-l", str(page),
                    str(credit_pdf), str(prefix)], check=True)
    png = next(tmp_path.glob("page*.png"))
    shutil.copy(png, artifacts / "report-pdf-reliability-page.png")
    import numpy as np

    pixels = np.asarray(Image.open(png).convert("RGB")).astype(int)
    saturation = pixels.max(axis=2) - pixels.min(axis=2)
    assert (saturation > 60).mean() > 0.005  # the blue histogram and markers are drawn


def test_sections_are_expanded_for_print():
    html = '<details class="section" id="a"><summary>x</summary></details><details open>'
    assert expand_sections(html) == ('<details open class="section" id="a"><summary>x'
                                     '</summary></details><details open>')


def test_without_weasyprint_pdf_is_a_configuration_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "weasyprint", None)
    with pytest.raises(ConfigError, match=r"pip install 'calaudit\[pdf\]'"):
        render_pdf("<html></html>")
