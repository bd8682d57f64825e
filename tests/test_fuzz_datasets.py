"""Fuzzing the dataset readers (issue 14) with the invariants of tests/test_fuzz.py: exit
code 0, 1 or 2; exit 2 is exactly one ``calaudit: error:`` line; nothing left behind after
a failure; each case within the time budget.

Datasets are a valid table cut into 1-5 files, then broken file by file: a corrupt or
truncated file, a random table in place of a part (other columns, other types, nested or
timestamp columns), a column dropped or turned into text, NaN or out-of-range values, hive
directories that only some files sit below, hidden and stray files, CSV parts from the CSV
strategy. Each is read as a directory, a glob or a ``memory://`` URL.
``CALAUDIT_FUZZ_EXAMPLES=N`` runs a longer campaign and ``CALAUDIT_FUZZ_REPORT=FILE`` appends
the outcome counts, as for tests/test_fuzz.py.
"""

from __future__ import annotations

import io
import itertools
from pathlib import Path

import fsspec
import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from tests.test_fuzz import (  # noqa: F401 (_report: the outcome counts fixture)
    DATA_FLAGS,
    FUZZ,
    OUTPUT_ARGS,
    _report,
    check_case,
    csv_inputs,
    frames,
    workdir,
)

BREAKS = ("none", "none", "corrupt", "truncate", "empty", "random", "drop", "text", "nan",
          "range", "int_prob", "dictionary")
_COUNTER = itertools.count()


def base_table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    prob = rng.uniform(0.01, 0.99, n)
    return pd.DataFrame({"label": (rng.uniform(size=n) < prob).astype(np.int64), "prob": prob,
                         "age": rng.integers(18, 90, n),
                         "race": rng.choice(["A", "B", "C"], n)})


def parquet_bytes(table) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table if isinstance(table, pa.Table)
                   else pa.Table.from_pandas(table, preserve_index=False), sink)
    return sink.getvalue()


@st.composite
def broken_part(draw, part: pd.DataFrame) -> bytes:
    """One file of the dataset, possibly broken."""
    how = draw(st.sampled_from(BREAKS))
    part = part.copy()
    if how == "random":
        return parquet_bytes(draw(frames()))
    if how == "drop" and len(part.columns) > 1:
        part = part.drop(columns=draw(st.sampled_from(list(part.columns))))
    elif how == "text":
        column = draw(st.sampled_from(list(part.columns)))
        part[column] = part[column].astype(str)
    elif how in ("nan", "range") and len(part):
        row = draw(st.integers(0, len(part) - 1))
        part.loc[row, "prob"] = np.nan if how == "nan" else draw(st.sampled_from([1.5, -0.1,
                                                                                  np.inf]))
    elif how == "int_prob":
        part["prob"] = (part["prob"] > 0.5).astype(np.int64)
    elif how == "dictionary":
        part["race"] = part["race"].astype("category")
    data = parquet_bytes(part)
    if how == "corrupt" and data:
        cut = draw(st.integers(0, len(data) - 1))
        data = data[:cut] + draw(st.binary(min_size=1, max_size=16)) + data[cut + 1:]
    elif how == "truncate":
        data = data[:draw(st.integers(0, max(len(data) - 1, 0)))]
    elif how == "empty":
        data = b""
    return data


@st.composite
def parquet_datasets(draw):
    """``{relative path: bytes}`` of a (possibly broken) Parquet dataset."""
    n = draw(st.integers(2, 60))
    table = base_table(n, draw(st.integers(0, 2**16)))
    k = draw(st.integers(1, 5))
    cuts = sorted(draw(st.lists(st.integers(0, n), min_size=k - 1, max_size=k - 1)))
    bounds = [0, *cuts, n]
    hive = draw(st.sampled_from(["flat", "flat", "hive", "some_hive", "race_hive"]))
    files = {}
    for j in range(k):
        part = table.iloc[bounds[j]:bounds[j + 1]].reset_index(drop=True)
        folder = {"flat": "", "hive": f"g={j % 2}/", "race_hive": "race=A/",
                  "some_hive": f"g={j}/" if j % 2 else ""}[hive]
        files[f"{folder}part-{j}.parquet"] = draw(broken_part(part))
    extra = draw(st.sampled_from(["none", "none", "_SUCCESS", ".hidden.parquet", "notes.txt",
                                  "x.csv", "x.npz"]))
    if extra != "none":
        files[extra] = b"x"
    return files


@st.composite
def csv_datasets(draw):
    files = {}
    for j in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            name, data = f"part-{j}.csv", base_table(draw(st.integers(0, 30)), j).to_csv(
                index=False).encode()
        else:
            name, data, _ = draw(csv_inputs())
            name = name.replace("d.", f"part-{j}.")
        files[name] = data
    return files


TARGETS = st.sampled_from(["dir", "dir", "glob", "memory"])
DATASET_FLAGS = st.one_of(DATA_FLAGS, st.just(["--covariates", "age,race"]),
                          st.just(["--covariates", "g,age"]), st.just(["--covariates", "race"]))


def run_dataset(kind: str, files: dict[str, bytes], target: str, flags, outputs,
                suffix: str) -> None:
    with workdir() as folder:
        folder = Path(folder)
        root = folder / "data"
        for name, data in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
        if target == "memory":
            fs = fsspec.filesystem("memory")
            prefix = f"/fuzz-{next(_COUNTER)}"
            for name, data in files.items():
                fs.pipe(f"{prefix}/{name}", data)
            spec = f"memory://{prefix.lstrip('/')}"
        else:
            fs = prefix = None
            spec = "data" if target == "dir" else f"data/**/*.{suffix}"
        try:
            check_case(kind, folder, "metrics", spec, *flags, *outputs)
        finally:
            if fs is not None:
                fs.rm(prefix, recursive=True)


@FUZZ
@given(parquet_datasets(), TARGETS, DATASET_FLAGS, OUTPUT_ARGS)
def test_fuzz_parquet_datasets(files, target, flags, outputs):
    run_dataset("parquet dataset", files, target, flags, outputs, "parquet")


@FUZZ
@given(csv_datasets(), TARGETS, DATA_FLAGS, OUTPUT_ARGS)
def test_fuzz_csv_datasets(files, target, flags, outputs):
    run_dataset("csv dataset", files, target, flags, outputs, "csv")
