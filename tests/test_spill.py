"""Out-of-core loading: a Parquet dataset's columns are preallocated from the
footers and filled batch by batch, and with spill the kept columns are memory-mapped files
that are gone from the spill directory as soon as they are mapped. The arrays are the same
as without spill and as a single CSV file; a bad partition is still one line naming file
and row; the load's traced (anonymous numpy) memory per row is bounded with spill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tracemalloc

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calaudit.data import partitioned, spill
from calaudit.data.load import load
from calaudit.data.locations import locate
from calaudit.data.partitioned import Dataset
from calaudit.data.spill import ColumnStore, should_spill
from calaudit.exceptions import ConfigError, InputError
from tests.cli_inprocess import assert_one_line_error, run_cli
from tests.conftest import binary_frame, multiclass_frame, write_frame
from tests.test_datasets import assert_same, write_parts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def spilled(array: np.ndarray) -> bool:
    """Whether ``array`` is (a view of) a memory-mapped file."""
    while array is not None:
        if isinstance(array, np.memmap):
            return True
        array = getattr(array, "base", None)
    return False


@pytest.fixture
def frame():
    return binary_frame(400)


@pytest.mark.parametrize("layout", ["flat", "hive"])
@pytest.mark.parametrize("mode", ["never", "always"])
def test_dataset_gives_the_single_csv_arrays_with_and_without_spill(tmp_path, frame, layout,
                                                                    mode):
    reference = load(write_frame(frame, tmp_path / "whole.csv"), covariates="age,race")
    if layout == "flat":
        write_parts(tmp_path / "preds", frame, sizes=(70, 0, 130, 200))
        data = load(tmp_path / "preds", covariates="age,race", spill=mode,
                    spill_dir=tmp_path)
    else:  # race as hive partitions: text spread over directories, rows grouped by race
        ordered = frame.sort_values("race", kind="stable").reset_index(drop=True)
        reference = load(write_frame(ordered, tmp_path / "ordered.csv"),
                         covariates="age,race")
        for race, part in ordered.groupby("race", sort=True):
            folder = tmp_path / "hive" / f"race={race}"
            folder.mkdir(parents=True)
            write_frame(part.drop(columns="race"), folder / "part-0.parquet")
        data = load(tmp_path / "hive", covariates="age,race", spill=mode, spill_dir=tmp_path)
    assert_same(data, reference)
    assert spilled(data.y_proba) == (mode == "always")
    assert spilled(data.y_true) == (mode == "always")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("calaudit-spill")] == []


@pytest.mark.parametrize("suffix", ["csv", "npz", "parquet"])
def test_single_files_give_the_same_arrays_spilled(tmp_path, suffix):
    frame = multiclass_frame(300)
    path = write_frame(frame, tmp_path / f"preds.{suffix}")
    kept = load(path, prob_cols="p_*", spill="never")
    data = load(path, prob_cols="p_*", spill="always", spill_dir=tmp_path)
    assert_same(data, kept)
    assert spilled(data.y_proba) and spilled(data.y_true)


def test_text_covariate_levels_spread_over_files(tmp_path):
    frame = binary_frame(300)
    frame["race"] = np.where(np.arange(300) < 100, "Z", np.where(np.arange(300) < 200, "A",
                                                                 frame["race"]))
    write_parts(tmp_path / "preds", frame, sizes=(100, 100, 100))
    reference = load(write_frame(frame, tmp_path / "whole.csv"), covariates="age,race")
    data = load(tmp_path / "preds", covariates="age,race", spill="always")
    assert_same(data, reference)
    assert data.covariate("race").categories == ("A", "B", "C", "Z")


def _write(path, columns: dict, **options) -> None:
    pq.write_table(pa.table(columns), path, **options)


def _former_concatenation(tables: list[pa.Table], name: str) -> np.ndarray:
    """What the reader built before preallocation: each file's column as int when it holds
    integers without a null, else float64, concatenated by numpy."""
    chunks = []
    for table in tables:
        column = table.column(name).combine_chunks()
        if pa.types.is_integer(column.type) and column.null_count == 0:
            chunks.append(column.to_numpy(zero_copy_only=False))
        else:
            chunks.append(column.cast(pa.float64()).to_numpy(zero_copy_only=False))
    values = np.concatenate(chunks)
    return values if values.dtype.kind in "iu" else values.astype(np.float64)


@pytest.mark.parametrize("statistics", [True, False])
def test_integer_columns_with_nulls_and_mixed_widths(tmp_path, statistics):
    tables = [
        pa.table({"a": pa.array([1, 2, 3], pa.int8()), "b": pa.array([5, 6, 7], pa.int64()),
                  "c": pa.array([2**62, 1, 0], pa.int64())}),
        pa.table({"a": pa.array([4, 5], pa.int32()), "b": pa.array([None, 9], pa.int64()),
                  "c": pa.array([3, 4], pa.int64())}),
        pa.table({"a": pa.array([-7], pa.int16()), "b": pa.array([1], pa.int32()),
                  "c": pa.array([1.5], pa.float32())}),
    ]
    folder = tmp_path / "ints"
    folder.mkdir()
    for k, table in enumerate(tables):
        pq.write_table(table, folder / f"part-{k}.parquet", write_statistics=statistics)
    frame = Dataset(locate(str(folder))).read(["a", "b", "c"], ColumnStore("always"))
    for name, dtype in (("a", np.int32), ("b", np.float64), ("c", np.float64)):
        expected = _former_concatenation(tables, name)
        assert frame[name].dtype == expected.dtype == dtype
        np.testing.assert_array_equal(frame[name].to_numpy(), expected)


def test_a_bad_partition_is_one_line_naming_file_and_row_and_nothing_is_written(tmp_path):
    frame = binary_frame(300)
    frame.loc[170 + 5, "prob"] = 1.5  # file part-2, its data row 6
    write_parts(tmp_path / "preds", frame, sizes=(100, 70, 130))
    target = tmp_path / "out.json"
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    outcome = run_cli("test", tmp_path / "preds", "--covariates", "age", "--json", target,
                      "--spill", "always", "--spill-dir", spill_dir)
    assert outcome.code == 2
    line = assert_one_line_error(outcome, "part-2.parquet", "data row 6", "global row 176",
                                 "probability_out_of_range")
    assert "calaudit: error:" in line
    assert not target.exists()
    assert list(spill_dir.iterdir()) == []


def test_spill_files_are_removed_after_an_interrupt(tmp_path, monkeypatch):
    write_parts(tmp_path / "preds", binary_frame(300), sizes=(100, 100, 100))
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    calls = []

    def interrupted(*args):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return former(*args)

    former = partitioned.append_arrow
    monkeypatch.setattr(partitioned, "append_arrow", interrupted)
    with pytest.raises(KeyboardInterrupt):
        load(tmp_path / "preds", covariates="age,race", spill="always", spill_dir=spill_dir)
    assert len(calls) == 3
    assert list(spill_dir.iterdir()) == []


def test_spill_files_are_gone_while_the_process_runs_and_after_it_is_killed(tmp_path):
    write_parts(tmp_path / "preds", binary_frame(300), sizes=(100, 100, 100))
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    code = ("import sys, time, calaudit; d = calaudit.load(sys.argv[1], covariates='age', "
            "spill='always', spill_dir=sys.argv[2]); print(float(d.y_proba.sum()), "
            "flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "preds"),
                              str(spill_dir)], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        assert float(child.stdout.readline()) == pytest.approx(300.0)
        assert list(spill_dir.iterdir()) == []  # mapped, unlinked, still readable
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert list(spill_dir.iterdir()) == []


def test_spill_dir_must_exist_and_mode_must_be_known(tmp_path):
    write_parts(tmp_path / "preds", binary_frame(100), sizes=(50, 50))
    with pytest.raises(InputError, match="spill directory does not exist"):
        load(tmp_path / "preds", spill="always", spill_dir=tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="data.spill"):
        load(tmp_path / "preds", spill="sometimes")
    outcome = run_cli("test", tmp_path / "preds", "--spill", "sometimes")
    assert outcome.code == 2
    assert_one_line_error(outcome, "data.spill")
    single = write_frame(binary_frame(100), tmp_path / "single.csv")
    for source in (single, tmp_path / "preds"):
        outcome = run_cli("metrics", source, "--spill", "always", "--spill-dir",
                          tmp_path / "nowhere")
        assert outcome.code == 2
        assert_one_line_error(outcome, "nowhere", "spill directory does not exist",
                              "[spill_failed]")


def test_auto_spills_above_a_quarter_of_the_available_memory():
    assert not should_spill("auto", 250, available=1000)
    assert should_spill("auto", 251, available=1000)
    assert should_spill("always", 0, available=1000)
    assert not should_spill("never", 10**18, available=1000)
    assert not should_spill("auto", 10**18, available=None) or spill.available_memory()


def _traced_peak(path, mode: str) -> int:
    tracemalloc.start()
    try:
        load(path, covariates="age,race", spill=mode)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_spilled_load_memory_per_row_is_bounded_by_the_batch(tmp_path, monkeypatch):
    """With spill the numpy memory of the load is a few batches whatever n: its peak grows
    by under 2 bytes per row from 150,000 to 300,000 rows in batches of 2,048 (the text
    covariate's int8 codes take 1; every file is over the 1 MiB that the SHA-256 of the
    provenance reads at a time). Without spill, and on main, it grows by over 40."""
    paths = []
    for n in (150_000, 300_000):
        paths.append(tmp_path / f"rows{n}")
        write_parts(paths[-1], binary_frame(n, seed=3), sizes=(n // 3, n // 2, n - 5 * n // 6))
    load(paths[0], covariates="age,race", spill="never")  # imports done
    monkeypatch.setattr(spill, "BLOCK", 2048)
    monkeypatch.setattr(partitioned, "BATCH_ROWS", 2048)
    growth = {mode: (_traced_peak(paths[1], mode) - _traced_peak(paths[0], mode)) / 150_000
              for mode in ("always", "never")}
    assert growth["always"] < 2.0, growth
    assert growth["never"] > 40.0, growth


def test_dropped_rows_and_counts_are_the_same_with_spill(tmp_path, monkeypatch):
    frame = binary_frame(5000, seed=4)
    frame.loc[[3, 2500, 4999], "prob"] = np.nan
    frame.loc[[10, 2500], "label"] = 7
    frame.loc[[11], "age"] = np.nan
    write_parts(tmp_path / "preds", frame, sizes=(2000, 3000))
    reference = load(write_frame(frame, tmp_path / "whole.csv"), covariates="age,race",
                     drop_invalid=True)
    monkeypatch.setattr(spill, "BLOCK", 1000)
    data = load(tmp_path / "preds", covariates="age,race", drop_invalid=True, spill="always")
    assert_same(data, reference)
    assert data.provenance.rows_excluded == reference.provenance.rows_excluded
    assert list(data.provenance.rows_excluded) == list(reference.provenance.rows_excluded)


_cells = st.one_of(st.none(), st.integers(-5, 5))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.lists(st.tuples(_cells, st.one_of(st.none(), st.sampled_from("xyz")),
                                         st.floats(allow_nan=True, allow_infinity=True)),
                               min_size=0, max_size=12), min_size=1, max_size=5),
       group=st.integers(1, 5), statistics=st.booleans(), batch=st.integers(1, 7))
def test_fuzz_the_preallocating_reader_against_the_former_concatenation(
        tmp_path_factory, files, group, statistics, batch):
    folder = tmp_path_factory.mktemp("fuzz")
    tables = []
    for k, rows in enumerate(files):
        ints, texts, floats = (list(col) for col in zip(*rows)) if rows else ([], [], [])
        table = pa.table({"i": pa.array(ints, pa.int64()), "t": pa.array(texts, pa.string()),
                          "f": pa.array(floats, pa.float64())})
        pq.write_table(table, folder / f"part-{k:02d}.parquet", row_group_size=group,
                       write_statistics=statistics)
        tables.append(table)
    old = partitioned.BATCH_ROWS
    partitioned.BATCH_ROWS = batch
    try:
        frame = Dataset(locate(str(folder))).read(["i", "t", "f"], ColumnStore("always"))
    finally:
        partitioned.BATCH_ROWS = old
    nonempty = [t for t in tables if t.num_rows]
    if nonempty:
        expected = _former_concatenation(nonempty, "i")
        assert frame["i"].dtype == expected.dtype
        np.testing.assert_array_equal(frame["i"].to_numpy(), expected)
        np.testing.assert_array_equal(frame["f"].to_numpy(),
                                      _former_concatenation(nonempty, "f"))
    texts = pa.concat_tables(tables).column("t").to_pylist()
    assert [None if pd.isna(v) else v for v in frame["t"].astype(object)] == texts


def test_a_full_disk_is_one_error_before_the_rows_are_written(tmp_path, monkeypatch):
    def full(handle, offset, length):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full, raising=False)
    write_parts(tmp_path / "preds", binary_frame(100), sizes=(50, 50))
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    with pytest.raises(InputError, match="No space left on device") as caught:
        load(tmp_path / "preds", spill="always", spill_dir=spill_dir)
    assert caught.value.rule == "spill_failed"
    assert list(spill_dir.iterdir()) == []
