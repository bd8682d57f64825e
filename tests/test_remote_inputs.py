"""URLs and local datasets fail as cleanly as files do: the supported protocols are a
documented list (others refused before any I/O), an object store that is refused or never
answers is one line within the documented timeout, a remote library's exception is an
input error naming the URL, and a local glob or directory walk refuses link loops, links
that reach a directory twice, absurd depths and absurd numbers of entries, while matching
exactly what ``glob.glob`` matches."""

from __future__ import annotations

import contextlib
import glob
import os
import random
import socket
import threading
import time
from pathlib import Path

import pytest

from calaudit import limits
from calaudit.data import locations, remote
from calaudit.exceptions import InputError
from tests.cli_inprocess import assert_one_line_error, run_cli
from tests.conftest import binary_frame, write_frame


@pytest.mark.parametrize("url", [
    "ftp://127.0.0.1:1/x.csv", "hdfs://localhost:1/x.csv", "http://127.0.0.1:1/x.csv",
    "https://example.org/p.parquet", "reference://x.csv", "github://a/b/x.csv",
    "sftp://127.0.0.1:1/x", "nosuch://x/y", "jlab://x", "webhdfs://127.0.0.1:1/x.csv",
])
def test_unsupported_protocols_are_refused_before_any_io(url, monkeypatch):
    import fsspec.core

    def no_io(*args, **kwargs):
        raise AssertionError("a filesystem was opened")

    monkeypatch.setattr(fsspec.core, "url_to_fs", no_io)
    line = assert_one_line_error(run_cli("metrics", url), "protocol is not supported",
                                 "[unsupported_url]", "s3://")
    assert url.split("://")[0] in line


@pytest.mark.parametrize("url", ["zip://x.csv::d.csv", "tar://x.csv::d.csv",
                                 "simplecache::s3://b/x.parquet",
                                 "zip://x.csv::missing.zip", "memory://a::memory://b"])
def test_chained_urls_are_refused(url, tmp_path):
    write_frame(binary_frame(50), tmp_path / "d.csv")
    assert_one_line_error(run_cli("metrics", url, cwd=tmp_path), "chained URLs",
                          "[unsupported_url]")


@contextlib.contextmanager
def silent_server():
    """A port that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _s3_env(port: int) -> dict[str, str]:
    return {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{port}"}


@pytest.fixture
def fresh_s3():
    s3fs = pytest.importorskip("s3fs")
    s3fs.S3FileSystem.clear_instance_cache()
    yield
    s3fs.S3FileSystem.clear_instance_cache()


def test_a_store_that_never_answers_times_out_in_one_line(monkeypatch, fresh_s3):
    monkeypatch.setattr(limits, "REMOTE_TIMEOUT", 1.0)
    monkeypatch.setattr(limits, "REMOTE_LIST_TIMEOUT", 2.0)
    with silent_server() as port:
        started = time.monotonic()
        outcome = run_cli("metrics", "s3://bucket/preds/", env=_s3_env(port))
        elapsed = time.monotonic() - started
    assert_one_line_error(outcome, "s3://bucket/preds/", "no answer", "[remote_timeout]")
    assert elapsed < 10


def test_a_refused_store_is_one_line_naming_the_url(fresh_s3):
    outcome = run_cli("metrics", "s3://bucket/p.parquet", env=_s3_env(_closed_port()))
    line = assert_one_line_error(outcome, "s3://bucket/p.parquet")
    assert "[unreadable_file]" in line or "[remote_timeout]" in line


def test_remote_library_failures_are_input_errors():
    class EndpointConnectionError(Exception):
        pass

    EndpointConnectionError.__module__ = "botocore.exceptions"

    class ReadTimeoutError(EndpointConnectionError):
        pass

    url = "s3://b/x.parquet"
    for exc, rule in ((EndpointConnectionError("no route"), "unreadable_file"),
                      (ReadTimeoutError("slow"), "remote_timeout"),
                      (ConnectionRefusedError(111, "refused"), "unreadable_file"),
                      (TimeoutError("late"), "remote_timeout"),
                      (FileNotFoundError("gone"), "file_not_found")):
        with pytest.raises(InputError) as caught, remote.remote_errors(url):
            raise exc
        assert caught.value.rule == rule and url in caught.value.one_line()
    with pytest.raises(ZeroDivisionError), remote.remote_errors(url):  # a bug stays a bug
        raise ZeroDivisionError


def test_bounded_options_keep_the_users_fsspec_configuration(monkeypatch):
    import fsspec.config

    monkeypatch.setitem(fsspec.config.conf, "s3", {"config_kwargs": {"read_timeout": 5}})
    options = remote.bounded_options("s3")["config_kwargs"]
    assert options["read_timeout"] == 5
    assert options["connect_timeout"] == limits.REMOTE_TIMEOUT
    assert remote.bounded_options("memory") == {}


# ------------------------------------------------------------------ local walks and globs

def _dataset(root: Path) -> None:
    (root / "a").mkdir(parents=True)
    write_frame(binary_frame(40), root / "a" / "p.csv")


def test_a_glob_through_a_link_loop_is_one_line(tmp_path):
    _dataset(tmp_path / "d")
    os.symlink("..", tmp_path / "d" / "a" / "up")
    os.symlink(".", tmp_path / "d" / "self")
    for spec in ("d/**/*.csv", "d/**", "d"):
        assert_one_line_error(run_cli("metrics", spec, cwd=tmp_path), "symbolic link loop",
                              "[symlink_loop]")


def test_a_directory_reached_twice_through_a_link_is_one_line(tmp_path):
    _dataset(tmp_path / "d")
    os.symlink("a", tmp_path / "d" / "b")
    assert_one_line_error(run_cli("metrics", "d/**/*.csv", cwd=tmp_path),
                          "its files would be read twice", "[symlink_loop]")


def test_deep_hive_directories_are_refused_in_every_form(tmp_path):
    deep = tmp_path / "h" / "/".join(f"k{i}=0" for i in range(limits.DATASET_MAX_DEPTH + 3))
    deep.mkdir(parents=True)
    write_frame(binary_frame(40), deep / "p.csv")
    for spec in ("h", "h/**/*.csv", "h/" + "**/" * 12 + "*.csv"):
        assert_one_line_error(run_cli("metrics", spec, cwd=tmp_path),
                              f"deeper than {limits.DATASET_MAX_DEPTH} levels",
                              "[dataset_too_deep]")


def test_a_walk_stops_after_the_most_entries(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "DATASET_MAX_ENTRIES", 25)
    for k in range(30):
        (tmp_path / "d" / f"f{k}").mkdir(parents=True)
    assert_one_line_error(run_cli("metrics", "d/**/*.csv", cwd=tmp_path), "more than 25",
                          "[dataset_too_large]")


def test_many_globstars_cost_no_more_than_one(tmp_path, monkeypatch):
    _dataset(tmp_path / "d")
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    pattern = "d/" + "**/" * 30 + "*.csv"
    assert locations._walk(*locations._glob_root(pattern)) == ["d/a/p.csv"]
    assert time.monotonic() - started < 2


PATTERNS = ["*.csv", "*/*.csv", "**/*.csv", "**", "a/**/b/*.csv", "**/k=*/*.csv",
            "**/**/*.csv", "[ab]/*", "?/*/*.csv", "a/*", "**/.h/*", ".h/*", "*/**/x.csv",
            "**/*", "b/**/*", "*/[!a]*/*.csv"]


@pytest.mark.parametrize("seed", range(3))
def test_the_walk_matches_what_glob_matches(tmp_path, seed, monkeypatch):
    """On random trees (hidden names, hive directories), every pattern lists the same
    paths as ``glob.glob(..., recursive=True)`` (without its duplicates and the
    pattern's own root)."""
    rng = random.Random(seed)
    monkeypatch.chdir(tmp_path)
    names = ["a", "b", "x.csv", "y.csv", ".h", ".h.csv", "k=1", "k=2", "z.parquet"]
    for _ in range(150):
        path = Path(*(rng.choice(names) for _ in range(rng.randint(1, 4))))
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.is_dir():
                path.touch()
    for pattern in PATTERNS:
        expected = sorted({p for p in glob.glob(pattern, recursive=True)
                           if not p.endswith("/")})
        assert locations._walk(*locations._glob_root(pattern)) == expected, pattern
