"""Issue 11: config files and saved results (size, depth, FIFOs, devices, schema)."""

from __future__ import annotations

import json
import os

import pytest

from tests.cli_inprocess import assert_one_line_error, run_cli
from tests.conftest import binary_frame, write_frame


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A real result written by ``calaudit metrics --json`` and the data behind it."""
    folder = tmp_path_factory.mktemp("saved")
    data = write_frame(binary_frame(120), folder / "d.csv")
    outcome = run_cli("metrics", data, "--json", folder / "r.json", "--quiet")
    assert outcome.code in (0, 1), outcome.stderr
    return data, json.loads((folder / "r.json").read_text())


def _broken(payload):
    cases = {}
    for name, change in {
        "value_text": lambda p: p["metrics"][0].__setitem__("value", "high"),
        "metrics_strings": lambda p: p.__setitem__("metrics", ["ece"]),
        "metric_without_id": lambda p: p["metrics"][0].pop("id"),
        "params_list": lambda p: p["metrics"][0].__setitem__("params", [1]),
        "config_string": lambda p: p.__setitem__("config", "x"),
        "tests_string": lambda p: p.__setitem__("tests", "x"),
        "not_result": lambda p: (p.clear(), p.__setitem__("a", 1)),
    }.items():
        copy = json.loads(json.dumps(payload))
        change(copy)
        cases[name] = json.dumps(copy)
    text = json.dumps(payload)
    cases["infinity"] = text.replace('"value": ', '"value": Infinity, "x": ', 1)
    cases["huge_int"] = text.replace('"schema_version": 1', '"schema_version": ' + "9" * 5000)
    cases["deep"] = "[" * 100000 + "]" * 100000
    cases["deep_inside"] = text[:-1] + ', "deep": ' + "[" * 70 + "]" * 70 + "}"
    return cases


READERS = ("report", "compare", "baseline")


def _run_reader(reader, path, data, tmp_path):
    if reader == "report":
        return run_cli("report", path, "--html", tmp_path / "out.html")
    if reader == "compare":
        return run_cli("compare", path, path, "--json", tmp_path / "out.json")
    return run_cli("metrics", data, "--baseline", path, "--json", tmp_path / "out.json")


@pytest.mark.parametrize("reader", READERS)
def test_every_reader_refuses_broken_results_alike(saved, tmp_path, reader):
    data, payload = saved
    messages = {}
    for name, text in _broken(payload).items():
        path = tmp_path / f"{name}.json"
        path.write_text(text)
        line = assert_one_line_error(_run_reader(reader, path, data, tmp_path), str(path))
        assert "[result_schema]" in line or "[json]" in line, line
        messages[name] = line
        assert not list(tmp_path.glob("out.*")), name
    assert "'metrics[0].value' must be a number or null" in messages["value_text"]
    assert "non-standard JSON constant Infinity" in messages["infinity"]
    assert "digits" in messages["huge_int"] and "nested deeper" in messages["deep"]
    assert "no schema_version" in messages["not_result"]


@pytest.mark.parametrize("reader", READERS)
def test_readers_refuse_fifos_devices_and_directories(saved, tmp_path, reader):
    data, _ = saved
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    for path, words in ((fifo, "FIFO"), ("/dev/zero", "device"), (tmp_path, "directory")):
        assert_one_line_error(_run_reader(reader, path, data, tmp_path), words)


def test_a_comparison_is_not_a_baseline(saved, tmp_path):
    data, payload = saved
    path = tmp_path / "r.json"
    path.write_text(json.dumps(payload))
    assert run_cli("compare", path, path, "--json", tmp_path / "c.json").code == 0
    assert_one_line_error(run_cli("compare", tmp_path / "c.json", path), "is a comparison")


@pytest.mark.parametrize("text, fragment", [
    ("alpha = " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than 32"),
    ("alpha = " + "[" * 40 + "]" * 40 + "\n", "nested deeper than 32"),
    ("alpha = 0.1\n# " + "x" * (1 << 20) + "\n", "larger than the limit"),
    (b"alpha = '\xff'\n", "not UTF-8"),
])
def test_config_limits(tmp_path, text, fragment):
    path = tmp_path / "c.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert_one_line_error(run_cli("config", "show", "--config", path), fragment)


def test_config_special_files(tmp_path):
    fifo = tmp_path / "f.toml"
    os.mkfifo(fifo)
    assert_one_line_error(run_cli("config", "show", "--config", fifo), "FIFO")
    assert_one_line_error(run_cli("config", "show", "--config", "/dev/zero"), "device")
    assert_one_line_error(run_cli("config", "show", "--config", tmp_path), "directory")


def test_pyproject_with_a_scalar_tool_is_an_error_not_a_crash(tmp_path):
    (tmp_path / "pyproject.toml").write_text("tool = 'x'\n")
    assert_one_line_error(run_cli("config", "show", cwd=tmp_path), "'tool' must be a table")
    assert_one_line_error(run_cli("config", "show", "--config", tmp_path / "pyproject.toml"),
                          "'tool' must be a table")
