"""The "Who is miscalibrated, and why" section (attribution, explained groups, disparity,
per-group reliability) in the HTML report in Chromium and in the Markdown report."""

from __future__ import annotations

import pytest

from calaudit.report.context import build_context
from tests.report import write_reports
from tests.report.test_report_browser import browser  # noqa: F401  (fixture)
from validation.cdp_browser import inspect_page


@pytest.mark.slow
def test_diagnosis_section_in_chromium(browser, artifacts, tmp_path, credit_result):  # noqa: F811
    page = tmp_path / "credit.html"
    write_reports(credit_result, html=page)
    html = page.read_text(encoding="utf-8")  # the section opened, as a reader's click does
    page.write_text(html.replace('<details class="section" id="diagnosis">',
                                 '<details class="section" id="diagnosis" open>'),
                    encoding="utf-8")
    report = inspect_page(browser, page)
    (artifacts / "report-diagnosis.png").write_bytes(report.screenshot)
    assert report.console_errors == []
    sentence = credit_result["attribution"]["summary"]
    assert sentence.startswith("race explains it: A +")
    text = report.text
    assert sentence in text.split("Who is miscalibrated, and why")[0]   # the verdict box
    for heading in ("Who is miscalibrated, and why",
                    "Which covariates explain the miscalibration",
                    "Between-group disparity", "Reliability by group"):
        assert heading in text
    figure = build_context(credit_result).diagnosis.figure
    shown = [img for img in report.images if img["alt"] == figure.alt[:60]]
    assert shown and shown[0]["complete"] and shown[0]["width"] > 300


def test_diagnosis_section_in_markdown(tmp_path, credit_result):
    md = tmp_path / "credit.md"
    write_reports(credit_result, md=md)
    text = md.read_text(encoding="utf-8")
    assert "## Who is miscalibrated, and why" in text
    assert text.count("race explains it") >= 2   # the verdict and the section
    assert "| race | " in text and "### Between-group disparity" in text
    figure = build_context(credit_result).diagnosis.figure
    assert (tmp_path / "credit_files" / figure.filename).stat().st_size > 1000
