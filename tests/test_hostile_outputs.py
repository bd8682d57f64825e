"""Issue 11: outputs are all or nothing; stdout carries only JSON; bad targets first."""

from __future__ import annotations

import os

import pytest

from calaudit.cli.errors import MAX_LINE
from calaudit.exceptions import ConfigError
from calaudit.output import files
from calaudit.output.files import write_all
from tests.cli_inprocess import assert_one_line_error, run_cli
from tests.conftest import binary_frame, write_frame

LONG = "h" * 300  # longer than any file-system name: fails even for root


@pytest.fixture
def data(tmp_path):
    return write_frame(binary_frame(80), tmp_path / "d.csv")


def listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_failing_target_leaves_nothing(tmp_path, data):
    (tmp_path / "outdir").mkdir()
    before = listing(tmp_path)
    line = assert_one_line_error(run_cli("metrics", data, "--json", tmp_path / "r.json",
                                         "--junit", tmp_path / "outdir"), "is a directory")
    assert "--junit" in line and listing(tmp_path) == before


@pytest.mark.parametrize("command", ["metrics", "test"])
def test_markdown_then_a_failing_html_leaves_no_new_folder(tmp_path, data, command):
    before = listing(tmp_path)
    fast = ["--n-resamples", "20"] if command == "test" else []
    outcome = run_cli(command, data, "--md", tmp_path / "newdir" / "deeper" / "r.md",
                      "--json", tmp_path / "r.json", *fast,
                      "--html", tmp_path / "newdir" / f"{LONG}.html")
    assert_one_line_error(outcome, "cannot write output")
    assert listing(tmp_path) == before


def test_report_with_an_existing_directory_as_html(tmp_path, data):
    assert run_cli("metrics", data, "--json", tmp_path / "r.json", "-q").code in (0, 1)
    (tmp_path / "existing").mkdir()
    before = listing(tmp_path)
    assert_one_line_error(run_cli("report", tmp_path / "r.json", "--md", tmp_path / "r.md",
                                  "--html", tmp_path / "existing"), "--html", "is a directory")
    assert listing(tmp_path) == before


@pytest.mark.parametrize("args, fragment", [
    (["--json", "-", "--md", "-"], "--md -: only --json can write to stdout"),
    (["--json", "-", "--html", "-"], "--html -: only --json"),
    (["--json", "-", "--junit", "-"], "--junit -: only --json"),
    (["--json", "X", "--junit", "X"], "the same path as --json"),
    (["--json", ""], "--json '': the path is empty"),
    (["--md", ""], "--md '': the path is empty"),
    (["--html", "afile/r.html"], "'afile' is a file, not a directory"),
    (["--md", "afile/r.md"], "'afile' is a file, not a directory"),
    (["--md", "r.md", "--html", "r_files/x.html"], "r_files"),
])
def test_bad_targets_fail_before_any_work(tmp_path, data, args, fragment):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "r_files").write_text("in the way of the figures")
    before = listing(tmp_path)
    outcome = run_cli("test", data, *args, cwd=tmp_path)
    assert_one_line_error(outcome, fragment)
    assert outcome.stdout == "" and listing(tmp_path) == before


def test_blocked_figures_folder(tmp_path, data):
    (tmp_path / "r_files").write_text("a file where the figures go")
    before = listing(tmp_path)
    assert_one_line_error(run_cli("metrics", data, "--json", tmp_path / "r.json",
                                  "--md", tmp_path / "r.md"), "r_files")
    assert listing(tmp_path) == before


def test_compare_and_report_check_their_targets(tmp_path, data):
    assert run_cli("metrics", data, "--json", tmp_path / "r.json", "-q").code in (0, 1)
    result = tmp_path / "r.json"
    assert_one_line_error(run_cli("compare", result, result, "--json", "x", "--junit", "x",
                                  cwd=tmp_path), "the same path")
    assert_one_line_error(run_cli("compare", result, result, "--junit", "-"), "only --json")
    assert_one_line_error(run_cli("report", result, "--md", "-"), "only --json")
    assert_one_line_error(run_cli("report", result, "--html", ""), "empty")


def test_write_all_restores_overwritten_files_when_a_later_commit_fails(tmp_path,
                                                                        monkeypatch):
    old = tmp_path / "old.json"
    old.write_text("previous")
    real_replace = os.replace
    calls = []

    def failing_replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(files.os, "replace", failing_replace)
    with pytest.raises(ConfigError, match="No space left"):
        write_all([(old, "new"), (tmp_path / "new" / "b.md", "b")])
    monkeypatch.setattr(files.os, "replace", real_replace)
    assert old.read_text() == "previous"
    assert listing(tmp_path) == ["old.json"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_folder(tmp_path, data):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        before = listing(tmp_path)
        assert_one_line_error(run_cli("metrics", data, "--json", tmp_path / "r.json",
                                      "--junit", folder / "j.xml"), "cannot write output")
        assert listing(tmp_path) == before
    finally:
        folder.chmod(0o755)


def test_config_init_into_a_directory(tmp_path):
    line = assert_one_line_error(run_cli("config", "init", tmp_path), "is a directory")
    assert "--force" not in line


def test_sample_data_onto_an_existing_file(tmp_path):
    (tmp_path / "afile").write_text("x")
    assert_one_line_error(run_cli("sample-data", tmp_path / "afile"), "not a directory")
    assert run_cli("sample-data", tmp_path / "new" / "dir").code == 0
    assert (tmp_path / "new" / "dir" / "credit_default.csv").is_file()


def test_step_summary_that_is_a_fifo_is_skipped(tmp_path, data):
    fifo = tmp_path / "summary"
    os.mkfifo(fifo)
    outcome = run_cli("metrics", data, env={"GITHUB_STEP_SUMMARY": str(fifo)})
    assert outcome.code in (0, 1) and "not a regular file" in outcome.stderr


def test_a_fifo_as_output_is_refused_and_left_in_place(tmp_path, data):
    import stat

    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    for option in ("--json", "--junit", "--html"):
        assert_one_line_error(run_cli("metrics", data, option, fifo),
                              f"{option} {fifo}", "device, FIFO or socket", "[output]")
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    link = tmp_path / "link.json"
    link.symlink_to(fifo)
    assert_one_line_error(run_cli("metrics", data, "--json", link), "device, FIFO or socket")
    assert link.is_symlink() and stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.parametrize("option, name", [
    ("--pdf", f"{LONG}.pdf"), ("--html", f"{LONG}/r.html"), ("--md", f"{'m' * 250}.md"),
    ("--json", f"{'j' * 40}/" * 120 + "r.json"),
])
def test_over_long_output_paths_are_one_line_before_the_audit(tmp_path, data, monkeypatch,
                                                             option, name):
    from calaudit.audit import runner

    def refuse(*args, **kwargs):
        raise AssertionError("the audit ran")

    monkeypatch.setattr(runner, "run_audit", refuse)
    before = listing(tmp_path)
    line = assert_one_line_error(run_cli("test", data, option, name, cwd=tmp_path),
                                 f"{option} ", "cannot write output", "longer than",
                                 "(hint: choose a shorter")
    assert listing(tmp_path) == before and len(line) <= MAX_LINE + len("calaudit: error: ")


def test_pdf_without_its_system_libraries_is_one_line_before_the_audit(tmp_path, data,
                                                                       monkeypatch):
    import builtins
    import sys

    from calaudit.audit import runner

    real_import = builtins.__import__

    def no_pango(name, *args, **kwargs):
        if name == "weasyprint":
            raise OSError("cannot load library 'libpango-1.0-0': libpango-1.0-0: cannot open "
                          "shared object file: No such file or directory")
        return real_import(name, *args, **kwargs)

    def refuse(*args, **kwargs):
        raise AssertionError("the audit ran")

    monkeypatch.delitem(sys.modules, "weasyprint", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_pango)
    monkeypatch.setattr(runner, "run_audit", refuse)
    for args in (("test", data), ("report", tmp_path / "missing.json")):
        assert_one_line_error(run_cli(*args, "--pdf", tmp_path / "r.pdf"),
                              "--pdf: WeasyPrint cannot load its system libraries",
                              "libpango", "(hint: install Pango")
    assert listing(tmp_path) == ["d.csv"]
