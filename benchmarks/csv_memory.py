"""Peak memory of loading one large CSV file and one NPZ archive, with and without spill
(CSV and NPZ read out of core).

    python benchmarks/csv_memory.py OUT_DIR [--rows 1e7] [--main /path/to/main/checkout]

Writes ``OUT_DIR/preds.csv`` and ``OUT_DIR/preds.npz`` (the rows of
``benchmarks/make_partitioned.py``: label, prob, age, region; the NPZ without the text
column) unless they exist, then loads each in a child process (``calaudit.load`` with the
covariates, nothing else) with ``--spill never`` and ``always`` (and, with ``--main``,
the reader of that checkout), sampling ``VmHWM`` and ``RssAnon`` every 20 ms
(``spill_memory.sample``).
Run one at a time under ``nice``: the figures are memory, not speed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_partitioned import block_table, rows_of, write_dataset  # noqa: E402
from spill_memory import IMPORTS, LOAD, sample  # noqa: E402


def write_npz(path: Path, rows: int) -> None:
    """The same rows as the CSV, numeric columns only, as ``numpy.savez`` arrays."""
    parts = {"labels": [], "probs": [], "age": []}
    start = 0
    while start < rows:
        block = start // (1 << 20)
        stop = min(rows, (block + 1) << 20)
        table = block_table(block, start, stop)
        parts["labels"].append(table.column("label").to_numpy())
        parts["probs"].append(table.column("prob").to_numpy())
        parts["age"].append(table.column("age").to_numpy())
        start = stop
    np.savez(path, **{key: np.concatenate(value) for key, value in parts.items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--main", default=None)
    parser.add_argument("--formats", default="csv,npz")
    args = parser.parse_args()
    rows = int(args.rows)
    args.out.mkdir(parents=True, exist_ok=True)
    csv, archive = args.out / "preds.csv", args.out / "preds.npz"
    if not csv.exists():
        written = write_dataset(args.out / "csv", rows, 1, fmt="csv")[0]
        written.rename(csv)
    if not archive.exists() and "npz" in args.formats:
        write_npz(archive, rows)
    assert rows_of(0, rows, 1) == (0, rows)
    repo = str(Path(__file__).resolve().parents[1])
    print(f"# {rows:,} rows; load average {os.getloadavg()}; {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"{'run':<22} {'rc':>3} {'VmHWM MiB':>10} {'max RssAnon MiB':>16} {'CPU s':>7}")
    runs = [("imports only", None, repo)]
    for fmt, path, covariates in (("csv", csv, "age,region"), ("npz", archive, "age")):
        if fmt in args.formats:
            runs += [(f"{fmt} {mode}", (path, covariates, mode), repo)
                     for mode in ("never", "always")]
            if args.main:
                runs.append((f"{fmt} main", (path, covariates, "main"), args.main))
    for name, what, root in runs:
        env = dict(os.environ, PYTHONPATH=root)
        cmd = ([sys.executable, "-c", IMPORTS] if what is None
               else [sys.executable, "-c", LOAD, str(what[0]), what[1], what[2]])
        got = sample(cmd, env)
        print(f"{name:<22} {got['rc']:>3} {got['hwm']:>10.0f} {got['anon']:>16.0f} "
              f"{got['cpu']:>7.1f}", flush=True)
    print(f"# load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
