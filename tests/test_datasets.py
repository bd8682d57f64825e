"""Datasets of files: directories, globs, hive partitions and fsspec URLs give
the same data as one file; provenance lists every file; a bad file is one line naming the
file, its row and the global row; nothing is written."""

from __future__ import annotations

import json
import os
import sys

import fsspec
import numpy as np
import pandas as pd
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from calaudit.data.load import load
from calaudit.data.locations import locate
from calaudit.data.partitioned import BATCH_ROWS, RowLayout
from calaudit.exceptions import InputError
from tests.cli_inprocess import assert_one_line_error, run_cli
from tests.conftest import binary_frame, multiclass_frame, write_frame

SIZES = (70, 0, 130, 100)  # rows per file, an empty file among them


def split(frame: pd.DataFrame, sizes=SIZES) -> list[pd.DataFrame]:
    cuts = np.cumsum((0,) + tuple(sizes))
    return [frame.iloc[a:b].reset_index(drop=True) for a, b in zip(cuts[:-1], cuts[1:])]


def write_parts(folder, frame, suffix="parquet", sizes=SIZES, name="part-{k}"):
    folder.mkdir(parents=True, exist_ok=True)
    return [write_frame(part, folder / f"{name.format(k=k)}.{suffix}")
            for k, part in enumerate(split(frame, sizes))]


def assert_same(data, reference):
    np.testing.assert_array_equal(data.y_proba, reference.y_proba)
    np.testing.assert_array_equal(data.y_true, reference.y_true)
    assert data.classes == reference.classes
    assert data.covariate_names == reference.covariate_names
    for ours, theirs in zip(data.covariates, reference.covariates):
        assert (ours.name, ours.kind, ours.categories) == (theirs.name, theirs.kind,
                                                           theirs.categories)
        np.testing.assert_array_equal(ours.values, theirs.values)


@pytest.fixture
def frame():
    return binary_frame(300)


@pytest.fixture
def reference(tmp_path, frame):
    return load(write_frame(frame, tmp_path / "whole.csv"), covariates="age,race")


@pytest.mark.parametrize("suffix", ["parquet", "csv", "tsv.gz"])
def test_directory_and_glob_give_the_single_file_data(tmp_path, frame, reference, suffix):
    write_parts(tmp_path / "preds", frame, suffix)
    assert_same(load(tmp_path / "preds", covariates="age,race"), reference)
    assert_same(load(str(tmp_path / f"preds/part-*.{suffix}"), covariates="age,race"),
                reference)


def test_rows_follow_sorted_paths_not_creation_order(tmp_path, frame, reference):
    parts = split(frame)
    folder = tmp_path / "preds"
    folder.mkdir()
    for k in reversed(range(len(parts))):  # created last-first
        write_frame(parts[k], folder / f"part-{k}.parquet")
    assert_same(load(folder, covariates="age,race"), reference)


def test_multiclass_dataset(tmp_path):
    frame = multiclass_frame(120)
    reference = load(write_frame(frame, tmp_path / "whole.csv"))
    write_parts(tmp_path / "multi", frame, sizes=(50, 70))
    assert_same(load(tmp_path / "multi"), reference)


def test_hive_partitions_become_covariates(tmp_path, frame):
    for race, part in frame.groupby("race"):
        write_parts(tmp_path / "preds" / f"race={race}", part.drop(columns="race"),
                    sizes=(len(part) // 2, len(part) - len(part) // 2))
    data = load(tmp_path / "preds", covariates="age,race")
    ordered = pd.concat([part for _, part in frame.groupby("race")], ignore_index=True)
    reference = load(write_frame(ordered, tmp_path / "ordered.csv"), covariates="age,race")
    assert_same(data, reference)
    assert data.covariate("race").categories == ("A", "B", "C")


def test_integer_hive_key_is_numeric_unless_categorical(tmp_path, frame):
    for k, part in enumerate(split(frame, (100, 200))):
        (tmp_path / "d" / f"year={2020 + k}").mkdir(parents=True)
        write_frame(part, tmp_path / "d" / f"year={2020 + k}" / "p.parquet")
    assert load(tmp_path / "d", covariates="year").covariate("year").kind == "numeric"
    cat = load(tmp_path / "d", covariates="year", categorical="year").covariate("year")
    assert cat.categories == ("2020", "2021")
    np.testing.assert_array_equal(np.bincount(cat.values), [100, 200])


def test_hidden_and_underscore_files_are_skipped(tmp_path, frame, reference):
    folder = tmp_path / "preds"
    write_parts(folder, frame)
    (folder / "_SUCCESS").write_text("")
    (folder / ".part-0.parquet.crc").write_bytes(b"\x00")
    assert_same(load(folder, covariates="age,race"), reference)


def test_memory_url_dataset_and_provenance(frame, reference):
    fs = fsspec.filesystem("memory")
    for k, part in enumerate(split(frame)):
        with fs.open(f"/bucket/preds/part-{k}.parquet", "wb") as handle:
            part.to_parquet(handle, index=False)
    try:
        data = load("memory://bucket/preds", covariates="age,race")
        assert_same(data, reference)
        files = data.provenance.files
        assert [f.path for f in files] == [f"memory://bucket/preds/part-{k}.parquet"
                                           for k in range(4)]
        assert [f.rows for f in files] == list(SIZES)
        assert all(f.fingerprint_kind == "sha256" and len(f.fingerprint) == 64 for f in files)
        assert [f.size for f in files] == [fs.info(f"/bucket/preds/part-{k}.parquet")["size"]
                                           for k in range(4)]
    finally:
        fs.rm("/bucket", recursive=True)


def test_remote_csv_glob_names_the_remote_file(frame):
    fs = fsspec.filesystem("memory")
    parts = split(frame)
    parts[2].loc[5, "prob"] = 1.5
    for k, part in enumerate(parts):
        with fs.open(f"/csvs/part-{k}.csv", "wb") as handle:
            handle.write(part.to_csv(index=False).encode())
    try:
        with pytest.raises(InputError) as caught:
            load("memory://csvs/part-*.csv")
        assert caught.value.source == "memory://csvs/part-2.csv"
        assert "data row 6 (global row 76)" in str(caught.value)
    finally:
        fs.rm("/csvs", recursive=True)


class EtagMemory(MemoryFileSystem):
    """A memory filesystem that, like S3, gives every object an ETag."""

    protocol = "etagmem"

    @classmethod
    def _strip_protocol(cls, path):
        return super()._strip_protocol(path.replace("etagmem://", "memory://", 1))

    def info(self, path, **kwargs):
        entry = dict(super().info(path, **kwargs))
        if entry["type"] == "file":
            entry["ETag"] = f'"etag-{entry["size"]}"'
        return entry


def test_etag_is_the_fingerprint_when_the_store_gives_one(frame, monkeypatch):
    from calaudit.data import remote

    fsspec.register_implementation("etagmem", EtagMemory, clobber=True)
    monkeypatch.setitem(remote.PROTOCOLS, "etagmem", None)
    fs = EtagMemory()
    with fs.open("/b/p.parquet", "wb") as handle:
        frame.to_parquet(handle, index=False)
    try:
        files = load("etagmem://b/p.parquet").provenance.files
        assert files[0].fingerprint_kind == "etag" and files[0].sha256 is None
        assert files[0].fingerprint.startswith('"etag-')
    finally:
        fs.rm("/b", recursive=True)


def test_json_lists_every_file_and_the_total(tmp_path, frame):
    paths = write_parts(tmp_path / "preds", frame)
    out = tmp_path / "r.json"
    outcome = run_cli("metrics", tmp_path / "preds", "--json", out, "-q")
    assert outcome.code == 0, outcome.stderr
    inputs = json.loads(out.read_text())["inputs"]
    assert inputs["path"] == str(tmp_path / "preds") and inputs["sha256"] is None
    assert inputs["dataset"] == {"path": str(tmp_path / "preds"), "kind": "directory",
                                 "format": "parquet", "files": 4, "partition_columns": []}
    assert [f["path"] for f in inputs["files"]] == [str(p) for p in paths]
    assert [f["rows"] for f in inputs["files"]] == list(SIZES)
    assert [f["size"] for f in inputs["files"]] == [p.stat().st_size for p in paths]
    assert inputs["total"] == {"files": 4, "bytes": sum(p.stat().st_size for p in paths),
                               "rows": 300}
    assert inputs["rows_read"] == 300


def test_single_file_provenance_only_gains_fields(tmp_path, frame):
    path = write_frame(frame, tmp_path / "p.csv")
    out = tmp_path / "r.json"
    assert run_cli("metrics", path, "--json", out, "-q").code == 0
    inputs = json.loads(out.read_text())["inputs"]
    entry = inputs["files"][0]
    assert inputs["path"] == str(path) and inputs["sha256"] == entry["sha256"]
    assert entry["fingerprint"] == entry["sha256"] and entry["fingerprint_kind"] == "sha256"
    assert entry["size"] == path.stat().st_size and "dataset" not in inputs


# -- one line per bad file, nothing written ------------------------------------------


def bad_dataset(tmp_path, frame, change, k=2, suffix="parquet"):
    parts = split(frame)
    parts[k] = change(parts[k].copy())
    folder = tmp_path / "bad"
    folder.mkdir()
    for j, part in enumerate(parts):
        write_frame(part, folder / f"part-{j}.{suffix}")
    return folder


def check_error(tmp_path, folder, *fragments, args=()):
    out = tmp_path / "r.json"
    line = assert_one_line_error(run_cli("metrics", folder, "--covariates", "age,race",
                                         "--json", out, *args), *fragments)
    assert not out.exists()
    return line


def _set(column, row, value):
    def change(part):
        part[column] = part[column].astype(object) if isinstance(value, str) else part[column]
        part.loc[row, column] = value
        return part
    return change


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_non_finite_probability_names_file_row_and_global_row(tmp_path, frame, suffix):
    folder = bad_dataset(tmp_path, frame, _set("prob", 9, np.nan), suffix=suffix)
    check_error(tmp_path, folder, f"part-2.{suffix}: column 'prob'",
                "first at data row 10 (global row 80)", "[nonfinite_probability]")


def test_label_out_of_range_names_file_and_rows(tmp_path, frame):
    folder = bad_dataset(tmp_path, frame, _set("label", 99, 7), k=3)
    check_error(tmp_path, folder, "part-3.parquet: column 'label'",
                "data row 100 (global row 300)", "[unknown_label]")


def test_schema_mismatch_between_files(tmp_path, frame):
    def as_text(part):
        part["prob"] = part["prob"].astype(str)
        return part
    folder = bad_dataset(tmp_path, frame, as_text)
    check_error(tmp_path, folder, "part-2.parquet: column 'prob'", "part-0.parquet holds numbers",
                "[schema_mismatch]")


def test_missing_column_in_one_file(tmp_path, frame):
    folder = bad_dataset(tmp_path, frame, lambda part: part.drop(columns="age"), k=3)
    check_error(tmp_path, folder, "part-3.parquet: column 'age': column not found",
                "[missing_column]")


@pytest.mark.parametrize("content", [b"", b"PAR1", b"PAR1" + b"\x00" * 100 + b"PAR1"])
def test_corrupt_file(tmp_path, frame, content):
    folder = tmp_path / "bad"
    write_parts(folder, frame)
    (folder / "part-1.parquet").write_bytes(content)
    check_error(tmp_path, folder, "part-1.parquet: cannot read this parquet file",
                "[unreadable_file]")


def test_truncated_file(tmp_path, frame):
    folder = tmp_path / "bad"
    paths = write_parts(folder, frame)
    data = paths[2].read_bytes()
    paths[2].write_bytes(data[: len(data) // 2])
    check_error(tmp_path, folder, "part-2.parquet", "[unreadable_file]")


def test_drop_invalid_counts_rows_across_files(tmp_path, frame):
    folder = bad_dataset(tmp_path, frame, _set("prob", 9, np.nan))
    data = load(folder, drop_invalid=True)
    assert data.n == 299 and dict(data.provenance.rows_excluded) == {
        "nonfinite_probability": 1}


@pytest.mark.parametrize("setup, fragments", [
    (lambda d: d.mkdir(), ("directory holds no data file", "[empty_dataset]")),
    (lambda d: None, ("pattern matches no data file", "[empty_dataset]")),
])
def test_empty_directory_or_glob(tmp_path, setup, fragments):
    folder = tmp_path / "empty"
    setup(folder)
    target = folder if folder.exists() else tmp_path / "none-*.parquet"
    assert_one_line_error(run_cli("metrics", target), *fragments)


def test_special_files_and_formats_in_a_dataset(tmp_path, frame):
    folder = tmp_path / "d"
    write_parts(folder, frame)
    os.mkfifo(folder / "part-9.parquet")
    assert_one_line_error(run_cli("metrics", folder), "part-9.parquet", "FIFO",
                          "[not_a_file]")
    (folder / "part-9.parquet").unlink()
    (folder / "notes.txt").write_text("x")
    assert_one_line_error(run_cli("metrics", folder), "notes.txt", "[unsupported_format]")
    (folder / "notes.txt").unlink()
    write_frame(frame, folder / "extra.csv")
    assert_one_line_error(run_cli("metrics", folder), "mixes csv and parquet",
                          "[mixed_formats]")
    (folder / "extra.csv").unlink()
    os.symlink(folder, folder / "loop")
    assert_one_line_error(run_cli("metrics", folder), "symbolic link loop")


def test_partition_key_that_is_also_a_column(tmp_path, frame):
    write_parts(tmp_path / "d" / "race=A", frame, sizes=(300,))
    assert_one_line_error(run_cli("metrics", tmp_path / "d"), "column 'race'",
                          "partition key", "[duplicate_column]")


def test_file_outside_the_partition_keys(tmp_path, frame):
    write_parts(tmp_path / "d" / "region=x", frame.drop(columns="race"), sizes=(100,))
    write_parts(tmp_path / "d", frame.drop(columns="race"), sizes=(200,), name="top-{k}")
    assert_one_line_error(run_cli("metrics", tmp_path / "d", "--covariates", "region"),
                          "top-0.parquet: column 'region'", "[missing_column]")


@pytest.mark.parametrize("url, extra, package", [("s3://bucket/preds/", "s3", "s3fs"),
                                                 ("gs://bucket/p.parquet", "gcs", "gcsfs"),
                                                 ("abfs://container/preds/", "azure", "adlfs")])
def test_missing_filesystem_package_names_the_extra(monkeypatch, url, extra, package):
    """Without the package (hidden from ``import`` here, installed or not): one line naming
    the extra. (Probing with ``url_to_fs`` instead ran the check only where the package was
    absent, and took gcsfs' 15 s metadata-server retries off Google Cloud; with the package
    but without credentials see the next test.)"""
    registry = sys.modules["fsspec.registry"]
    monkeypatch.setitem(sys.modules, package, None)  # ``import package`` raises ImportError
    monkeypatch.delitem(registry._registry, url.split("://")[0], raising=False)
    assert_one_line_error(run_cli("metrics", url), f"calaudit[{extra}]", "[missing_extra]")


def test_filesystem_without_credentials_is_one_line(monkeypatch):
    pytest.importorskip("adlfs")
    for name in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_NAME"):
        monkeypatch.delenv(name, raising=False)
    line = assert_one_line_error(run_cli("metrics", "abfs://container/preds/"),
                                 "cannot open the abfs:// filesystem", "[unreadable_file]",
                                 "credentials")
    assert "unknown URL protocol" not in line


def test_unknown_protocol_and_missing_url(tmp_path):
    assert_one_line_error(run_cli("metrics", "nosuch://x/y"), "[unsupported_url]")
    assert_one_line_error(run_cli("metrics", "memory://nothing/here.parquet"),
                          "[file_not_found]")


def test_file_url_is_a_local_path(tmp_path, frame, reference):
    path = write_frame(frame, tmp_path / "p.parquet")
    assert locate(f"file://{path}").kind == "file"
    assert_same(load(f"file://{path}", covariates="age,race"), reference)


def test_record_batches_cover_large_files(tmp_path):
    n = BATCH_ROWS * 2 + 17
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"label": rng.integers(0, 2, n), "prob": rng.uniform(size=n),
                          "g": rng.choice(["x", "y", None], n)})
    write_parts(tmp_path / "big", frame, sizes=(BATCH_ROWS + 5, n - BATCH_ROWS - 5))
    data = load(tmp_path / "big", drop_invalid=True, covariates="g")
    keep = frame["g"].notna().to_numpy()
    np.testing.assert_array_equal(data.y_proba[:, 1], frame["prob"].to_numpy()[keep])
    assert data.covariate("g").categories == ("x", "y")


def test_row_layout_locates_rows():
    layout = RowLayout(("a", "b", "c"), np.array([0, 3, 3, 10]))
    assert layout.locate(0) == ("a", 0) and layout.locate(2) == ("a", 2)
    assert layout.locate(3) == ("c", 0) and layout.locate(9) == ("c", 6)


def test_report_lists_files_with_fingerprints_up_to_a_limit():
    from calaudit.report.data_context import MAX_FILES, build_data

    files = [{"role": "predictions", "path": f"s3://b/p/part-{k}.parquet", "format": "parquet",
              "sha256": None, "rows": 10, "size": 1234, "fingerprint_kind": "etag",
              "fingerprint": f'"e{k}"'} for k in range(MAX_FILES + 7)]
    view = build_data({"inputs": {"path": "s3://b/p/", "format": "parquet", "files": files,
                                  "total": {"files": len(files), "bytes": 1234 * len(files)},
                                  "dataset": {"kind": "url"}}, "data": {}})
    assert len(view.files) == MAX_FILES and view.files_more == 7
    assert view.files[3].fingerprint == 'etag "e3"' and view.files[3].size == "1,234"
    assert ("dataset", "s3://b/p/") in [(f.key, f.value) for f in view.facts]


def test_labels_dataset_joined_on_ids(tmp_path, frame):
    preds = frame[["id", "prob", "age", "race"]]
    truth = frame[["id", "label"]].iloc[::-1].reset_index(drop=True)
    reference = load(write_frame(preds, tmp_path / "p.csv"), labels=write_frame(
        truth, tmp_path / "t.csv"), id_col="id", covariates="age,race")
    write_parts(tmp_path / "preds", preds)
    write_parts(tmp_path / "truth", truth, "csv", sizes=(150, 150))
    data = load(tmp_path / "preds", labels=str(tmp_path / "truth/*.csv"), id_col="id",
                covariates="age,race")
    assert_same(data, reference)
    roles = [f.role for f in data.provenance.files]
    assert roles == ["predictions"] * 4 + ["labels"] * 2


def test_joined_label_error_names_the_predictions_file_and_id(tmp_path, frame):
    preds = frame[["id", "prob"]]
    truth = frame[["id", "label"]].copy()
    truth.loc[120, "label"] = 5
    write_parts(tmp_path / "preds", preds)
    write_frame(truth, tmp_path / "t.csv")
    with pytest.raises(InputError) as caught:
        load(tmp_path / "preds", labels=tmp_path / "t.csv", id_col="id")
    text = str(caught.value)
    assert "[unknown_label]" in text
    assert "first at global row 121 of the dataset (data row 51 of" in text
    assert "part-2.parquet, id '120')" in text


def test_boolean_and_dictionary_columns_match_the_single_file(tmp_path, frame):
    frame = frame.assign(label=frame["label"].astype(bool), smoker=frame["age"] > 50,
                         race=frame["race"].astype("category"))
    reference = load(write_frame(frame, tmp_path / "whole.parquet"),
                     covariates="age,race,smoker")
    write_parts(tmp_path / "preds", frame)
    data = load(tmp_path / "preds", covariates="age,race,smoker")
    assert_same(data, reference)
    assert data.classes == ("False", "True")


def test_same_json_whatever_the_partitioning(tmp_path, frame):
    """The audit of 1, 3 or 7 files holding the same rows gives the same JSON apart from
    ``inputs`` (which lists the files)."""
    env = {"SOURCE_DATE_EPOCH": "1700000000"}
    payloads = []
    for k in (1, 3, 7):
        sizes = [len(frame) * (j + 1) // k - len(frame) * j // k for j in range(k)]
        folder = tmp_path / f"p{k}"
        write_parts(folder, frame, sizes=sizes)
        out = tmp_path / f"r{k}.json"
        outcome = run_cli("test", folder, "--covariates", "age,race", "--n-resamples", "30",
                          "--local-resamples", "30", "--seed", "5", "--json", out, "-q",
                          env=env)
        assert outcome.code in (0, 1), outcome.stderr
        payload = json.loads(out.read_text())
        assert len(payload.pop("inputs")["files"]) == k
        payload.pop("config_sources", None)
        payloads.append(json.dumps(payload, sort_keys=True))
    assert payloads[0] == payloads[1] == payloads[2]
