"""The HTML report in a real browser (headless Chromium, driven over the DevTools pipe).

Skipped when no Chromium is installed, unless ``CALAUDIT_REQUIRE_BROWSER=1`` (set by
``.ci/run``), which turns the skip into a failure so that CI cannot pass silently.
Screenshots go to ``test-artifacts/`` (see ``conftest.artifacts``).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from calaudit.report.context import build_context
from tests.report import write_reports
from tests.report.synthetic import SCRIPT
from validation.cdp_browser import Chromium, find_chromium, inspect_page, print_page

CHROMIUM = find_chromium()
pytestmark = pytest.mark.slow  # a Chromium process


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        if os.environ.get("CALAUDIT_REQUIRE_BROWSER") == "1":
            pytest.fail("CALAUDIT_REQUIRE_BROWSER=1 but no Chromium was found "
                        "(apt-get install -y chromium)")
        pytest.skip("Chromium is not installed (apt-get install -y chromium)")
    with Chromium(CHROMIUM) as running:
        yield running


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def check_page(browser, html: Path, artifacts: Path, name: str, n_images: int):
    report = inspect_page(browser, html)
    shot = artifacts / f"report-{name}.png"
    shot.write_bytes(report.screenshot)
    width, height = png_size(report.screenshot)
    assert width == 1100 and 1000 < height <= 8000, (width, height)
    assert report.console_errors == []
    assert report.dialogs == []
    assert report.script_elements == 0
    assert all(url.startswith(("file:", "data:")) for url in report.requests), \
        report.requests
    assert len(report.images) == n_images
    for image in report.images:
        assert image["complete"] and image["width"] > 0 and image["height"] > 0, image
    return report


def test_synthetic_report_in_chromium(browser, artifacts, tmp_path, binary_html):
    page = tmp_path / "synthetic.html"
    page.write_text(binary_html, encoding="utf-8")
    report = check_page(browser, page, artifacts, "synthetic-binary", 7)
    assert SCRIPT in report.text  # shown as text, not executed
    assert report.title.startswith("Calibration audit")
    for heading in ("Verdict", "Checks", "Calibration tests", "Local calibration",
                    "Methods and configuration", "Sign-off"):
        assert heading in report.text


def test_multiclass_report_in_chromium(browser, artifacts, tmp_path, multiclass_html):
    page = tmp_path / "multiclass.html"
    page.write_text(multiclass_html, encoding="utf-8")
    check_page(browser, page, artifacts, "synthetic-multiclass", 8)


@pytest.mark.parametrize("fixture", ["credit_result", "image_result"])
def test_sample_reports_in_chromium(browser, artifacts, tmp_path, request, fixture):
    result = request.getfixturevalue(fixture)
    page = tmp_path / f"{fixture}.html"
    write_reports(result, html=page)
    n_images = len(build_context(result).figures())  # grows with the battery
    assert n_images >= (2 if fixture == "image_result" else 1)
    report = check_page(browser, page, artifacts, fixture.replace("_result", ""), n_images)
    assert "Reliability diagrams" in report.text


#: docs/reports.md: the sample report, sections collapsed, at 1,280 px wide.
FIRST_SCREEN_WIDTH, MAX_COLLAPSED_HEIGHT = 1280, 2500


def test_the_sample_report_is_short_and_leads_with_the_decision(browser, artifacts,
                                                                  tmp_path, credit_result):
    """Collapsed, the sample's HTML is under 2,500 px tall at 1,280 px; the verdict box
    and the picture it rests on come before any collapsed section."""
    page = tmp_path / "credit.html"
    write_reports(credit_result, html=page)
    report = inspect_page(browser, page, width=FIRST_SCREEN_WIDTH)
    (artifacts / "report-credit-1280.png").write_bytes(report.screenshot)
    width, height = png_size(report.screenshot)
    assert width == FIRST_SCREEN_WIDTH and height <= MAX_COLLAPSED_HEIGHT, height
    text = report.text
    decision = "The predicted probabilities are right on average but off for some groups"
    assert text.index(decision) < text.index("Groups with the clearest bias") \
        < text.index("Reliability of the groups with the clearest bias") \
        < text.index("Calibration error estimates")
    assert report.images[0]["alt"].startswith("Reliability diagrams of race=")


def test_the_harness_sees_scripts_errors_and_broken_images(browser, tmp_path):
    """The checks above can fail: a page that runs a script is caught."""
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><p>x</p>"
                    "<img src='data:image/png;base64,AAAA' alt='broken'>"
                    "<script>console.error('boom'); alert('pwned');</script>"
                    "</body></html>", encoding="utf-8")
    report = inspect_page(browser, page)
    assert report.dialogs == ["pwned"]
    assert any("boom" in e for e in report.console_errors)
    assert report.script_elements == 1
    assert report.images[0]["width"] == 0


def test_the_csp_blocks_an_injected_script(browser, tmp_path, binary_html):
    """Even a script element smuggled into the report would not run: the CSP forbids
    it (and Chromium reports the violation as a console error)."""
    page = tmp_path / "injected.html"
    page.write_text(binary_html.replace("</main>", "<script>alert('pwned')</script></main>"),
                    encoding="utf-8")
    report = inspect_page(browser, page)
    assert report.dialogs == []
    assert any("Content Security Policy" in e for e in report.console_errors)


def test_chromium_print_expands_every_section(browser, tmp_path, credit_result):
    """The print stylesheet opens every collapsed section (``::details-content``):
    printing shows the bins table and the appendix, on more than one page."""
    import shutil
    import subprocess

    if shutil.which("pdftotext") is None:
        pytest.skip("poppler-utils is not installed")
    page = tmp_path / "credit.html"
    write_reports(credit_result, html=page)
    pdf = tmp_path / "credit.pdf"
    pdf.write_bytes(print_page(browser, page))
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    assert text.count("\f") >= 6
    for hidden_on_screen in ("The bins in numbers", "Resolved configuration", "Group table",
                             "What a p-value means here"):
        assert hidden_on_screen in text


def test_battery_per_window_in_chromium(browser, artifacts, tmp_path):
    """Calibration over time with the battery per window: the section (open: an alarm)
    shows its p-value figure and table under the note that they do not gate."""
    import numpy as np
    from scipy import special

    from calaudit import AuditConfig, CalibrationData
    from calaudit.audit.config import LocalConfig, MonitoringConfig
    from calaudit.audit.over_time import OverTimeStage, run_over_time
    from calaudit.audit.runner import run_audit

    rng = np.random.default_rng(3)
    n = 2400
    z = rng.normal(-0.7, 1.0, n)
    grp = np.array(list("ABC"))[rng.integers(0, 3, n)]
    late = np.arange(n) >= 1200
    y = (rng.uniform(size=n) < special.expit(z + 1.2 * (late & (grp == "A")))).astype(int)
    data = CalibrationData.from_arrays(y, special.expit(z), covariates={"grp": grp},
                                       categorical=["grp"])
    config = AuditConfig(n_resamples=49, local=LocalConfig(n_resamples=49),
                         monitoring=MonitoringConfig(window="300", window_battery=True))
    state, advice = run_over_time(data, config)
    from calaudit.audit.battery import stages

    result = run_audit(data, config, stages=stages() + (OverTimeStage(state, advice),))
    page = tmp_path / "battery.html"
    write_reports(result.to_dict(), html=page)
    report = inspect_page(browser, page)
    (artifacts / "report-window-battery.png").write_bytes(report.screenshot)
    assert report.console_errors == [] and report.script_elements == 0
    assert all(i["complete"] and i["width"] > 0 for i in report.images)
    assert any(i["alt"].startswith("Raw p-value per window") for i in report.images)
    text = report.text
    assert "Battery per window (diagnostics)" in text and "These p-values do not gate" in text
    assert text.index("Battery per window: ECE and raw p-values") > \
        text.index("One row per window")
