"""Local servers that speak the object stores' real protocols, for
``tests/test_object_stores.py``: S3 (moto), Google Cloud Storage (gcp-storage-emulator) and
Azure Blob Storage (Azurite, Microsoft's emulator, from npm: ``.ci/run`` installs it from
``tests/object_stores/package.json``).

Each server is a context manager yielding a :class:`Store`: the URL scheme, a bucket (or
container) ``audits`` that exists, and the environment variables that point a user's
shell at it (the set-up ``docs/inputs.md`` documents). While it runs, those variables are
set in this process, so fsspec's filesystems (s3fs, gcsfs, adlfs) reach the server.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import fsspec

BUCKET = "audits"
HERE = Path(__file__).resolve().parent
#: Azurite's documented development account (public, for the emulator only).
AZURITE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr"
               "/KBHBeksoGMGw==")


@dataclass
class Store:
    """A running object store: URLs ``{scheme}://audits/...``, set up by ``env``."""

    scheme: str
    env: dict[str, str] = field(default_factory=dict)

    def url(self, key: str = "") -> str:
        return f"{self.scheme}://{BUCKET}/{key}"

    @property
    def filesystem(self):
        return fsspec.filesystem(self.scheme)

    def upload(self, local: Path, key: str) -> None:
        self.filesystem.put_file(str(local), f"{BUCKET}/{key}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def environment(values: dict[str, str]):
    """``os.environ`` updated with ``values`` inside the block, restored after."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)


def _fresh(scheme: str) -> None:
    """Drop fsspec's cached filesystem instances, which remember their endpoint."""
    fsspec.get_filesystem_class(scheme).clear_instance_cache()


@contextlib.contextmanager
def _store(scheme: str, env: dict[str, str], command: list[str], port: int,
           make_bucket: bool = True):
    """The :class:`Store` of ``command`` (a server listening on ``port``) with ``env`` set
    and fsspec's cached filesystems dropped before and after; ``make_bucket``: create
    ``audits`` (a server that cannot be told a default bucket)."""
    with served(command, port), environment(env):
        _fresh(scheme)
        store = Store(scheme, env)
        try:
            if make_bucket:
                store.filesystem.mkdir(BUCKET)
            yield store
        finally:
            _fresh(scheme)


@contextlib.contextmanager
def s3_server():
    """moto's S3 server; ``AWS_ENDPOINT_URL_S3`` points s3fs (and boto) at it."""
    port = free_port()
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{port}"}
    command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    with _store("s3", env, command, port) as store:
        yield store


@contextlib.contextmanager
def gcs_server():
    """gcp-storage-emulator's GCS JSON API; ``STORAGE_EMULATOR_HOST`` points gcsfs at it.

    ``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false``: gcsfs otherwise first asks Google's gRPC
    control plane for the bucket's layout, which no emulator serves (a 60 s timeout
    per bucket before it falls back to the JSON API)."""
    port = free_port()
    env = {"STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{port}",
           "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}
    command = [sys.executable, "-m", "gcp_storage_emulator", "start", "--host", "127.0.0.1",
               "--port", str(port), "--in-memory", "--default-bucket", BUCKET, "--quiet"]
    with _store("gs", env, command, port, make_bucket=False) as store:
        yield store


def azurite_command() -> str | None:
    """``azurite-blob``: ``$CALAUDIT_AZURITE``, the copy ``.ci/run`` installs next to this
    file, or one on ``PATH``."""
    candidates = [os.environ.get("CALAUDIT_AZURITE"),
                  str(HERE / "node_modules" / ".bin" / "azurite-blob"),
                  shutil.which("azurite-blob")]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def _wait_for_port(port: int, process: subprocess.Popen, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited with {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{process.args[0]} did not start listening on {port}")


@contextlib.contextmanager
def served(command: list[str], port: int):
    """``command`` running in a process of its own (its logs go nowhere: the in-process
    CLI tests read this process's stderr) until the block ends."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, process)
        yield process
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)
        if process.poll() is None:
            process.kill()
            process.wait()


@contextlib.contextmanager
def azure_server(command: str):
    """Azurite's blob service; ``AZURE_STORAGE_CONNECTION_STRING`` points adlfs at it.
    ``--disableTelemetry``: otherwise Azurite sends usage data, and after a SIGTERM it does
    not end within the 10 s :func:`served` waits (it was killed after them)."""
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="azurite-")
    env = {"AZURE_STORAGE_CONNECTION_STRING": (
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
        f"AccountKey={AZURITE_KEY};BlobEndpoint=http://127.0.0.1:{port}/devstoreaccount1;")}
    try:
        with _store("abfs", env, [command, "--blobHost", "127.0.0.1", "--blobPort", str(port),
                                  "--location", workdir, "--silent", "--skipApiVersionCheck",
                                  "--loose", "--disableTelemetry"], port) as store:
            yield store
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
