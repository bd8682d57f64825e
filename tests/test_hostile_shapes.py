"""Extreme shapes fail or shrink with one line: at most ``MAX_COVARIATES`` covariates,
``MAX_CATEGORIES`` categories per categorical covariate and ``MAX_KERNEL_COLUMNS`` encoded
columns in all (each refused with one line before the audit's work grows with them), and
reports that list at most ``REPORT_MAX_ROWS`` rows per table and show at most
``REPORT_MAX_TEXT`` characters of a text, however large the saved result."""

from __future__ import annotations

import copy
import re

import numpy as np
import pandas as pd
import pytest

from calaudit import limits
from calaudit.audit import runner
from calaudit.local.groups import rows_by_code, rows_where
from calaudit.report.context import build_context
from calaudit.report.render import render_html, render_markdown, shown
from tests.cli_inprocess import assert_one_line_error, run_cli
from tests.conftest import binary_frame
from tests.report.synthetic import _group, binary_result


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    prob = rng.uniform(0.05, 0.95, n)
    return pd.DataFrame({"label": (rng.uniform(size=n) < prob).astype(np.int64),
                         "prob": prob})


@pytest.fixture
def no_audit(monkeypatch):
    """The audit must not start: the checks come first."""
    def refuse(*args, **kwargs):
        raise AssertionError("the audit ran")

    monkeypatch.setattr(runner, "run_audit", refuse)


@pytest.mark.parametrize("command", ["metrics", "test"])
def test_a_covariate_with_100000_categories_is_one_line(tmp_path, command, no_audit):
    frame = _frame(100_000)
    frame["zip"] = [f"z{k}" for k in range(len(frame))]
    frame.to_parquet(tmp_path / "d.parquet", index=False)
    line = assert_one_line_error(run_cli(command, "d.parquet", "--covariates", "zip",
                                         cwd=tmp_path),
                                 "column 'zip'", "100,000 categories", "at most 256",
                                 "[too_many_categories]")
    assert "d.parquet" in line


def test_1000_covariates_are_refused_before_the_file_is_read(tmp_path, no_audit):
    frame = _frame(30)
    wide = pd.concat([frame, pd.DataFrame(np.zeros((30, 1000)),
                                          columns=[f"x{k}" for k in range(1000)])], axis=1)
    wide.to_csv(tmp_path / "d.csv", index=False)
    names = ",".join(f"x{k}" for k in range(1000))
    for command in ("metrics", "test"):
        assert_one_line_error(run_cli(command, "d.csv", "--covariates", names, cwd=tmp_path),
                              "1,000 covariates given", "at most 20",
                              "[too_many_covariates]")


def test_the_encoded_columns_are_bounded_in_all(tmp_path, no_audit):
    frame = _frame(600)
    for name in ("a", "b", "c"):  # 3 x 200 categories: each allowed, 600 columns in all
        frame[name] = [f"{name}{k % 200}" for k in range(600)]
    frame.to_csv(tmp_path / "d.csv", index=False)
    assert_one_line_error(run_cli("metrics", "d.csv", "--covariates", "a,b,c", cwd=tmp_path),
                          "600 categories and numeric columns", "at most 512")


def test_the_limits_are_inclusive(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_CATEGORIES", 3)
    monkeypatch.setattr(limits, "MAX_COVARIATES", 2)
    frame = binary_frame(120)
    frame["four"] = np.arange(120) % 4
    frame.to_csv(tmp_path / "d.csv", index=False)
    assert run_cli("metrics", "d.csv", "--covariates", "age,race", cwd=tmp_path).code in (0, 1)
    assert_one_line_error(run_cli("metrics", "d.csv", "--covariates", "race,four",
                                  "--categorical", "four", cwd=tmp_path),
                          "column 'four'", "4 categories")
    assert_one_line_error(run_cli("metrics", "d.csv", "--covariates", "age,race,four",
                                  cwd=tmp_path), "3 covariates given")


def test_group_rows_come_from_one_sort():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 50, 5000).astype(np.int32)
    codes[codes == 7] = 8  # a code that is absent
    found = rows_by_code(codes)
    assert [code for code, _ in found] == sorted(set(codes.tolist()))
    for code, rows in found:
        expected = rows_where(codes == code)
        assert rows.dtype == expected.dtype and np.array_equal(rows, expected)


# ------------------------------------------------------------------------- reports

def _many_groups(count: int, fails: int) -> dict:
    result = binary_result()
    groups = [_group(f"zip={k:05d}", {"zip": f"{k:05d}"}, 100, 20, 0.2,
                     "FAIL" if k % (count // fails) == 0 else "PASS", 0.5, 1.0)
              for k in range(count)]
    result["groups"] = groups
    return result


@pytest.mark.slow
def test_reports_list_the_most_serious_groups_and_say_how_many_there_are(monkeypatch):
    monkeypatch.setattr(limits, "REPORT_MAX_ROWS", 30)
    result = _many_groups(600, 20)
    context = build_context(result)
    listed = [row.group for row in context.local.groups]
    assert len(listed) == 30
    failing = [g["group"] for g in result["groups"] if g["status"] == "FAIL"]
    assert set(failing) <= set(listed)
    assert "600 groups" in context.local.group_counts
    assert "lists the 30 most serious" in context.local.group_counts
    html = render_html(result).text
    assert "lists the 30 most serious" in html
    assert html.count("zip=00599") == 0 and "zip=00001" in html


@pytest.mark.slow
def test_reports_shorten_a_long_text_and_keep_its_ends():
    name = "s" + "n" * 100_000 + "e"
    result = copy.deepcopy(binary_result())
    result["groups"][0]["group"] = f"{name}=A"
    result["groups"][0]["covariates"] = {name: "A"}
    for cov in result["data"]["covariates"]:
        cov["name"] = name
    longest = max(len(run) for run in re.findall("n+", render_html(result).text))
    assert longest <= limits.REPORT_MAX_TEXT
    markdown = render_markdown(result, "r.md").text
    assert max(len(run) for run in re.findall("n+", markdown)) <= limits.REPORT_MAX_TEXT
    short = shown({"k" * 3000: ["v" * 3000, 1.5]}, limit=100)
    (key, value), = short.items()
    assert len(key) <= 100 and key.startswith("kk") and " … " in key
    assert len(value[0]) <= 100 and value[1] == 1.5
