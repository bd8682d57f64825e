"""``calaudit test --html/--md`` and ``calaudit report``: files, bytes, exit codes."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat

import pytest
from typer.testing import CliRunner

from calaudit.cli.app import app
from calaudit.output.files import write_atomic
from tests.report import synthetic
from tests.report.conftest import SAMPLES

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """One ``calaudit test`` run writing JSON, HTML and Markdown."""
    folder = tmp_path_factory.mktemp("audit")
    os.environ["SOURCE_DATE_EPOCH"] = "1767225600"
    try:
        result = invoke("test", SAMPLES / "credit_default.csv", "--covariates", "age,race",
                        "--json", folder / "r.json", "--html", folder / "r.html",
                        "--md", folder / "md" / "r.md", "--signoff-name", "Ada <b>L</b>",
                        "--signoff-role", "model risk", "--signoff-date", "2026-11-21")
    finally:
        del os.environ["SOURCE_DATE_EPOCH"]
    # exit 1: the local test catches the groups' built-in bias (sample_data/README.md)
    assert result.exit_code == 1, result.output
    return folder


def test_test_writes_html_and_markdown(audited):
    html = (audited / "r.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "Ada &lt;b&gt;L&lt;/b&gt;" in html
    assert "model risk" in html and "2026-11-21" in html and "2026-01-01T00:00:00Z" in html
    md = (audited / "md" / "r.md").read_text(encoding="utf-8")
    assert "](r_files/figure-01-reliability.svg)" in md
    assert (audited / "md" / "r_files" / "figure-01-reliability.svg").is_file()


def test_reports_get_the_mode_open_would_give(tmp_path):
    mask = os.umask(0o022)
    try:
        write_atomic(tmp_path / "new.html", "x")
        assert stat.S_IMODE((tmp_path / "new.html").stat().st_mode) == 0o644
        (tmp_path / "old.html").write_text("old")
        (tmp_path / "old.html").chmod(0o640)
        write_atomic(tmp_path / "old.html", "new")
        assert stat.S_IMODE((tmp_path / "old.html").stat().st_mode) == 0o640
    finally:
        os.umask(mask)


def test_report_rerenders_the_same_bytes_without_recomputing(audited, tmp_path):
    result = invoke("report", audited / "r.json", "--html", tmp_path / "again.html",
                    "--md", tmp_path / "r.md", "--signoff-name", "Ada <b>L</b>",
                    "--signoff-role", "model risk", "--signoff-date", "2026-11-21")
    assert result.exit_code == 0, result.output
    digest = hashlib.sha256((audited / "r.json").read_bytes()).hexdigest()
    assert f"wrote {tmp_path / 'again.html'} (audit report from {audited / 'r.json'}, " \
           f"sha256 {digest[:12]})" in result.output
    again = (tmp_path / "again.html").read_text(encoding="utf-8")
    assert f"its sha256 <code>{digest}</code>" in again
    # apart from the provenance line, the same bytes as the report written by the audit
    provenance = re.compile(r"<br>rendered from <code>[^<]*</code>, its sha256 <code>\w+</code>")
    assert provenance.sub("", again) == (audited / "r.html").read_text(encoding="utf-8")
    markdown = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert f"- its sha256: `{digest}`" in markdown
    lines = [line for line in markdown.split("\n")
             if not line.startswith(("- rendered from:", "- its sha256:"))]
    original = (audited / "md" / "r.md").read_text(encoding="utf-8").split("\n")
    assert [line for line in lines if line] == [line for line in original if line]


def test_two_audits_with_the_same_epoch_give_the_same_bytes(audited, tmp_path,
                                                            monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    result = invoke("test", SAMPLES / "credit_default.csv", "--covariates", "age,race",
                    "--html", tmp_path / "r.html", "--signoff-name", "Ada <b>L</b>",
                    "--signoff-role", "model risk", "--signoff-date", "2026-11-21")
    assert result.exit_code == 1  # the gate fails on the local test, as in ``audited``
    assert (tmp_path / "r.html").read_bytes() == (audited / "r.html").read_bytes()


def test_report_from_a_synthetic_result(tmp_path):
    path = tmp_path / "synthetic.json"
    path.write_text(json.dumps(synthetic.binary_result()), encoding="utf-8")
    result = invoke("report", path, "--md", tmp_path / "out.md")
    assert result.exit_code == 0
    assert len(list((tmp_path / "out_files").iterdir())) == 7


def test_metrics_command_writes_an_estimates_only_report(tmp_path):
    result = invoke("metrics", SAMPLES / "credit_default.csv", "--html", tmp_path / "m.html")
    assert result.exit_code == 0
    html = (tmp_path / "m.html").read_text(encoding="utf-8")
    assert "estimates-only audit" in html and "No consistency band" in html


@pytest.mark.parametrize(("content", "message"), [
    (None, "file not found"),
    ("{", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"schema_version": 2}', "schema_version 2 is not supported"),
    ('{"schema_version": 1, "verdict": "PASS"}', "not a calaudit JSON result: missing"),
    ("BROKEN_TESTS", "must be an object with a string 'id'"),
    ("BROKEN_NULL", "malformed result"),
])
def test_report_rejects_bad_results_with_one_line(tmp_path, content, message):
    path = tmp_path / "result.json"
    if content == "BROKEN_TESTS":
        data = synthetic.minimal_result()
        data["tests"] = [{"statistic": 1}]
        content = json.dumps(data)
    elif content == "BROKEN_NULL":
        data = synthetic.binary_result()
        data["tests"][0]["null_distribution"] = "abc"
        content = json.dumps(data)
    if content is not None:
        path.write_text(content, encoding="utf-8")
    result = runner.invoke(app, ["report", str(path), "--html", str(tmp_path / "x.html")])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines() if hasattr(result, "stderr") else []
    assert len(lines) == 1 and message in lines[0], result.output
    assert not (tmp_path / "x.html").exists()


def test_report_needs_an_output(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(synthetic.minimal_result()), encoding="utf-8")
    result = runner.invoke(app, ["report", str(path)])
    assert result.exit_code == 2
    assert "nothing to write" in result.stderr


@pytest.mark.slow
def test_separate_processes_write_identical_reports(tmp_path):
    """Byte-identical across processes, whatever the hash seed (set/dict order)."""
    import subprocess
    import sys

    outputs = []
    for seed in ("1", "2"):
        target = tmp_path / seed
        env = {**os.environ, "SOURCE_DATE_EPOCH": "1767225600", "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-m", "calaudit", "test",
                        str(SAMPLES / "image_classifier.npz"), "--n-bins", "10",
                        "--html", str(target / "r.html"), "--md", str(target / "r.md")],
                       check=True, capture_output=True, env=env)
        outputs.append({p.relative_to(target): p.read_bytes()
                        for p in sorted(target.rglob("*")) if p.is_file()})
    assert outputs[0] == outputs[1]
    assert len(outputs[0]) >= 4  # html, md and at least two figures


def test_report_renders_a_comparison_and_the_signoff_decision(audited, tmp_path):
    compared = invoke("compare", audited / "r.json", audited / "r.json", "--json",
                      tmp_path / "comparison.json")
    assert compared.exit_code == 0, compared.output
    result = invoke("report", tmp_path / "comparison.json", "--html", tmp_path / "c.html",
                    "--md", tmp_path / "c.md", "--signoff-decision", "approved for release")
    assert result.exit_code == 0, result.output
    assert "(comparison report from" in result.output
    html = (tmp_path / "c.html").read_text(encoding="utf-8")
    markdown = (tmp_path / "c.md").read_text(encoding="utf-8")
    for text in (html, markdown):
        assert "Calibration audit comparison" in text and "Baseline comparison" in text
        assert str(audited / "r.json") in text.replace("\\", "")
        assert "No metric regressed and no check newly fails against the baseline." in text
        assert "Span(" not in text
    again = invoke("report", audited / "r.json", "--html", tmp_path / "s.html",
                   "--signoff-decision", "approved for release")
    assert again.exit_code == 0
    assert "<td>approved for release</td>" in (tmp_path / "s.html").read_text(encoding="utf-8")
