"""One list of checks everywhere, and reproducible documents.

One ``calaudit test`` run on the sample with a baseline and thresholds writes every output;
the check ids, statuses and counts read back from the terminal, JSON, JUnit, the GitHub
step summary, HTML and Markdown must be identical. With ``SOURCE_DATE_EPOCH`` two
processes write byte-identical HTML, Markdown, JUnit, JSON and step summaries.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from calaudit.audit.gate import result_checks
from tests.report.conftest import REPO, SAMPLES

CONFIG = """
[thresholds.ece]
warn = 0.005
fail = 0.05
[thresholds.brier]
fail = 0.1
[thresholds.calibration_slope]
warn = 0.05
"""
FAST = ("--n-resamples", "99", "--local-resamples", "99")


def calaudit(*args, cwd: Path, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith(("CALAUDIT_", "GITHUB_"))}
    environ.update({"PYTHONPATH": str(REPO), "COLUMNS": "100", **(env or {})})
    return subprocess.run([sys.executable, "-m", "calaudit", *map(str, args)], cwd=cwd,
                          env=environ, capture_output=True, text=True, timeout=300)


EPOCH = "1767225600"


def gated_test(folder: Path) -> subprocess.CompletedProcess:
    """``calaudit test`` in ``folder`` (holding ``calaudit.toml`` and ``base.json``)
    against the baseline with thresholds, writing every output, with
    ``SOURCE_DATE_EPOCH``."""
    run = calaudit("test", SAMPLES / "credit_default.csv", "--covariates", "age,race", *FAST,
                   "--baseline", "base.json", "--json", "r.json", "--junit", "r.xml",
                   "--html", "r.html", "--md", "r.md", "--color", "never", cwd=folder,
                   env={"GITHUB_STEP_SUMMARY": str(folder / "summary.md"),
                        "GITHUB_ACTIONS": "true", "SOURCE_DATE_EPOCH": EPOCH})
    assert run.returncode == 1, run.stderr
    return run


@pytest.fixture(scope="module")
def gated_run(tmp_path_factory):
    """A baseline from ``calaudit metrics``, then :func:`gated_test` against it."""
    folder = tmp_path_factory.mktemp("gated")
    (folder / "calaudit.toml").write_text(CONFIG, encoding="utf-8")
    base = calaudit("metrics", SAMPLES / "credit_default.csv", "--covariates", "age,race",
                    "--json", "base.json", cwd=folder, env={"SOURCE_DATE_EPOCH": EPOCH})
    assert base.returncode == 1, base.stderr  # the brier threshold fails
    return folder, gated_test(folder)


def from_json(folder: Path) -> list[tuple[str, str]]:
    payload = json.loads((folder / "r.json").read_text(encoding="utf-8"))
    return [(c.name, c.status) for c in result_checks(payload)]


def from_junit(folder: Path) -> list[tuple[str, str]]:
    suite = ET.parse(folder / "r.xml").getroot().find("testsuite")
    found = []
    for case in suite.iter("testcase"):
        kind = case.get("classname").removeprefix("calaudit.")
        status = re.match(r"status (\w+)", case.find("system-out").text).group(1)
        name = re.sub(r" #\d+$", "", case.get("name"))
        found.append((f"{kind}:{name}", status))
    return found


def _unescape(cell: str) -> str:
    return re.sub(r"\\(.)", r"\1", cell.strip())


def from_step_summary(folder: Path) -> list[tuple[str, str]]:
    text = (folder / "summary.md").read_text(encoding="utf-8")
    block = text.split("<summary>All checks")[1]
    rows = [line.split(" | ") for line in block.splitlines() if line.startswith("| ")
            and not line.startswith("| check ")]
    return [(f"{row[1].split()[0]}:{_unescape(row[0][2:])}", row[2].strip("*"))
            for row in rows]


class _Checks(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "tr" and "data-check" in attributes:
            self.found.append((attributes["data-check"], attributes["data-status"]))


def from_html(folder: Path) -> list[tuple[str, str]]:
    parser = _Checks()
    parser.feed((folder / "r.html").read_text(encoding="utf-8"))
    return parser.found


def from_markdown(folder: Path) -> list[tuple[str, str]]:
    text = (folder / "r.md").read_text(encoding="utf-8")
    block = text.split("\n## Checks\n")[1].split("\n## ")[0]
    rows = [line.split(" | ") for line in block.splitlines() if line.startswith("| ")
            and not line.startswith("| check ")]
    return [(_unescape(row[0][2:]), row[1]) for row in rows]


def counts(checks: list[tuple[str, str]]) -> Counter:
    return Counter(status for _, status in checks)


def test_every_output_shows_the_same_checks(gated_run):
    folder, run = gated_run
    expected = from_json(folder)
    kinds = {name.split(":")[0] for name, _ in expected}
    assert {"metric", "test", "baseline"} <= kinds and len(expected) > 20
    assert "FAIL" in dict(expected).values()
    outputs = {"junit": from_junit(folder), "step summary": from_step_summary(folder),
               "html": from_html(folder), "markdown": from_markdown(folder)}
    for name, found in outputs.items():
        assert found == expected, name
    # the terminal: the same counts, and every check on a line with its status
    line = re.search(r"verdict: FAIL \((\d+) checks: ([^;]+);(?: (\d+) diagnostic test\(s\) "
                     r"\(do not gate\): ([^;]+);)?", run.stdout)
    assert line is not None, run.stdout
    assert int(line.group(1)) + int(line.group(3) or 0) == len(expected)
    shown: Counter = Counter()
    for group in (line.group(2), line.group(4) or ""):
        shown.update({status: int(n) for n, status in re.findall(r"(\d+) (\w+)", group)})
    assert shown == counts(expected)
    lines = run.stdout.splitlines()
    for name, status in expected:
        kind, check = name.split(":", 1)
        assert any(re.search(rf"(^|[\s:]){re.escape(check)}\s.*\b{status}\b", row)
                   for row in lines), (name, status)


def test_reports_have_the_baseline_section_with_its_fingerprint(gated_run):
    folder, _ = gated_run
    payload = json.loads((folder / "r.json").read_text(encoding="utf-8"))
    digest = payload["baseline"]["sha256"]
    html = (folder / "r.html").read_text(encoding="utf-8")
    markdown = (folder / "r.md").read_text(encoding="utf-8")
    for text in (html, markdown):
        assert digest in text and "Baseline comparison" in text
        assert "regression(s)" in text and "tolerance" in text
    assert "- baseline sha256: `" + digest + "`" in markdown


def test_terminal_separates_metrics_and_tests_and_labels_p_values(gated_run):
    _, run = gated_run
    assert "metrics (estimates" in run.stdout and "tests (status from the adjusted" in run.stdout
    header = next(line for line in run.stdout.splitlines() if line.startswith("test "))
    assert "p (raw)" in header and "p (holm-adjusted)" in header
    spiegelhalter = next(line for line in run.stdout.splitlines()
                         if line.startswith("spiegelhalter "))
    raw, adjusted = re.findall(r"\d\.\d{3}", spiegelhalter)[:2]
    assert raw != adjusted  # the raw p-value is shown, not only the adjusted one


def test_explain_prints_what_each_row_means(tmp_path):
    run = calaudit("metrics", SAMPLES / "credit_default.csv", "--explain", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "what the rows mean:" in run.stdout
    assert re.search(r"calibration_slope: .*closest to 1 is better; ideal 1", run.stdout)
    assert re.search(r"ece_debiased: .*clipped at 0: the unclipped estimate is -", run.stdout)


def test_markdown_tables_fit_100_columns(gated_run):
    folder, _ = gated_run
    wide = [line for line in (folder / "r.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("|") and len(line) > 100]
    assert wide == []


@pytest.mark.slow
def test_documents_are_byte_identical_across_processes(gated_run, tmp_path):
    """The gated run again in another process and folder (its configuration and baseline
    copied): every file, reports, JSON, JUnit and step summary, has the same bytes."""
    first, _ = gated_run
    for name in ("calaudit.toml", "base.json"):
        shutil.copyfile(first / name, tmp_path / name)
    gated_test(tmp_path)
    outputs = [{p.relative_to(folder): p.read_bytes()
                for p in sorted(folder.rglob("*")) if p.is_file()}
               for folder in (first, tmp_path)]
    assert outputs[0].keys() == outputs[1].keys()
    assert {Path("r.html"), Path("r.md"), Path("r.xml"), Path("r.json")} <= outputs[0].keys()
    for path in outputs[0]:
        assert outputs[0][path] == outputs[1][path], path
    junit = outputs[0][Path("r.xml")].decode("utf-8")
    assert 'time="0"' in junit and "runtime" not in junit


@pytest.mark.parametrize("args", [("test", "missing.csv"),
                                  ("test", "missing.csv", "--no-such-option")])
def test_errors_under_github_actions_are_annotated(tmp_path, args):
    summary = tmp_path / "summary.md"
    run = calaudit(*args, cwd=tmp_path, env={"GITHUB_ACTIONS": "true",
                                             "GITHUB_STEP_SUMMARY": str(summary)})
    assert run.returncode == 2
    annotations = [line for line in run.stderr.splitlines() if line.startswith("::error ")]
    assert len(annotations) == 1 and annotations[0].startswith("::error title=calaudit error::")
    assert "**The audit did not run:**" in summary.read_text(encoding="utf-8")
