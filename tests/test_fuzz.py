"""Fuzzing the command line with broken and hostile inputs.

For every input, whatever it is:

- the exit code is 0, 1 or 2 (never 3, an internal error, nor a crash);
- exit code 2 prints exactly one stderr line, starting ``calaudit: error:``;
- after an exit code other than 0 and 1 no output file or directory is left behind;
- the case finishes within ``BUDGET`` seconds (a hang fails the test).

Inputs come from hypothesis strategies for CSV, Parquet and NPZ data, config files, saved
results and flag values, plus a corpus of known hostile cases. The command line runs
in-process (``calaudit.cli.app.run`` with captured streams); a few cases that need a real
process (FIFOs, Ctrl-C) run as subprocesses.

``CALAUDIT_FUZZ_EXAMPLES=N`` runs N examples per strategy (default 25, the CI setting,
derandomised); ``CALAUDIT_FUZZ_REPORT=FILE`` appends the outcome counts to FILE.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli_inprocess import run_cli
from tests.conftest import ROOT, binary_frame

EXAMPLES = int(os.environ.get("CALAUDIT_FUZZ_EXAMPLES", "25"))
LONG_CAMPAIGN = "CALAUDIT_FUZZ_EXAMPLES" in os.environ
#: Seconds one case may take (in-process; a hang raises :class:`Hang`).
BUDGET = 60
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not LONG_CAMPAIGN,
                database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])
OUTCOMES: Counter[str] = Counter()
FAST = ("--n-resamples", "20", "--local-resamples", "20")


class Hang(BaseException):
    """Raised by the alarm when a case runs over its budget (not an ``Exception``, so the
    command's error boundary lets it through)."""


def _alarm(signum, frame):
    raise Hang(f"over the {BUDGET} s budget")


def listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def check_case(kind: str, folder: Path, *args: object, env: dict[str, str] | None = None
               ) -> int:
    """Run ``calaudit ARGS`` in ``folder`` (with ``env`` added to the environment) and
    assert the invariants of the module docstring; returns the exit code."""
    before = listing(folder)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(BUDGET)
    started = time.perf_counter()
    try:
        outcome = run_cli(*args, cwd=folder, env=env)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    elapsed = time.perf_counter() - started
    OUTCOMES[f"{kind}: exit {outcome.code}"] += 1
    OUTCOMES["cases"] += 1
    OUTCOMES["seconds"] += elapsed
    shown = f"calaudit {' '.join(map(str, args))[:300]}\n{outcome.stderr[-3000:]}"
    assert outcome.code in (0, 1, 2), shown
    if outcome.code == 2:
        lines = outcome.error_lines
        assert len(lines) == 1 and lines[0].startswith("calaudit: error: "), shown
    if outcome.code not in (0, 1):
        assert listing(folder) == before, shown
    return outcome.code


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    target = os.environ.get("CALAUDIT_FUZZ_REPORT")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            for key in sorted(OUTCOMES):
                value = OUTCOMES[key]
                out.write(f"{key}\t{value:.1f}\n" if key == "seconds" else f"{key}\t{value}\n")


def workdir():
    return tempfile.TemporaryDirectory(prefix="calaudit-fuzz-")


OUTPUT_ARGS = st.lists(st.sampled_from([
    ("--json", "out/r.json"), ("--json", "-"), ("--junit", "out/j.xml"),
    ("--md", "out/md/r.md"), ("--html", "r.html"), ("--json", "out/r.json"),
    ("--md", "r.md"), ("--json", ""), ("--md", "-"), ("--html", "out"),
    ("--junit", "r.html"),
]), max_size=3, unique_by=lambda pair: pair[0]).map(lambda pairs: [x for p in pairs for x in p])

# ------------------------------------------------------------------------------- values

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
CELL = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(0, 1).map(lambda v: f"{v:.4f}"),
    st.integers(-3, 3).map(str),
    st.integers().map(str),
    st.sampled_from(["", "nan", "NA", "inf", "-inf", "1e308", "-1e308", "1e-320", "1+2j",
                     "yes", "no", "True", "2026-01-01", '"a,b"', "0x1F", " 0.5 ", "\x1b[31m"]),
    TEXT,
)
COLUMN = st.one_of(st.sampled_from(["label", "y", "prob", "p", "p_a", "p_b", "p_c", "score",
                                    "logit", "id", "age", "race", "label", "prob"]), TEXT)


VALID_CELL = {"label": st.sampled_from(["0", "1"]), "prob": st.floats(0, 1).map(repr),
              "age": st.integers(18, 90).map(str), "race": st.sampled_from(["A", "B", "C"]),
              "id": st.integers(0, 10**6).map(str)}


@st.composite
def valid_csv(draw):
    """A usable file (label, prob, age, race, id) with a few cells replaced."""
    columns = draw(st.sampled_from([["label", "prob"], ["label", "prob", "age", "race"],
                                    ["id", "label", "prob", "age", "race"]]))
    n = draw(st.integers(2, 40))
    rows = [[draw(VALID_CELL[c]) for c in columns] for _ in range(n)]
    for _ in range(draw(st.integers(0, 3))):
        rows[draw(st.integers(0, n - 1))][draw(st.integers(0, len(columns) - 1))] = draw(CELL)
    text = "\n".join(",".join(r) for r in [columns, *rows]) + "\n"
    return "d.csv", text.encode("utf-8", "surrogatepass"), columns


@st.composite
def csv_inputs(draw):
    if draw(st.booleans()):
        return draw(valid_csv())
    columns = draw(st.lists(COLUMN, min_size=1, max_size=5))
    n = draw(st.integers(0, 25))
    sep = draw(st.sampled_from([",", ",", ",", ";", "\t"]))
    rows = []
    for _ in range(n):
        width = len(columns) + draw(st.sampled_from([0, 0, 0, 0, 1, -1]))
        rows.append(sep.join(draw(st.lists(CELL, min_size=max(width, 0),
                                           max_size=max(width, 0)))))
    text = "\n".join([sep.join(columns), *rows]) + draw(st.sampled_from(["\n", "", "\n\n"]))
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.booleans()) and data:
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + draw(st.binary(max_size=8)) + data[cut:]
    name = draw(st.sampled_from(["d.csv", "d.csv", "d.tsv", "d.csv.gz"]))
    if name.endswith(".gz") and draw(st.booleans()):
        import gzip

        data = gzip.compress(data)
    return name, data, columns


DATA_FLAGS = st.lists(st.sampled_from([
    ("--renormalize",), ("--drop-invalid",), ("--label-col", "label"), ("--prob-cols", "p_*"),
    ("--prob-cols", "prob"), ("--logit-cols", "logit"), ("--covariates", "age"),
    ("--covariates", "age,race"), ("--categorical", "age"), ("--positive-label", "yes"),
    ("--id-col", "id"),
]), max_size=3).map(lambda groups: [x for g in groups for x in g])


@FUZZ
@given(csv_inputs(), DATA_FLAGS, OUTPUT_ARGS, st.sampled_from(["metrics", "test"]))
def test_fuzz_csv(case, flags, outputs, command):
    name, data, _ = case
    with workdir() as folder:
        folder = Path(folder)
        (folder / name).write_bytes(data)
        fast = FAST if command == "test" else ()
        check_case("csv", folder, command, name, *flags, *fast, *outputs)


@st.composite
def frames(draw):
    n = draw(st.integers(0, 20))
    kinds = draw(st.lists(st.sampled_from(["prob", "label", "int", "float", "str", "bool",
                                           "list", "time", "null", "huge", "bytes"]),
                          min_size=1, max_size=5))
    names = draw(st.lists(COLUMN, min_size=len(kinds), max_size=len(kinds)))
    if draw(st.booleans()):
        kinds, names = ["label", "prob", *kinds[:2]], ["label", "prob", "age", "race"][
            :2 + len(kinds[:2])]
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    import pyarrow as pa

    columns = {}
    for kind, name in zip(kinds, names):
        if kind == "prob":
            values = pa.array(rng.uniform(size=n))
        elif kind == "label":
            values = pa.array(rng.integers(0, 2, n))
        elif kind == "int":
            values = pa.array(rng.integers(-5, 5, n))
        elif kind == "float":
            values = pa.array(rng.normal(size=n) * draw(st.sampled_from([1, 1e308, 1e-300])))
        elif kind == "str":
            values = pa.array([draw(TEXT) for _ in range(n)])
        elif kind == "bool":
            values = pa.array(rng.integers(0, 2, n).astype(bool))
        elif kind == "list":
            values = pa.array([[1, 2]] * n)
        elif kind == "time":
            values = pa.array(pd.to_datetime(rng.integers(0, 10**9, n), unit="s"))
        elif kind == "huge":
            values = pa.array([2**63 - 1] * n)
        elif kind == "bytes":
            values = pa.array([b"\xff\x00"] * n)
        else:
            values = pa.nulls(n)
        columns[name] = values
    return pa.table(list(columns.values()), names=list(columns))


@FUZZ
@given(frames(), DATA_FLAGS, OUTPUT_ARGS)
def test_fuzz_parquet(table, flags, outputs):
    import pyarrow.parquet as pq

    with workdir() as folder:
        folder = Path(folder)
        pq.write_table(table, folder / "d.parquet")
        check_case("parquet", folder, "metrics", "d.parquet", *flags, *outputs)


ARRAYS = st.one_of(
    st.integers(0, 20).map(lambda n: np.random.default_rng(n).uniform(size=n)),
    st.integers(0, 20).map(lambda n: np.random.default_rng(n).dirichlet(np.ones(3), n)),
    st.integers(0, 20).map(lambda n: np.arange(n) % 2),
    st.integers(0, 20).map(lambda n: np.array(["a", "b"] * (n // 2))),
    st.integers(0, 20).map(lambda n: np.zeros((n, 2, 2))),
    st.integers(0, 20).map(lambda n: np.ones(n) + 1j),
    st.integers(0, 20).map(lambda n: np.full(n, np.nan)),
    st.integers(0, 20).map(lambda n: np.arange(n).astype("datetime64[s]")),
    st.just(np.zeros(0)), st.just(np.float64(3.0)),
)


@st.composite
def npz_inputs(draw):
    keys = draw(st.lists(st.sampled_from(["probs", "labels", "covariates", "covariate_names",
                                          "class_names", "age", "x"]), min_size=1,
                         max_size=4, unique=True))
    arrays = {key: draw(ARRAYS) for key in keys}
    if draw(st.booleans()):
        n = draw(st.integers(2, 30))
        rng = np.random.default_rng(n)
        probs = (rng.uniform(size=n) if draw(st.booleans())
                 else rng.dirichlet(np.ones(3), n))
        arrays = {"probs": probs, "labels": rng.integers(0, 2 if probs.ndim == 1 else 3, n),
                  **({"age": rng.normal(size=n)} if draw(st.booleans()) else {}),
                  **{k: v for k, v in arrays.items() if draw(st.integers(0, 3)) == 0}}
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    data = buf.getvalue()
    mode = draw(st.sampled_from(["plain", "plain", "truncate", "flip", "member", "npy"]))
    if mode == "truncate":
        data = data[:draw(st.integers(0, len(data)))]
    elif mode == "flip":
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1:]
    elif mode == "member":
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
            for info in src.infolist():
                dst.writestr(info, src.read(info))
            dst.writestr(draw(st.sampled_from(["notes.txt", "x.npy", "dir/"])),
                         draw(st.binary(max_size=64)))
        data = out.getvalue()
    elif mode == "npy":
        single = io.BytesIO()
        np.save(single, draw(ARRAYS))
        data = single.getvalue()
    return data


@FUZZ
@given(npz_inputs(), OUTPUT_ARGS)
def test_fuzz_npz(data, outputs):
    with workdir() as folder:
        folder = Path(folder)
        (folder / "d.npz").write_bytes(data)
        check_case("npz", folder, "metrics", "d.npz", *outputs)


# ------------------------------------------------------------------------------ config

def _setting_keys() -> list[str]:
    from calaudit.settings import cli_roots
    from calaudit.settings.resolve import combined_schema
    from calaudit.settings.schema import all_keys

    return [k.replace("<metric>", "ece") for k in all_keys(combined_schema(cli_roots()))]


TOML_VALUE = st.recursive(
    st.one_of(st.integers(), st.integers(-2, 30), st.floats(allow_nan=False).map(repr),
              st.sampled_from(["true", "false", "nan", "inf", "-1", "0", "1e-300",
                               "100000000000000", "'holm'", "'x'", "''", "'-'", "'out'"]),
              TEXT.map(json.dumps)).map(str),
    lambda inner: st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
    max_leaves=6)


@st.composite
def config_texts(draw):
    if draw(st.integers(0, 5)) == 0:
        return draw(st.binary(max_size=200))
    lines = []
    for key in draw(st.lists(st.sampled_from(_setting_keys()) | TEXT, max_size=5)):
        section, _, leaf = key.rpartition(".")
        if section:
            lines.append(f"[{section}]")
        lines.append(f"{json.dumps(leaf) if leaf else 'x'} = {draw(TOML_VALUE)}")
    return "\n".join(lines).encode("utf-8", "surrogatepass")


@FUZZ
@given(config_texts(), st.sampled_from(["calaudit.toml", "pyproject.toml", "c.toml"]),
       st.sampled_from(["config-show", "metrics", "discover"]))
def test_fuzz_config(text, name, command):
    with workdir() as folder:
        folder = Path(folder)
        binary_frame(30).to_csv(folder / "d.csv", index=False)
        (folder / name).write_bytes(text)
        if command == "config-show":
            check_case("config", folder, "config", "show", "--config", name)
        elif command == "metrics":
            check_case("config", folder, "metrics", "d.csv", "--config", name)
        else:
            check_case("config", folder, "metrics", "d.csv", "--json", "out/r.json")


# ------------------------------------------------------------------------- saved results

_SAVED: dict[str, str] = {}


def saved_result() -> str:
    """A real result (``calaudit metrics --json``), made once."""
    if not _SAVED:
        with workdir() as folder:
            folder = Path(folder)
            frame = binary_frame(80)
            frame.to_csv(folder / "d.csv", index=False)
            run_cli("metrics", "d.csv", "--covariates", "age,race", "--json", "r.json", "-q",
                    cwd=folder)
            _SAVED["text"] = (folder / "r.json").read_text()
    return _SAVED["text"]


JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False,
                                                                         allow_infinity=False),
                      TEXT)
JSON = st.recursive(JSON_LEAF, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8)


@st.composite
def result_texts(draw):
    mode = draw(st.sampled_from(["mutate", "mutate", "mutate", "random", "text", "bytes"]))
    if mode == "random":
        return json.dumps(draw(JSON)).encode()
    if mode == "bytes":
        return draw(st.binary(max_size=300))
    text = saved_result()
    if mode == "text":
        at = draw(st.integers(0, len(text)))
        return (text[:at] + draw(st.sampled_from(["Infinity", "NaN", "[" * 200, "9" * 500,
                                                  "}", ",", '"'])) + text[at:]).encode()
    payload = json.loads(text)
    for _ in range(draw(st.integers(1, 3))):
        node, path = payload, []
        while isinstance(node, (dict, list)) and node and draw(st.booleans()):
            key = draw(st.sampled_from(sorted(node) if isinstance(node, dict)
                                       else list(range(len(node)))))
            path.append((node, key))
            node = node[key]
        if not path:
            key = draw(st.sampled_from(sorted(payload)))
            path = [(payload, key)]
        parent, key = path[-1]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[key]
        else:
            parent[key] = draw(JSON)
    return json.dumps(payload).encode()


@FUZZ
@given(result_texts(), st.sampled_from(["report", "compare-old", "compare-new", "baseline"]),
       OUTPUT_ARGS)
def test_fuzz_saved_results(text, reader, outputs):
    with workdir() as folder:
        folder = Path(folder)
        (folder / "bad.json").write_bytes(text)
        (folder / "good.json").write_text(saved_result())
        binary_frame(80).to_csv(folder / "d.csv", index=False)
        if reader == "report":
            check_case("result", folder, "report", "bad.json", "--html", "out/r.html",
                       "--md", "out/r.md")
        elif reader == "compare-old":
            check_case("result", folder, "compare", "bad.json", "good.json", *outputs)
        elif reader == "compare-new":
            check_case("result", folder, "compare", "good.json", "bad.json", *outputs)
        else:
            check_case("result", folder, "metrics", "d.csv", "--covariates", "age,race",
                       "--baseline", "bad.json", *outputs)


# ------------------------------------------------------------------------------- flags

FLAG_VALUE = st.one_of(
    st.integers().map(str), st.integers(-3, 40).map(str),
    st.sampled_from(["0", "-1", "1e-300", "1e300", "nan", "inf", "-inf", "", "abc", ",",
                     ",,,", "9223372036854775808", str(10**18), "1000000000", "0.5",
                     "holm", "all", "none", "-", "p_*", "[", "\x1b[2J", "a" * 5000]),
    st.floats().map(repr), TEXT)
FLAGS = ["--n-bins", "--binning", "--kernel", "--bandwidth", "--blocksize", "--alpha",
         "--seed", "--n-resamples", "--ci-level", "--multiple-testing",
         "--multiple-testing-scope", "--fail-on", "--regression-tolerance", "--prob-bandwidth",
         "--cov-bandwidth", "--local-tests", "--local-resamples", "--min-group-rows",
         "--min-group-events", "--group-adjust", "--n-bands", "--top-k", "--kite-width",
         "--kite-gamma", "--squared", "--squared-estimators", "--label-col", "--prob-cols",
         "--logit-cols", "--covariates", "--categorical", "--positive-label", "--color",
         "--signoff-name", "--id-col", "--labels", "--config", "--baseline"]
SLOW = {"--n-resamples", "--local-resamples", "--squared", "--squared-estimators"}


VALID = {"--n-bins": ["1", "5", "100"], "--binning": ["uniform", "quantile"],
         "--kernel": ["gaussian", "laplacian"], "--bandwidth": ["0.1", "2"],
         "--alpha": ["0.01", "0.5"], "--seed": ["0", "123"], "--ci-level": ["0.9"],
         "--multiple-testing": ["bonferroni", "none"], "--fail-on": ["WARN", "FAIL"],
         "--prob-bandwidth": ["0.05"], "--cov-bandwidth": ["0.5"], "--n-bands": ["1", "3"],
         "--local-tests": ["klce_bootstrap", "none", "klce_permutation"], "--top-k": ["0"],
         "--min-group-rows": ["1", "1000"], "--group-adjust": ["fdr_bh"],
         "--kite-width": ["0.3"], "--kite-gamma": ["2"], "--color": ["never", "always"],
         "--signoff-name": ["<b>x</b>"], "--categorical": ["age"], "--label-col": ["label"]}
FLAG_PAIR = st.sampled_from(FLAGS).flatmap(lambda flag: st.tuples(
    st.just(flag), st.sampled_from(VALID[flag]) if flag in VALID else FLAG_VALUE)
    | st.tuples(st.just(flag), FLAG_VALUE))


@FUZZ
@given(st.lists(FLAG_PAIR, min_size=1, max_size=3), st.sampled_from(["metrics", "test"]),
       OUTPUT_ARGS, st.sampled_from([(), (), (), ("--covariates", "age,race"),
                                     ("--covariates", "age,race"), ("--bogus",), ("extra",)]))
def test_fuzz_flags(pairs, command, outputs, extra):
    args = [x for pair in pairs for x in pair]
    if command == "test" and any(flag in SLOW for flag, _ in pairs):
        command = "metrics"
    with workdir() as folder:
        folder = Path(folder)
        binary_frame(60).to_csv(folder / "d.csv", index=False)
        fast = FAST if command == "test" else ()
        check_case("flags", folder, command, "d.csv", *fast, *extra, *args, *outputs)


# ------------------------------------------------------------ cluster, spill and PDF flags

#: Values of the options that start or reach a Dask cluster, spill to disk or write a PDF.
#: Valid ones are drawn too, but a cluster is never started: every --workers value is out
#: of range, and the --dask addresses are malformed or have no scheduler (1 s timeout).
RUN_FLAG_VALUES = {
    "--dask": ["tcp://127.0.0.1:1", "ucx://127.0.0.1:1", "inproc://x", "localhost:notaport",
               "tls://127.0.0.1:1", "[::1]:1", "", "tcp://", "a" * 5000, "tcp://256.0.0.1:1",
               "\x1b[2J", "tcp://127.0.0.1:99999"],
    "--workers": ["0", "-1", "1025", "100000", "abc", "", "1.5"],
    "--memory-limit": ["1B", "20MB", "0", "-5GB", "1e400B", "abc", "", "255MiB", "2GB",
                       "1 TB", "9" * 400],
    "--threads": ["0", "1", "2", "64", "1024", "1025", "-1", "abc"],
    "--spill": ["auto", "always", "never", "sometimes", ""],
    "--spill-dir": ["missing", "d.csv", "d.csv/sub", "s" * 300, ".", "sub", "fifo"],
    "--pdf": ["", ".", "-", "sub", "d.csv/x.pdf", "p" * 300 + ".pdf", "fifo", "sub/",
              "q/" * 2100 + "x.pdf"],
}
RUN_FLAG_PAIR = st.sampled_from(sorted(RUN_FLAG_VALUES)).flatmap(
    lambda flag: st.tuples(st.just(flag), st.sampled_from(RUN_FLAG_VALUES[flag])
                           if flag == "--workers"
                           else st.sampled_from(RUN_FLAG_VALUES[flag]) | FLAG_VALUE))


@FUZZ
@given(st.lists(RUN_FLAG_PAIR, min_size=1, max_size=3, unique_by=lambda pair: pair[0]),
       OUTPUT_ARGS)
def test_fuzz_cluster_spill_and_pdf_flags(pairs, outputs):
    args = [x for pair in pairs for x in pair]
    with workdir() as folder:
        folder = Path(folder)
        binary_frame(60).to_csv(folder / "d.csv", index=False)
        (folder / "sub").mkdir()
        os.mkfifo(folder / "fifo")
        check_case("run flags", folder, "test", "d.csv", *FAST, *args, *outputs,
                   env={"CALAUDIT_DASK__TIMEOUT": "1"})


# ------------------------------------------------------------------------------ corpus

def _npy(array) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def _huge_npz() -> bytes:
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }"
    header = header.ljust(118) + "\n"
    member = (b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()
              + np.zeros(2).tobytes())
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("probs.npy", member)
        archive.writestr("labels.npy", _npy(np.arange(2)))
    return out.getvalue()


def _result_with(change) -> bytes:
    payload = json.loads(saved_result())
    change(payload)
    return json.dumps(payload).encode()


GOOD_CSV = "label,prob\n" + "".join(f"{i % 2},0.{i % 9 + 1}\n" for i in range(40))
#: Known hostile cases: (name, files, arguments). Every one must end in 0, 1 or 2
#: under the invariants; most must be exit 2 (see the targeted tests).
CORPUS = [
    ("deep json report", {"r.json": "[" * 100000 + "]" * 100000}, ["report", "r.json",
                                                                   "--html", "o.html"]),
    ("deep json baseline", {"r.json": "[" * 100000 + "]" * 100000},
     ["metrics", "d.csv", "--baseline", "r.json", "--json", "o.json"]),
    ("huge int compare", {"r.json": '{"schema_version": ' + "9" * 5000 + "}"},
     ["compare", "r.json", "r.json"]),
    ("value high", {"r.json": lambda: _result_with(
        lambda p: p["metrics"][0].__setitem__("value", "high"))},
     ["compare", "r.json", "r.json", "--json", "o.json"]),
    ("metrics strings", {"r.json": lambda: _result_with(lambda p: p.__setitem__("metrics",
                                                                                 ["ece"]))},
     ["metrics", "d.csv", "--baseline", "r.json"]),
    ("params list", {"r.json": lambda: _result_with(
        lambda p: p["metrics"][0].__setitem__("params", [1]))}, ["compare", "r.json", "r.json"]),
    ("config string", {"r.json": lambda: _result_with(lambda p: p.__setitem__("config", "x"))},
     ["compare", "r.json", "r.json"]),
    ("tests string", {"r.json": lambda: _result_with(lambda p: p.__setitem__("tests", "x"))},
     ["compare", "r.json", "r.json"]),
    ("infinity", {"r.json": lambda: saved_result().replace('"value": ', '"value": Infinity, '
                                                           '"x": ', 1).encode()},
     ["compare", "r.json", "r.json", "--json", "o.json"]),
    ("npy renamed", {"d.npz": lambda: _npy(np.arange(3.0))}, ["metrics", "d.npz"]),
    ("npz huge header", {"d.npz": _huge_npz}, ["metrics", "d.npz"]),
    ("deep toml", {"c.toml": "alpha = " + "[" * 5000 + "]" * 5000 + "\n"},
     ["config", "show", "--config", "c.toml"]),
    ("pyproject tool string", {"pyproject.toml": "tool = 'x'\n"}, ["metrics", "d.csv"]),
    ("dev zero config", {}, ["config", "show", "--config", "/dev/zero"]),
    ("dev zero report", {}, ["report", "/dev/zero", "--html", "o.html"]),
    ("prob cols commas", {}, ["metrics", "d.csv", "--prob-cols", ",,,"]),
    ("logit cols comma", {}, ["metrics", "d.csv", "--logit-cols", ","]),
    ("n bins 2**63", {}, ["metrics", "d.csv", "--n-bins", "9223372036854775808"]),
    ("n bins 1e18", {}, ["metrics", "d.csv", "--n-bins", str(10**18)]),
    ("n bins 1e9", {}, ["metrics", "d.csv", "--n-bins", "1000000000"]),
    ("cov bandwidth tiny", {}, ["test", "d.csv", "--covariates", "label", "--cov-bandwidth",
                                "1e-300"]),
    ("existing dir html", {"r.json": saved_result}, ["report", "r.json", "--md", "r.md",
                                                     "--html", "outdir"]),
    ("sample data onto a file", {"afile": "x"}, ["sample-data", "afile"]),
    ("n resamples 1e12", {}, ["test", "d.csv", "--n-resamples", str(10**12)]),
    ("n resamples config", {"c.toml": "n_resamples = 1000000000000\n"},
     ["test", "d.csv", "--config", "c.toml"]),
    ("local resamples 1e10", {}, ["test", "d.csv", "--local-resamples", str(10**10)]),
    ("json then junit dir", {}, ["test", "d.csv", *FAST, "--json", "r.json", "--junit",
                                 "outdir"]),
    ("parent is a file", {"afile": "x"}, ["metrics", "d.csv", "--html", "afile/r.html"]),
    ("blocked figures", {"r_files": "x"}, ["metrics", "d.csv", "--json", "r.json", "--md",
                                           "r.md"]),
    ("seed -1", {}, ["test", "d.csv", "--seed", "-1"]),
    ("alpha abc", {}, ["test", "d.csv", "--alpha", "abc"]),
    ("unknown option", {}, ["test", "d.csv", "--nope"]),
    ("dash file", {}, ["test", "-x.csv"]),
    ("label 1e300", {"l.csv": "label,prob\n1e300,0.5\n0,0.4\n"}, ["metrics", "l.csv"]),
    ("ragged", {"g.csv": GOOD_CSV + "1,0.99,extra\n"}, ["metrics", "g.csv"]),
    ("duplicate names", {"g.csv": "label,prob,prob\n1,0.5,0.5\n0,0.5,0.5\n"},
     ["metrics", "g.csv"]),
    ("complex npz", {"d.npz": lambda: _npz(probs=np.ones(4) + 1j, labels=np.arange(4) % 2)},
     ["metrics", "d.npz"]),
    ("renormalize zero", {"g.csv": "label,p_a,p_b\na,0.5,0.5\nb,0,0\n"},
     ["metrics", "g.csv", "--renormalize"]),
    ("stdout mix", {}, ["test", "d.csv", "--json", "-", "--md", "-", "--html", "-",
                        "--junit", "-"]),
    ("same path", {}, ["test", "d.csv", "--json", "X", "--junit", "X"]),
    ("empty json path", {}, ["test", "d.csv", "--json", ""]),
    ("config init dir", {}, ["config", "init", "outdir"]),
    ("report not result", {"r.json": '{"a": 1}'}, ["report", "r.json", "--html", "o.html"]),
    ("semicolons", {"g.csv": "label;prob\n1;0.5\n"}, ["metrics", "g.csv"]),
    ("latin-1", {"g.csv": b"label,prob\n1,0.5\n0,\xe9\n"}, ["metrics", "g.csv"]),
]


def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


@pytest.mark.parametrize("name, files, args", CORPUS, ids=[c[0] for c in CORPUS])
def test_corpus(name, files, args):
    with workdir() as folder:
        folder = Path(folder)
        (folder / "d.csv").write_text(GOOD_CSV)
        (folder / "outdir").mkdir()
        for file_name, content in files.items():
            content = content() if callable(content) else content
            data = content.encode() if isinstance(content, str) else content
            (folder / file_name).write_bytes(data)
        code = check_case("corpus", folder, *args)
        assert code == 2, name


# ------------------------------------------------------------------ real subprocesses

def _subprocess(args, cwd, **kwargs):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "calaudit", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **kwargs)


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ["config", "show", "--config", "f"], ["report", "f", "--html", "o.html"],
    ["compare", "f", "f"], ["metrics", "f.csv"], ["metrics", "d.csv", "--labels", "f.csv"],
    ["metrics", "d.csv", "--baseline", "f"],
])
def test_fifos_never_block(tmp_path, args):
    os.mkfifo(tmp_path / "f")
    os.mkfifo(tmp_path / "f.csv")
    (tmp_path / "d.csv").write_text(GOOD_CSV)
    process = _subprocess(args, tmp_path)
    try:
        out, err = process.communicate(timeout=BUDGET)
    finally:
        process.kill()
    assert process.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "FIFO" in lines[0], err


def _sigint_as_in_a_terminal() -> None:
    """In the child before ``exec``: SIGINT's default action, as a terminal's Ctrl-C finds
    it. A shell's background job (``pytest ... &``, nohup) ignores SIGINT, the child would
    inherit that, and Python installs no KeyboardInterrupt handler for an ignored signal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_ctrl_c_exits_130_and_leaves_nothing(tmp_path):
    frame = binary_frame(3000)
    frame.to_csv(tmp_path / "d.csv", index=False)
    before = listing(tmp_path)
    # minutes of resampling, so that the interrupt lands mid-audit however fast the machine
    process = _subprocess(["test", "d.csv", "--covariates", "age,race", "--n-resamples",
                           "100000", "--local-resamples", "100000", "--json", "out/r.json",
                           "--md", "out/r.md"], tmp_path, preexec_fn=_sigint_as_in_a_terminal)
    time.sleep(6)
    process.send_signal(signal.SIGINT)
    try:
        out, err = process.communicate(timeout=BUDGET)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert err.strip().splitlines() == ["calaudit: error: interrupted"], err
    assert listing(tmp_path) == before
