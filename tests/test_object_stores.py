"""Datasets on object storage over the stores' real protocols: S3 (a moto
server), Google Cloud Storage (gcp-storage-emulator) and Azure Blob Storage (Azurite), read
through s3fs, gcsfs and adlfs exactly as a bucket in the cloud would be
(``tests/object_stores/servers.py``).

The environment variable that points a shell at the store is the only setting
(``docs/inputs.md``): ``AWS_ENDPOINT_URL_S3``, ``STORAGE_EMULATOR_HOST``,
``AZURE_STORAGE_CONNECTION_STRING``. Checked on every store: a hive-partitioned Parquet
dataset and a CSV glob give the local files' data and the same audit JSON; provenance lists
every object with its size, its ETag and its rows; a missing bucket, a missing prefix and a
bad row in the third object are one line, exit 2; the command line works with only the
variable set. Azurite needs Node.js: ``.ci/run`` installs it and sets
``CALAUDIT_REQUIRE_AZURITE=1``, which turns its skip-when-absent into a failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from calaudit.data.load import load
from tests.cli_inprocess import assert_one_line_error, run_cli
from tests.conftest import ROOT, binary_frame, write_frame
from tests.object_stores import servers
from tests.test_datasets import assert_same, split

SIZES = (120, 100, 80)


def _require(*modules: str) -> None:
    for module in modules:
        pytest.importorskip(module)


def _server(scheme: str):
    if scheme == "s3":
        _require("moto.server", "s3fs")
        return servers.s3_server()
    if scheme == "gs":
        _require("gcp_storage_emulator", "gcsfs")
        return servers.gcs_server()
    _require("adlfs")
    command = servers.azurite_command()
    if command is None:
        if os.environ.get("CALAUDIT_REQUIRE_AZURITE") == "1":
            pytest.fail("azurite-blob not found (CALAUDIT_REQUIRE_AZURITE=1): "
                        "npm ci --prefix tests/object_stores")
        pytest.skip("azurite-blob not found: npm ci --prefix tests/object_stores")
    return servers.azure_server(command)


def _fill(store: servers.Store, local) -> None:
    """The binary frame as hive partitions ``preds/region=*/part-k.parquet``, as CSV parts
    ``csv/part-k.csv`` and ``bad/part-k.csv`` (data row 8 of the third is out of range),
    written under ``local`` and uploaded."""
    frame = binary_frame(300)
    for k, part in enumerate(split(frame, SIZES)):
        region = "north" if k < 2 else "south"
        for folder in (f"preds/region={region}", "csv", "bad"):
            (local / folder).mkdir(parents=True, exist_ok=True)
        key = f"preds/region={region}/part-{k}.parquet"
        store.upload(write_frame(part, local / key), key)
        csv = write_frame(part, local / "csv" / f"part-{k}.csv")
        store.upload(csv, f"csv/part-{k}.csv")
        if k == 2:
            part = part.copy()
            part.loc[7, "prob"] = 1.5
            csv = write_frame(part, local / "bad" / f"part-{k}.csv")
        store.upload(csv, f"bad/part-{k}.csv")


@pytest.fixture(scope="module", params=["s3", "gs", "abfs"])
def store(request, tmp_path_factory):
    """A running store holding the test data; ``store.local`` is the local copy."""
    with _server(request.param) as running:
        running.local = tmp_path_factory.mktemp(f"{request.param}data")
        _fill(running, running.local)
        yield running


def test_partitioned_parquet_in_a_store_is_the_local_dataset(store):
    data = load(store.url("preds/"), covariates="age,race,region")
    assert_same(data, load(store.local / "preds", covariates="age,race,region"))
    files = data.provenance.files
    assert [f.path for f in files] == [
        store.url("preds/region=north/part-0.parquet"),
        store.url("preds/region=north/part-1.parquet"),
        store.url("preds/region=south/part-2.parquet")]
    assert [f.rows for f in files] == list(SIZES)
    local = sorted((store.local / "preds").rglob("*.parquet"))
    assert [f.size for f in files] == [p.stat().st_size for p in local]
    assert [f.fingerprint_kind for f in files] == ["etag"] * 3
    fs = store.filesystem
    tags = [next(str(info[k]) for k in ("ETag", "etag") if info.get(k))
            for info in (fs.info(f.path) for f in files)]
    assert [f.fingerprint for f in files] == tags
    assert len(set(tags)) == 3
    if store.scheme == "s3":  # a single-part upload's ETag is the MD5 of its bytes
        assert [t.strip('"') for t in tags] == [
            hashlib.md5(p.read_bytes()).hexdigest() for p in local]


def test_csv_glob_in_a_store_is_the_local_glob(store):
    assert_same(load(store.url("csv/part-*.csv"), covariates="age,race"),
                load(str(store.local / "csv" / "part-*.csv"), covariates="age,race"))


def _audit(spec, out):
    outcome = run_cli("test", spec, "--covariates", "age,race,region", "--json", out,
                      "--local-resamples", "50", "--n-resamples", "50")
    assert outcome.code in (0, 1), outcome.stderr
    payload = json.loads(out.read_text())
    for volatile in ("created_at", "runtime_seconds", "inputs", "config_sources"):
        payload.pop(volatile)
    return payload


def test_audit_of_a_stored_dataset_equals_the_local_audit(store, tmp_path):
    remote = _audit(store.url("preds/"), tmp_path / "remote.json")
    assert remote == _audit(str(store.local / "preds"), tmp_path / "local.json")


@pytest.mark.parametrize("store", ["s3"], indirect=True)
def test_a_stored_csv_glob_is_read_by_the_tasks_as_the_local_glob(store, tmp_path,
                                                                 monkeypatch):
    """On two workers, the CSV parts on the store take the path whose tasks read their own
    rows (each worker copies the stored files it reads; the client copies none, not even
    the first file for its header), with the local glob's JSON. On S3 only: every store
    reads its objects through the same fsspec calls, which the bad-row test below runs
    on two workers for each store."""
    from calaudit.data.partitioned import Dataset

    def no_copy(self, file, action):
        raise AssertionError(f"the client copied {file.name}")

    monkeypatch.setattr(Dataset, "_with_local_copy", no_copy)
    outcome = run_cli("test", store.url("csv/part-*.csv"), "--covariates", "age,race",
                      "--json", tmp_path / "remote.json", "--n-resamples", "50",
                      "--local-resamples", "50", "--verbose", "--workers", "2")
    assert outcome.code in (0, 1), outcome.stderr
    assert "rows read by the tasks that reduce them" in outcome.stderr
    monkeypatch.undo()
    local = run_cli("test", str(store.local / "csv" / "part-*.csv"), "--covariates",
                    "age,race", "--json", tmp_path / "local.json", "--n-resamples", "50",
                    "--local-resamples", "50")
    assert local.code == outcome.code

    def payload(path):
        out = json.loads(path.read_text())
        for volatile in ("created_at", "runtime_seconds", "inputs", "config_sources"):
            out.pop(volatile)
        return out

    assert payload(tmp_path / "remote.json") == payload(tmp_path / "local.json")


def test_bad_row_in_a_stored_object_is_one_line(store):
    """Loaded here, or read by the tasks of two workers (each copying the objects it
    reads): the same line, naming the object by its URL."""
    line = assert_one_line_error(run_cli("metrics", store.url("bad/part-*.csv")),
                                 store.url("bad/part-2.csv"), "data row 8")
    assert "global row 228" in line
    by_tasks = run_cli("test", store.url("bad/part-*.csv"), "--workers", "2")
    assert assert_one_line_error(by_tasks, store.url("bad/part-2.csv"), "data row 8") == line


def test_missing_bucket_or_prefix_is_one_line(store):
    assert_one_line_error(run_cli("metrics", store.url("nothing/")), "[file_not_found]")
    assert_one_line_error(run_cli("metrics", f"{store.scheme}://no-such-bucket/preds/"),
                          "[file_not_found]")


def test_command_line_with_only_the_store_variable(store, tmp_path):
    """The documented set-up of a user's shell: the store's variable(s), nothing else."""
    env = {**os.environ, **store.env, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    env.pop("FSSPEC_S3_ENDPOINT_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "calaudit", "metrics", store.url("preds/"),
         "--covariates", "age,race,region", "--json", str(tmp_path / "m.json")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    inputs = json.loads((tmp_path / "m.json").read_text())["inputs"]
    assert inputs["total"] == {"files": 3, "bytes": sum(
        p.stat().st_size for p in (store.local / "preds").rglob("*.parquet")), "rows": 300}
