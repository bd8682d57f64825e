"""``s3://`` datasets over the real S3 protocol (issue 14): a moto S3 server on localhost,
read through s3fs exactly as a bucket on AWS or MinIO would be.

The endpoint is the only setting: fsspec's ``FSSPEC_S3_ENDPOINT_URL`` or the AWS SDK's
``AWS_ENDPOINT_URL_S3`` (``docs/inputs.md``). Checked: a hive-partitioned Parquet dataset
and a CSV glob give the local files' data and the same audit JSON; provenance lists every
object with its size, its ETag (the MD5 of a single-part upload) and its rows; a missing
bucket, a missing prefix and a bad row in the third object are one line, exit 2.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys

import fsspec
import pytest

from calaudit.data.load import load
from tests.cli_inprocess import assert_one_line_error, run_cli
from tests.conftest import ROOT, binary_frame, write_frame
from tests.test_datasets import assert_same, split

moto_server = pytest.importorskip("moto.server")
pytest.importorskip("s3fs")
boto3 = pytest.importorskip("boto3")

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1"}
BUCKET = "audits"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def endpoint():
    """A moto S3 server for this module; fsspec's s3 filesystems point at it."""
    saved = {key: os.environ.get(key) for key in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    before = dict(fsspec.config.conf.get("s3", {}))
    fsspec.config.conf["s3"] = {**before, "endpoint_url": url}
    fsspec.filesystem("s3").clear_instance_cache()
    try:
        yield url
    finally:
        fsspec.config.conf["s3"] = before
        server.stop()
        for key, value in saved.items():
            os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)


@pytest.fixture(scope="module")
def bucket(endpoint, tmp_path_factory):
    """The binary frame as hive partitions ``s3://audits/preds/region=*/part-k.parquet``,
    as CSV parts ``s3://audits/csv/part-k.csv`` (one with a bad row), and locally."""
    client = boto3.client("s3", endpoint_url=endpoint)
    client.create_bucket(Bucket=BUCKET)
    local = tmp_path_factory.mktemp("s3data")
    frame = binary_frame(300)
    for k, part in enumerate(split(frame, (120, 100, 80))):
        region = "north" if k < 2 else "south"
        for folder in (f"preds/region={region}", "csv", "bad"):
            (local / folder).mkdir(parents=True, exist_ok=True)
        path = write_frame(part, local / "preds" / f"region={region}" / f"part-{k}.parquet")
        client.upload_file(str(path), BUCKET, f"preds/region={region}/part-{k}.parquet")
        csv = write_frame(part, local / "csv" / f"part-{k}.csv")
        client.upload_file(str(csv), BUCKET, f"csv/part-{k}.csv")
        if k == 2:
            part = part.copy()
            part.loc[7, "prob"] = 1.5
            bad = write_frame(part, local / "bad" / f"part-{k}.csv")
        else:
            bad = csv
        client.upload_file(str(bad), BUCKET, f"bad/part-{k}.csv")
    return local


def test_partitioned_parquet_on_s3_is_the_local_dataset(bucket):
    data = load(f"s3://{BUCKET}/preds/", covariates="age,race,region")
    assert_same(data, load(bucket / "preds", covariates="age,race,region"))
    files = data.provenance.files
    assert [f.path for f in files] == [
        f"s3://{BUCKET}/preds/region=north/part-0.parquet",
        f"s3://{BUCKET}/preds/region=north/part-1.parquet",
        f"s3://{BUCKET}/preds/region=south/part-2.parquet"]
    assert [f.rows for f in files] == [120, 100, 80]
    local = sorted((bucket / "preds").rglob("*.parquet"))
    assert [f.size for f in files] == [p.stat().st_size for p in local]
    assert [f.fingerprint_kind for f in files] == ["etag"] * 3
    assert [f.fingerprint.strip('"') for f in files] == [
        hashlib.md5(p.read_bytes()).hexdigest() for p in local]


def test_csv_glob_on_s3_is_the_local_glob(bucket):
    assert_same(load(f"s3://{BUCKET}/csv/part-*.csv", covariates="age,race"),
                load(str(bucket / "csv" / "part-*.csv"), covariates="age,race"))


def _audit(spec, out):
    outcome = run_cli("test", spec, "--covariates", "age,race,region", "--json", out,
                      "--local-resamples", "50", "--n-resamples", "50")
    assert outcome.code in (0, 1), outcome.stderr
    payload = json.loads(out.read_text())
    for volatile in ("created_at", "runtime_seconds", "inputs", "config_sources"):
        payload.pop(volatile)
    return payload


def test_audit_of_an_s3_dataset_equals_the_local_audit(bucket, tmp_path):
    remote = _audit(f"s3://{BUCKET}/preds/", tmp_path / "remote.json")
    assert remote == _audit(str(bucket / "preds"), tmp_path / "local.json")


def test_bad_row_in_an_s3_object_is_one_line(bucket):
    line = assert_one_line_error(run_cli("metrics", f"s3://{BUCKET}/bad/part-*.csv"),
                                 f"s3://{BUCKET}/bad/part-2.csv", "data row 8")
    assert "global row 228" in line


def test_missing_bucket_or_prefix_is_one_line(bucket):
    assert_one_line_error(run_cli("metrics", f"s3://{BUCKET}/nothing/"), "[file_not_found]")
    assert_one_line_error(run_cli("metrics", "s3://no-such-bucket/preds/"),
                          "[file_not_found]")


def test_command_line_with_the_aws_endpoint_variable(bucket, endpoint, tmp_path):
    """The documented set-up of a user's shell: credentials and AWS_ENDPOINT_URL_S3."""
    env = {**os.environ, **CREDENTIALS, "AWS_ENDPOINT_URL_S3": endpoint,
           "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [
               os.environ.get("PYTHONPATH")])])}
    env.pop("FSSPEC_S3_ENDPOINT_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "calaudit", "metrics", f"s3://{BUCKET}/preds/",
         "--covariates", "age,race,region", "--json", str(tmp_path / "m.json")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    inputs = json.loads((tmp_path / "m.json").read_text())["inputs"]
    assert inputs["total"] == {"files": 3, "bytes": sum(
        p.stat().st_size for p in (bucket / "preds").rglob("*.parquet")), "rows": 300}
