"""Out-of-core CSV / TSV and NPZ reading: CSV files are parsed in chunks into
growing columns, NPZ members are read in chunks into the column store. The columns are
the former whole-file read's (same dtypes, same bits, same text levels), the first error
is the same, the load's traced memory per row is bounded by the batch with spill, and
hostile archives are one line without any large allocation."""

from __future__ import annotations

import gzip
import io
import os
import tracemalloc
import zipfile

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calaudit.data import csv_stream, npz, spill, text_files
from calaudit.data.column_sink import ColumnSink
from calaudit.data.load import load
from calaudit.data.locations import locate
from calaudit.data.partitioned import Dataset
from calaudit.data.readers import NA_STRINGS
from calaudit.data.spill import ColumnStore
from calaudit.exceptions import InputError
from tests.cli_inprocess import assert_one_line_error, run_cli
from tests.conftest import binary_frame, multiclass_frame, write_frame
from tests.test_datasets import assert_same
from tests.test_spill import spilled


# -- the former reader, kept here as the reference ---------------------------------------
def _former_append(sink: ColumnSink, values: pd.Series, source: str) -> None:
    """The former ``append_pandas``: one whole file's column as compact numpy."""
    if values.isna().all():
        kind = None
    elif pd.api.types.is_bool_dtype(values):
        kind = "bool"
    elif pd.api.types.is_numeric_dtype(values):
        kind = "numeric"
    else:
        kind = "text"
    sink.expect(kind, str(values.dtype), source)
    if sink.kind is None or kind is None and sink.kind == "numeric":
        sink.put(np.full(len(values), np.nan))
    elif sink.kind == "numeric":
        sink.put(values.to_numpy() if values.dtype.kind in "iu"
                 else values.to_numpy(dtype=np.float64, na_value=np.nan))
    elif sink.kind == "bool":
        null = values.isna().to_numpy()
        filled = values.to_numpy(dtype=object, na_value=False).astype(bool)
        sink.put(np.where(null, -1, filled).astype(np.int8))
    else:
        null = values.isna().to_numpy()
        codes, uniques = pd.factorize(values.astype(object).where(~null, None))
        sink.put(sink.codes([str(u) for u in uniques], np.maximum(codes, 0), null))


def _former_read(paths, columns, sep=","):
    """Each file read whole by pandas (the former ``read_table``), then concatenated.
    Columns where the former reader was wrong are left out: a file of missing cells before
    the first file with booleans or text made its rows NaN floats among int8 / int32
    codes (a missing boolean became True; text codes failed)."""
    sinks = {name: ColumnSink(name) for name in columns}
    wrong = set()
    for path in paths:
        frame = pd.read_csv(path, sep=sep, usecols=columns, na_values=NA_STRINGS,
                            keep_default_na=False, low_memory=False)
        for name in columns:
            if sinks[name].kind is None and len(frame) and frame[name].isna().all():
                wrong.add(name)
            _former_append(sinks[name], frame[name], str(path))
    return {name: sinks[name].series() for name in columns
            if name not in wrong or sinks[name].kind in (None, "numeric")}


def _cells(series: pd.Series) -> list:
    return [None if pd.isna(v) else v for v in series.astype(object)]


def assert_same_columns(ours: pd.DataFrame, former: dict) -> None:
    for name, theirs in former.items():
        assert ours[name].dtype == theirs.dtype, (name, ours[name].dtype, theirs.dtype)
        if theirs.dtype.kind == "f":  # the same bits, NaN included
            np.testing.assert_array_equal(ours[name].to_numpy().view(np.int64),
                                          theirs.to_numpy().view(np.int64))
        else:
            assert _cells(ours[name]) == _cells(theirs), name
        if isinstance(theirs.dtype, pd.CategoricalDtype):
            assert list(ours[name].cat.categories) == list(theirs.cat.categories)


@pytest.fixture
def small_batches(monkeypatch):
    def use(rows: int) -> None:
        monkeypatch.setattr(csv_stream, "BATCH_ROWS", rows)
    return use


# -- the fuzz ---------------------------------------------------------------------------
_TOKENS = st.one_of(
    st.integers(-60, 60).map(str),
    st.sampled_from([str(2**53 + 1), str(-(2**60) - 7), str(2**62), "007", "+5", " 3 "]),
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
    st.integers(0, 10**17 - 1).map(lambda v: f"0.{v:017d}"),
    st.sampled_from(["", "NA", "nan", "NULL", "#N/A"]),
    st.sampled_from(["inf", "-Infinity", "1e400"]),
    st.sampled_from(["True", "false", "TRUE"]),
    st.sampled_from(["a", "b c", '"q,1"', '"two\nlines"', "NAN"]),
    st.sampled_from([str(2**63 + 5), "99999999999999999999", "-99999999999999999999"]),
)


@st.composite
def csv_files(draw):
    """1-3 files of two columns; each column's tokens from one to three kinds, with runs so
    that a chunk can hold one kind and the next another."""
    files = []
    for _ in range(draw(st.integers(1, 3))):
        kinds = [draw(st.lists(_TOKENS, min_size=1, max_size=3)) for _ in range(2)]
        rows = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), max_size=14))
        lines = ["a,b"] + [f"{kinds[0][i % len(kinds[0])]},{kinds[1][j % len(kinds[1])]}"
                           for i, j in rows]
        files.append("\n".join(lines) + "\n")
    return files


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=csv_files(), batch=st.integers(1, 5), mode=st.sampled_from(["never", "always"]))
def test_fuzz_the_streamed_csv_reader_against_the_whole_file_read(tmp_path_factory, files,
                                                                  batch, mode):
    folder = tmp_path_factory.mktemp("csvfuzz")
    paths = []
    for k, text in enumerate(files):
        paths.append(folder / f"part-{k}.csv")
        paths[-1].write_text(text)
    try:
        former, error = _former_read(paths, ["a", "b"]), None
    except InputError as exc:
        former, error = None, str(exc)
    except ValueError as exc:  # the former reader's crash (missing cells before text)
        assert "codes need to be" in str(exc)
        return
    old = csv_stream.BATCH_ROWS
    csv_stream.BATCH_ROWS = batch
    try:
        ours = Dataset(locate(str(folder))).read(["a", "b"], ColumnStore(mode))
    except InputError as exc:
        assert str(exc) == error
        return
    finally:
        csv_stream.BATCH_ROWS = old
    assert error is None, error
    assert_same_columns(ours, former)


def test_a_column_that_changes_kind_after_the_first_chunk(tmp_path, small_batches):
    """Integers then floats (in place), integers then text (read again as text), exact
    integers beyond 2**53 beside floats (read again as float64), booleans then a missing
    cell (the whole column read again), in one file and across files."""
    small_batches(3)
    columns = {
        "int_float": ["1", "2", "3", "4", "0.1", "5", ""],
        "int_text": ["1", "2", "3", "4", "5", "x", "6"],
        "big_float": [str(2**53 + 1), "2", "3", "4", "0.5", "6", "7"],
        "bool_missing": ["True", "False", "True", "True", "", "False", "True"],
        "text_missing": ["a", "b", "c", "", "", "", "d"],
        "missing_int": ["", "", "", "1", "2", "3", "4"],
    }
    path = tmp_path / "kinds.csv"
    pd.DataFrame(columns).to_csv(path, index=False)
    ours = Dataset(locate(str(tmp_path))).read(list(columns), ColumnStore("always"))
    assert_same_columns(ours, _former_read([path], list(columns)))
    assert ours["int_float"].dtype == np.float64 and ours["big_float"].dtype == np.float64
    assert ours["big_float"].iloc[0] == float(2**53 + 1)


@pytest.mark.parametrize("shape", ["crlf_bom", "quoted_newlines", "gz", "tsv"])
def test_text_layouts_across_chunk_boundaries(tmp_path, small_batches, shape):
    frame = binary_frame(500, seed=5)
    frame["race"] = np.where(np.arange(500) % 7 == 0, "multi\nline, quoted", frame["race"])
    suffix = {"gz": "csv.gz", "tsv": "tsv"}.get(shape, "csv")
    path = tmp_path / f"preds.{suffix}"
    write_frame(frame, path)
    if shape == "crlf_bom":
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    reference = load(path, covariates="age,race", spill="never")  # one chunk: the whole file
    small_batches(7)
    data = load(path, covariates="age,race", spill="always")
    assert_same(data, reference)
    assert data.covariate("race").categories == reference.covariate("race").categories
    assert len(data.y_true) == 500 and spilled(data.y_proba)


@pytest.mark.parametrize("where", [0, 6, 7, 13, 499])
@pytest.mark.parametrize("bad", ["prob_text", "label_missing", "race_missing", "ragged",
                                 "encoding"])
def test_the_first_error_is_the_whole_file_reads(tmp_path, small_batches, where, bad):
    """A bad row on either side of a chunk boundary gives the error of the file read in
    one chunk (the former whole-file read), word for word."""
    frame = binary_frame(500, seed=6).astype({"prob": object, "race": object})
    if bad == "prob_text":
        frame.loc[where, "prob"] = "abc"
    elif bad == "label_missing":
        frame.loc[where, "label"] = None
    elif bad == "race_missing":
        frame.loc[where, "race"] = None
    path = write_frame(frame, tmp_path / "bad.csv")
    if bad in ("ragged", "encoding"):
        lines = path.read_bytes().split(b"\n")
        lines[where + 1] += b",1" if bad == "ragged" else b"\xe9"
        path.write_bytes(b"\n".join(lines))
    messages = []
    for rows in (10**6, 7):
        small_batches(rows)
        with pytest.raises(InputError) as caught:
            load(path, covariates="age,race", spill="always", spill_dir=tmp_path)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert f"row {where + 1}" in messages[0] or bad == "encoding"
    assert [p for p in tmp_path.iterdir() if p.name.startswith("calaudit-spill")] == []


def test_a_bad_row_in_a_later_file_names_the_file_and_the_global_row(tmp_path, small_batches):
    small_batches(4)
    frame = binary_frame(60, seed=7)
    frame.loc[47, "prob"] = 1.5
    folder = tmp_path / "preds"
    folder.mkdir()
    for k, (a, b) in enumerate([(0, 20), (20, 40), (40, 60)]):
        write_frame(frame.iloc[a:b], folder / f"part-{k}.csv")
    outcome = run_cli("metrics", folder, "--spill", "always")
    assert_one_line_error(outcome, "part-2.csv", "data row 8", "global row 48", "1.5")


def test_a_full_disk_while_a_column_grows_is_one_error(tmp_path, monkeypatch):
    def full(handle, offset, length):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full, raising=False)
    path = write_frame(binary_frame(100), tmp_path / "preds.csv")
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    with pytest.raises(InputError, match="No space left on device") as caught:
        load(path, spill="always", spill_dir=spill_dir)
    assert caught.value.rule == "spill_failed"
    assert list(spill_dir.iterdir()) == []


# -- memory -----------------------------------------------------------------------------
def _traced_peak(path, mode: str, **options) -> int:
    tracemalloc.start()
    try:
        load(path, spill=mode, **options)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("suffix", ["csv", "npz"])
def test_spilled_load_memory_per_row_is_bounded_by_the_batch(tmp_path, monkeypatch, suffix):
    """With spill the traced (Python and numpy) memory of loading one CSV or NPZ file is a
    few batches whatever its rows: its peak grows by under 2 bytes per row from 150,000 to
    300,000 rows. The former whole-file readers (pandas' frame, ``np.load``-like copies)
    grew by over 40, and so does the load without spill (the columns themselves)."""
    options = {"covariates": "age"} if suffix == "csv" else {"covariates": "age"}
    paths = []
    for n in (150_000, 300_000):
        frame = binary_frame(n, seed=3).drop(columns=["race", "id"])
        paths.append(write_frame(frame, tmp_path / f"rows{n}.{suffix}"))
    load(paths[0], spill="never", **options)  # imports done
    monkeypatch.setattr(spill, "BLOCK", 2048)
    monkeypatch.setattr(csv_stream, "BATCH_ROWS", 2048)
    monkeypatch.setattr(text_files, "CHUNK", 1 << 16)
    monkeypatch.setattr(npz, "CHUNK_BYTES", 1 << 14)
    growth = {mode: (_traced_peak(paths[1], mode, **options)
                     - _traced_peak(paths[0], mode, **options)) / 150_000
              for mode in ("always", "never")}
    assert growth["always"] < 2.0, growth
    assert growth["never"] > 20.0, growth


# -- NPZ --------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 40), m=st.integers(1, 4), fortran=st.booleans(),
       compressed=st.booleans(), chunk=st.integers(1, 64),
       order=st.booleans(), mode=st.sampled_from(["never", "always"]),
       dtype=st.sampled_from(["<f8", ">f8", "<f4", "<i8", "|u1", "|b1"]))
def test_fuzz_the_chunked_npz_reader_against_numpy_load(tmp_path_factory, n, m, fortran,
                                                        compressed, chunk, order, mode, dtype):
    folder = tmp_path_factory.mktemp("npzfuzz")
    rng = np.random.default_rng(n * 7 + m)
    probs = rng.uniform(size=(n, m)).astype(dtype) if dtype != "|b1" else rng.uniform(
        size=(n, m)) < 0.5
    if fortran:
        probs = np.asfortranarray(probs)
    arrays = {"labels": rng.integers(0, 2, n), "probs": probs,
              "note": np.array([f"r{i}" for i in range(n)])}
    if order:
        arrays = dict(reversed(list(arrays.items())))
    path = folder / "a.npz"
    (np.savez_compressed if compressed else np.savez)(path, **arrays)
    old = npz.CHUNK_BYTES
    npz.CHUNK_BYTES = chunk
    try:
        columns = npz.NpzArchive(path, ColumnStore(mode)).columns()
    finally:
        npz.CHUNK_BYTES = old
    with np.load(path, allow_pickle=False) as expected:
        for key in arrays:
            array = expected[key]
            names = [key] if array.ndim == 1 else [f"{key}_{j}" for j in range(array.shape[1])]
            for j, name in enumerate(names):
                want = array if array.ndim == 1 else array[:, j]
                assert columns[name].dtype == want.dtype
                np.testing.assert_array_equal(columns[name], want)


def test_npz_single_file_gives_the_same_data_spilled_and_as_csv(tmp_path):
    frame = multiclass_frame(300)
    probs = frame[[c for c in frame.columns if c.startswith("p_")]].to_numpy()
    path = tmp_path / "m.npz"
    np.savez_compressed(path, probs=probs, labels=frame["y"].to_numpy().astype(str),
                        class_names=np.array(["c0", "c1", "c2", "c3"]))
    reference = load(write_frame(frame, tmp_path / "m.csv"), prob_cols="p_*")
    data = load(path, spill="always", spill_dir=tmp_path)
    assert_same(data, reference)
    assert spilled(data.y_proba)


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _zip(path, members: dict[str, bytes], method=zipfile.ZIP_STORED) -> None:
    with zipfile.ZipFile(path, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _lying_directory(path, declared: int, method=zipfile.ZIP_STORED) -> None:
    """A member whose ``.npy`` header and zip directory (local and central) both declare
    ``declared`` float64s, while the archive holds 16 bytes of data."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (declared,)})
    _zip(path, {"probs.npy": header.getvalue() + b"\0" * 16,
                "labels.npy": _npy_bytes(np.zeros(2))}, method)
    data = bytearray(path.read_bytes())
    lie = (len(header.getvalue()) + declared * 8) % 2**32  # zip32 fields hold 4 bytes
    for signature, sizes in ((b"PK\x03\x04", (18, 22)), (b"PK\x01\x02", (20, 24))):
        start = data.index(signature)
        for offset in sizes[1:] if method != zipfile.ZIP_STORED else sizes:
            data[start + offset:start + offset + 4] = lie.to_bytes(4, "little")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("case", ["truncated", "magic", "crc", "lying_directory",
                                  "wide", "bzip2_lie", "pickle"])
def test_hostile_npz_is_one_line_and_allocates_nothing_large(tmp_path, case):
    path = tmp_path / "evil.npz"
    good = tmp_path / "good.npz"
    np.savez(good, probs=np.linspace(0.1, 0.9, 1000), labels=np.arange(1000) % 2)
    expected = {"truncated": "not an NPZ archive", "magic": "bad .npy header",
                "crc": "cannot read this npz file", "lying_directory": "cannot hold",
                "wide": "columns; at most", "bzip2_lie": "cannot hold",
                "pickle": "object array"}[case]
    if case == "truncated":
        path.write_bytes(good.read_bytes()[:5000])
    elif case == "magic":
        _zip(path, {"probs.npy": b"\x93NUMPX" + _npy_bytes(np.ones(3))[6:]})
    elif case == "crc":
        data = bytearray(good.read_bytes())
        data[4000] ^= 0xFF
        path.write_bytes(bytes(data))
    elif case == "lying_directory":
        _lying_directory(path, 2**28)
    elif case == "wide":
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                                      "shape": (0, 10**12)})
        _zip(path, {"probs.npy": header.getvalue()})
    elif case == "bzip2_lie":
        _lying_directory(path, 2**28, zipfile.ZIP_BZIP2)
    else:
        np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
        _zip(path, {"probs.npy": (tmp_path / "obj.npy").read_bytes()})
    tracemalloc.start()
    try:
        outcome = run_cli("metrics", path, "--spill", "never")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert_one_line_error(outcome, expected)
    assert peak < 64 << 20, peak


def test_gzip_member_of_a_dataset_is_estimated_for_auto(tmp_path):
    """The auto rule's row estimate for a CSV dataset reads only the first MiB."""
    frame = binary_frame(2000)
    path = tmp_path / "preds.csv.gz"
    with gzip.open(path, "wt") as handle:
        frame.to_csv(handle, index=False)
    rows = csv_stream.estimated_rows(locate(str(tmp_path / "*.csv.gz")))
    assert 1000 < rows < 4000
