"""Fuzzing the dataset readers with the invariants of tests/test_fuzz.py: exit
code 0, 1 or 2; exit 2 is exactly one ``calaudit: error:`` line; nothing left behind after
a failure; each case within the time budget.

Datasets are a valid table cut into 1-5 files, then broken file by file: a corrupt or
truncated file, a random table in place of a part (other columns, other types, nested or
timestamp columns), a column dropped or turned into text, NaN or out-of-range values, hive
directories that only some files sit below, hidden and stray files, CSV parts from the CSV
strategy. Each is read as a directory, a glob or a ``memory://`` URL.

The locations themselves are fuzzed too: URLs of protocols calaudit does not read, chained
URLs (``zip://x::y``, ``simplecache::...``), ``memory://`` and ``file://`` URLs where
nothing is, and local trees with links back up, links that reach a folder twice, hive
nesting past the depth bound, FIFOs, hidden and dangling files, read as a directory or
through globs with many ``**``.
``CALAUDIT_FUZZ_EXAMPLES=N`` runs a longer campaign and ``CALAUDIT_FUZZ_REPORT=FILE`` appends
the outcome counts, as for tests/test_fuzz.py.
"""

from __future__ import annotations

import io
import itertools
import os
from pathlib import Path

import fsspec
import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.test_fuzz import (  # noqa: F401 (_report: the outcome counts fixture)
    DATA_FLAGS,
    FUZZ,
    OUTPUT_ARGS,
    TEXT,
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


@pytest.mark.slow
@FUZZ
@given(parquet_datasets(), TARGETS, DATASET_FLAGS, OUTPUT_ARGS)
def test_fuzz_parquet_datasets(files, target, flags, outputs):
    run_dataset("parquet dataset", files, target, flags, outputs, "parquet")


@pytest.mark.slow
@FUZZ
@given(csv_datasets(), TARGETS, DATA_FLAGS, OUTPUT_ARGS)
def test_fuzz_csv_datasets(files, target, flags, outputs):
    run_dataset("csv dataset", files, target, flags, outputs, "csv")


# ----------------------------------------------------------- URLs and hostile local trees

def _unsupported_protocols() -> list[str]:
    """Protocols fsspec knows that calaudit does not read (no object store: they would
    reach the network), plus some it does not know."""
    from fsspec.registry import known_implementations

    from calaudit.data.remote import PROTOCOLS

    stores = {p for p, package in PROTOCOLS.items() if package is not None}
    known = sorted(set(known_implementations) - stores - {"memory", "file", "local"})
    return [*known, "nosuch", "HTTP", "s3+x", "z" * 300]


URL_PATH = st.sampled_from(["x.csv", "b/preds/", "b/*.parquet", "", "::", "a::b",
                            "127.0.0.1:1/x.csv", "../../etc/passwd", "b/**/*.csv", "%00",
                            "d.csv"]) | TEXT


@st.composite
def hostile_urls(draw):
    """A URL calaudit refuses before any I/O, or reads from memory:// (where nothing is)."""
    how = draw(st.sampled_from(["unsupported", "chained", "chained", "memory", "file"]))
    path = draw(URL_PATH)
    if how == "unsupported":
        return f"{draw(st.sampled_from(_unsupported_protocols()))}://{path}"
    if how == "chained":
        inner = draw(st.sampled_from(["zip", "tar", "simplecache", "filecache", "memory",
                                      "blockcache", "s3", "file"]))
        outer = draw(st.sampled_from(["d.csv", "memory://d.csv", "s3://b/d.zip",
                                      "missing.zip", "file://d.csv", ""]))
        return f"{inner}://{path}::{outer}" if draw(st.booleans()) else f"{inner}::{outer}"
    if how == "memory":
        return f"memory://nothing-{next(_COUNTER)}/{path}"
    return f"file://{draw(st.sampled_from(['d.csv', 'missing/', 't/**/*.csv', '']))}"


@pytest.mark.slow
@FUZZ
@given(hostile_urls(), st.sampled_from(["metrics", "test"]), OUTPUT_ARGS)
def test_fuzz_urls(url, command, outputs):
    with workdir() as folder:
        folder = Path(folder)
        base_table(40, 0).to_csv(folder / "d.csv", index=False)
        check_case("url", folder, command, url, *outputs)


@st.composite
def hostile_trees(draw):
    """Instructions for a local dataset tree with links back up, links to a folder twice,
    deep (hive) nesting, FIFOs and hidden files, and a spec to read it by."""
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["loop_up", "loop_self", "twice", "deep", "fifo",
                                     "hidden", "dangling", "file_link"]))
        steps.append((kind, draw(st.integers(0, 3)), draw(st.integers(30, 40))))
    spec = draw(st.sampled_from(["t", "t/", "t/**/*.csv", "t/**", "t/*/*.csv",
                                 "t/" + "**/" * draw(st.integers(2, 40)) + "*.csv",
                                 "t/a/**/k0=0/*.csv", "file://t/**/*.csv"]))
    return steps, spec


def _build_tree(root: Path, steps) -> None:
    part = base_table(30, 1).to_csv(index=False)
    (root / "a").mkdir(parents=True)
    (root / "a" / "p.csv").write_text(part)
    for kind, where, depth in steps:
        folder = root / "a" if where % 2 else root
        name = f"{kind}{where}"
        if any(p.name.startswith((name, f".{name}")) for p in folder.iterdir()):
            continue  # made already
        if kind == "loop_up":
            (folder / name).symlink_to("..")
        elif kind == "loop_self":
            (folder / name).symlink_to(".")
        elif kind == "twice":
            (folder / name).symlink_to(root / "a")
        elif kind == "deep":
            deep = folder / name / "/".join(f"k{i}=0" for i in range(depth))
            deep.mkdir(parents=True)
            (deep / "p.csv").write_text(part)
        elif kind == "fifo":
            os.mkfifo(folder / f"{name}.csv")
        elif kind == "hidden":
            (folder / f".{name}.csv").write_text("not, a, table\x00")
        elif kind == "dangling":
            (folder / f"{name}.csv").symlink_to(root / "nowhere.csv")
        else:
            (folder / f"{name}.csv").symlink_to(root / "a" / "p.csv")


@pytest.mark.slow
@FUZZ
@given(hostile_trees(), OUTPUT_ARGS)
def test_fuzz_hostile_trees(tree, outputs):
    steps, spec = tree
    with workdir() as folder:
        folder = Path(folder)
        _build_tree(folder / "t", steps)
        check_case("tree", folder, "metrics", spec, *outputs)
