"""A CSV dataset audited by tasks that read their own rows (:mod:`calaudit.data.csv_rows`,
:mod:`calaudit.data.csv_plan`): one task per file counts and checks it with the loader's
rules, a task reading rows ``[a, b)`` parses only its files' rows. The checks: the rows
and covariates are the loader's bytes; errors are the loader's lines; the audit on two
workers is the loader's JSON with no row read into the client."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from calaudit import scale
from calaudit.audit.config import AuditConfig
from calaudit.audit.runner import run_audit
from calaudit.data import csv_rows
from calaudit.data.load import load
from calaudit.data.planned import NotPlanned, plan, why_not
from calaudit.exceptions import InputError
from calaudit.scale import DaskExecutor, SerialExecutor
from tests.test_dask_dataset_rows import CONFIG, canonical
from tests.test_fuzz import FUZZ
from tests.test_fuzz_datasets import csv_datasets

N = 6_000
CUTS = (0, 1_000, 3_500, N)
COVARIATES = {"covariates": "age,region,flag,grade,count", "categorical": "grade"}


def frame(seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 5.0, N)
    p[:3] = (0.0, 1.0, 1e-13)
    region = np.array(["north", "south, east", 'the "west"'], dtype=object)[
        rng.integers(0, 3, N)]
    region[-3:] = "far, far away"  # a level of the last file only, quoted
    count = rng.integers(0, 5, N).astype(np.float64)
    count[CUTS[1] + 7] = 2.5  # integers in the first file, floats in the second
    return pd.DataFrame({"label": (rng.uniform(size=N) < p).astype(int), "prob": p,
                         "age": np.round(rng.uniform(18, 90, N), 1), "region": region,
                         "flag": rng.uniform(size=N) < 0.3,
                         "grade": rng.integers(1, 4, N).astype(np.float64), "count": count})


def write(folder: Path, table: pd.DataFrame, gzip_last: bool = False) -> str:
    """Three CSV files; the second with CRLF line ends, the last gzip-compressed if asked."""
    folder.mkdir()
    for k in range(len(CUTS) - 1):
        part = table.iloc[CUTS[k]:CUTS[k + 1]]
        if k == 0:
            part = part.astype({"count": np.int64})
        name = folder / f"part-{k}.csv{'.gz' if gzip_last and k == 2 else ''}"
        part.to_csv(name, index=False, lineterminator="\r\n" if k == 1 else "\n")
    return str(folder)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> str:
    return write(tmp_path_factory.mktemp("csv") / "ds", frame(), gzip_last=True)


def planned(folder: str, **options):
    with scale.using(SerialExecutor()):
        return plan(folder, **options)


def test_the_tasks_read_the_loaders_rows_and_covariates(dataset):
    loaded, ours = load(dataset, **COVARIATES), planned(dataset, **COVARIATES)
    assert ours.n == loaded.n and ours.class_counts() == loaded.class_counts()
    assert ours.provenance == loaded.provenance
    assert [(c.name, c.kind, c.categories) for c in ours.covariates] == \
        [(c.name, c.kind, c.categories) for c in loaded.covariates]
    assert "far, far away" in ours.covariate("region").categories
    for mine, theirs in zip(ours.covariates, loaded.covariates):
        assert mine.values.dtype == theirs.values.dtype
        assert mine.values.tobytes() == theirs.values.tobytes()
    assert ours.y_proba.tobytes() == loaded.y_proba.tobytes()
    # ranges across files, backwards (a parser reopened) and in order (one kept open)
    for start, stop in ((3_490, 3_510), (0, 10), (995, 1_005), (1_005, 3_000), (N - 7, N)):
        rows = ours.rows.read(start, stop, ["y", "proba", "x:count", "x:region"])
        assert rows["y"].tobytes() == loaded.y_true[start:stop].tobytes()
        assert rows["proba"].tobytes() == loaded.y_proba[start:stop].tobytes()
        assert rows["x:count"].tobytes() == \
            loaded.covariate("count").values[start:stop].tobytes()
        assert rows["x:region"].tolist() == \
            loaded.covariate("region").values[start:stop].tolist()


def test_a_process_parses_consecutive_ranges_of_a_file_once(dataset, monkeypatch):
    ours = planned(dataset)
    opened = []
    real = csv_rows._read_csv
    monkeypatch.setattr(csv_rows, "_read_csv",
                        lambda *a, **k: opened.append(a[0].name) or real(*a, **k))
    for start in range(1_000, 3_500, 500):
        ours.rows.read(start, start + 500, ["y"])
    assert opened == ["part-1.csv"]
    ours.rows.read(1_000, 1_010, ["y"])  # before the parser's row: the file again
    assert opened == ["part-1.csv"] * 2


def test_what_the_plan_cannot_reproduce_is_left_to_the_loader(dataset, tmp_path):
    assert why_not(dataset, {}) is None
    assert why_not(str(Path(dataset) / "part-0.csv"), {}) == "not a dataset"
    table = frame()
    table["flag"] = table["flag"].astype(object)
    table.loc[4_000, "flag"] = None  # booleans with a missing cell: a whole-file read
    with pytest.raises(NotPlanned, match="flag of .*part-2.csv needs a whole-file read"):
        planned(write(tmp_path / "bool", table), covariates="flag")
    table = frame()
    table["label"] = np.where(table["label"] == 1, "yes", "no")
    with pytest.raises(NotPlanned, match="label holds text"):
        planned(write(tmp_path / "text", table), prob_cols="prob", label_col="label")


def _hostile(folder: Path, name: str, data: bytes) -> str:
    """The dataset with its second file replaced by ``data``."""
    write(folder, frame())
    (folder / "part-1.csv").unlink()
    (folder / name).write_bytes(data)
    return str(folder)


HOSTILE = {
    "empty": ("part-1.csv", b""),
    "header_only": ("part-1.csv", b"label,prob,age,region,flag,grade,count\n"),
    "ragged": ("part-1.csv", b"label,prob,age,region,flag,grade,count\n"
                             b"1,0.5,30,north,True,1,2\n0,0.2,31,north,False,2,3,9\n"),
    "bom": ("part-1.csv", b"\xef\xbb\xbflabel,prob,age,region,flag,grade,count\n"
                          b"1,0.5,30,north,True,1,2\n"),
    "latin1": ("part-1.csv", b"label,prob,age,region,flag,grade,count\n"
                             b"1,0.5,30,n\xf6rth,True,1,2\n"),
    "no_column": ("part-1.csv", b"label,prob\n1,0.5\n"),
    "text_age": ("part-1.csv", b"label,prob,age,region,flag,grade,count\n"
                               b"1,0.5,old,north,True,1,2\n"),
    "bad_gzip": ("part-1.csv.gz", b"\x1f\x8b\x08\x00garbage"),
    "unclosed_quote": ("part-1.csv", b"label,prob,age,region,flag,grade,count\n"
                                     b'1,0.5,30,"north,True,1,2\n'),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_files_give_the_loaders_outcome(case, tmp_path):
    """A broken or unusual second file: the planned path fails with the loader's one-line
    error, or reads what the loader reads."""
    folder = _hostile(tmp_path / case, *HOSTILE[case])
    options = {"covariates": "age,region"}
    try:
        loaded = load(folder, **options)
    except InputError as exc:
        with pytest.raises(InputError) as ours:
            planned(folder, **options)
        assert str(ours.value) == str(exc) and "\n" not in str(exc)
        assert ours.value.rule == exc.rule and ours.value.hint == exc.hint
        return
    ours = planned(folder, **options)
    assert ours.provenance == loaded.provenance
    assert ours.y_proba.tobytes() == loaded.y_proba.tobytes()
    assert ours.covariate("region").values.tobytes() == \
        loaded.covariate("region").values.tobytes()


def test_the_audit_on_two_workers_is_the_loaders_json(dataset, two_workers, monkeypatch):
    """The default battery on two workers: no stage reads the rows into this process, the
    JSON is the loaded rows' (the rows in every file parsed by the workers only)."""
    from calaudit.data.planned import RowsData

    options = {}
    single = canonical(run_audit(load(dataset, **options), AuditConfig(**CONFIG)))
    executor = DaskExecutor(two_workers)
    with scale.using(executor):
        data = plan(dataset, **options)

    def refused(self):
        raise AssertionError("a stage read the rows into the client")

    monkeypatch.setattr(RowsData, "_loaded", property(refused))
    monkeypatch.setattr(csv_rows, "_read_csv", refused)  # this process parses no rows
    assert canonical(run_audit(data, AuditConfig(**CONFIG, executor=executor))) == single
    assert executor.block_bytes == 0


def test_a_bad_value_in_the_second_file_is_the_loaders_error_and_exit_2(two_workers,
                                                                        tmp_path):
    from tests.cli_inprocess import assert_one_line_error, run_cli

    table = frame()
    table.loc[CUTS[1] + 41, "prob"] = 1.5
    folder = write(tmp_path / "bad", table)
    with pytest.raises(InputError) as loaded:
        load(folder)
    outcome = run_cli("test", folder, "--dask", two_workers.scheduler.address,
                      "--quiet", "--json", "r.json", cwd=tmp_path)
    line = assert_one_line_error(outcome, "part-1.csv", "data row 42")
    assert str(loaded.value) in line and "Traceback" not in outcome.stderr


def _outcome(read):
    """``read()``'s data, or its error's line (None: left to the loader)."""
    from calaudit.exceptions import CalauditError

    try:
        return read()
    except NotPlanned:
        return None
    except CalauditError as exc:
        return str(exc)


@FUZZ
@given(csv_datasets(), st.sampled_from([{}, {"covariates": "age,race"},
                                        {"covariates": "age", "categorical": "age"}]))
def test_fuzzed_csv_datasets_are_planned_as_the_loader_reads_them(files, options):
    """Hostile CSV parts (the dataset fuzz suite's), as local files and as stored objects
    (``memory://``: each task copies the object it reads): the planned path gives the
    loader's error line, or its rows and covariates, or leaves the dataset to it."""
    import fsspec

    from tests.test_fuzz import workdir

    store = fsspec.filesystem("memory")
    prefix = f"/planned-fuzz-{next(_STORED)}"
    with workdir() as folder:
        root = Path(folder) / "data"
        for name, data in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
            store.pipe(f"{prefix}/{name}", data)
        try:
            for spec in (str(root), f"memory://{prefix.lstrip('/')}"):
                _same_as_the_loader(spec, options)
        finally:
            store.rm(prefix, recursive=True)


_STORED = itertools.count()


def _same_as_the_loader(spec: str, options: dict) -> None:
    loaded = _outcome(lambda: load(spec, **options))
    if why_not(spec, options) is not None:
        return
    ours = _outcome(lambda: planned(spec, **options))
    if ours is None or isinstance(loaded, str) or isinstance(ours, str):
        assert ours is None or ours == loaded
        return
    assert ours.provenance == loaded.provenance
    assert ours.y_proba.tobytes() == loaded.y_proba.tobytes()
    for mine, theirs in zip(ours.covariates, loaded.covariates, strict=True):
        assert mine.categories == theirs.categories
        assert mine.values.tobytes() == theirs.values.tobytes()


@pytest.mark.parametrize(("text", "found"), [
    (b"a,b\n" + b"1,2\n" * 5_000, (4, 4 + 4 * 4_096)),   # every 4,096th row's offset
    (b"a,b\r\n" + b"1,2\r\n" * 5_000, (5, 5 + 5 * 4_096)),  # CRLF line ends
    (b"a,b\n" + b"1,2\n" * 4_999 + b"1,2", (4, 4 + 4 * 4_096)),  # no last line feed
    (b"a,b\n" + b"1,2\n" * 2_500 + b"\n" + b"1,2\n" * 2_500, ()),  # a blank line
    (b"a,b\n" + b"1,2\n" * 2_500 + b' \t\n' + b"1,2\n" * 2_500, ()),  # spaces only
    (b"a,b\n" + b'1,"x\ny"\n' + b"1,2\n" * 5_000, ()),  # a line break in a quoted field
    (b"a,b\n" + b"1,2\r" * 5_000, ()),                  # carriage returns alone
])
def test_rows_are_entered_by_offset_only_when_each_line_is_one_row(tmp_path, text, found):
    from calaudit.data.csv_offsets import row_starts
    from calaudit.data.readers import read_columns

    path = tmp_path / "f.csv"
    path.write_bytes(text)
    rows = len(pd.read_csv(path))
    assert row_starts(path, rows) == found
    assert read_columns(path) == ["a", "b"]


def test_a_task_enters_a_long_file_at_the_offset_before_its_range(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    n = 10_000
    table = pd.DataFrame({"label": rng.integers(0, 2, n), "prob": rng.uniform(size=n),
                          "region": rng.choice(["a", "b, c", 'd "e"'], n)})
    folder = tmp_path / "long"
    folder.mkdir()
    table.iloc[:3].to_csv(folder / "a.csv", index=False)
    table.iloc[3:].to_csv(folder / "b.csv", index=False)
    loaded, ours = load(str(folder), covariates="region"), planned(str(folder),
                                                                    covariates="region")
    assert [len(s) for s in ours.rows.files.starts] == [1, 3]
    opened = []
    real = csv_rows._read_csv
    monkeypatch.setattr(csv_rows, "_read_csv",
                        lambda *a, **k: opened.append(k.get("header", "file")) or real(*a, **k))
    rows = ours.rows.read(9_000, 9_500, ["proba", "x:region"])
    assert opened == [None, None]  # its lines from row 8,192 on (covariates, then scores)
    assert rows["proba"].tobytes() == loaded.y_proba[9_000:9_500].tobytes()
    assert rows["x:region"].tolist() == \
        loaded.covariate("region").values[9_000:9_500].tolist()


def test_stored_files_are_copied_afresh_for_each_opening_and_few_are_kept(monkeypatch):
    """A dataset on a store (``memory://``): the process keeps one copy at a time and
    still reads every file's rows; after an object is replaced, opening the dataset again
    reads the new bytes, not an older run's copy."""
    import fsspec

    monkeypatch.setattr(csv_rows, "COPIES_KEPT", 1)
    store, prefix = fsspec.filesystem("memory"), "/copies-afresh"
    frame = pd.DataFrame({"label": [0, 1, 1, 0, 1, 0] * 50,
                          "prob": np.linspace(0.1, 0.9, 300).round(3)})
    for k in range(3):
        store.pipe(f"{prefix}/part-{k}.csv", frame[k * 100:(k + 1) * 100].to_csv(
            index=False).encode())
    url = f"memory://{prefix.lstrip('/')}"
    try:
        first = planned(url)
        assert first.y_proba.tobytes() == load(url).y_proba.tobytes()
        frame.loc[100:199, "prob"] = 0.5
        store.pipe(f"{prefix}/part-1.csv", frame[100:200].to_csv(index=False).encode())
        again = planned(url)
        assert again.y_proba.tobytes() == load(url).y_proba.tobytes()
        assert again.y_proba.tobytes() != first.y_proba.tobytes()
    finally:
        store.rm(prefix, recursive=True)


def test_a_stored_object_replaced_after_the_dataset_was_opened_is_one_error():
    """The listing gave each object's size: a worker's copy of another size is the one
    error line of a file that changed during the audit, naming the URL."""
    import fsspec

    store, prefix = fsspec.filesystem("memory"), "/replaced-mid-run"
    frame = pd.DataFrame({"label": [0, 1] * 60, "prob": np.linspace(0.1, 0.9, 120)})
    for k in range(2):
        store.pipe(f"{prefix}/part-{k}.csv", frame[k * 60:(k + 1) * 60].to_csv(
            index=False).encode())
    url = f"memory://{prefix.lstrip('/')}"
    try:
        with scale.using(SerialExecutor()):
            data = plan(url)
            store.pipe(f"{prefix}/part-1.csv", frame[60:90].to_csv(index=False).encode())
            csv_rows._COPIES.files.clear()  # a process that has not copied it yet
            with pytest.raises(InputError, match="when the dataset was opened") as error:
                data.y_proba  # noqa: B018 - reads every range
        assert f"{url}/part-1.csv" in str(error.value)
    finally:
        store.rm(prefix, recursive=True)


def test_a_stored_object_with_another_etag_than_the_listing_is_one_error():
    """Same size, new contents: the store's ETag differs from the listing's."""

    class Store:
        def info(self, path):
            return {"name": path, "size": 10, "ETag": '"new"'}

    with pytest.raises(InputError, match='has the ETag "new", not "old"') as error:
        csv_rows._unchanged(Store(), "b/p.csv", "s3://b/p.csv", 10, 10, '"old"')
    assert error.value.source == "s3://b/p.csv"
    csv_rows._unchanged(Store(), "b/p.csv", "s3://b/p.csv", 10, 10, '"new"')  # unchanged
