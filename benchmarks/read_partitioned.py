"""Benchmark: peak memory of reading a partitioned Parquet dataset.

    python benchmarks/read_partitioned.py [--rows 1e7] [--files 20] [--dir DIR]
        > benchmarks/results/read_partitioned_1e7.txt

Writes the dataset of benchmarks/make_partitioned.py (``label``, ``prob``, a numeric
covariate ``age`` and a categorical ``region``; 20 files), then in child processes:

- ``import``: ``import calaudit`` only (the interpreter's own footprint);
- ``dataset``: ``calaudit.load(DIR, covariates="age,region")``: the streaming reader
  (record batches -> float64 / int32-code columns) plus the validation of
  :func:`calaudit.data.build.build`;
- ``one file``: the same rows as one Parquet file through the single-file reader (a pandas
  frame with ``region`` as Python strings), for comparison.

Each child reports wall time and peak RSS (``ru_maxrss``). The machine is shared: the
load average is printed.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

CHILD = """
import resource, sys, time
import calaudit
imported = time.perf_counter()
if sys.argv[1] != "-":
    data = calaudit.load(sys.argv[1], covariates="age,region")
    assert data.n == int(sys.argv[2]), data.n
done = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{done - imported:.1f} {peak:.0f}")
"""


def child(target: str, rows: int) -> tuple[float, float, float]:
    """Wall seconds of the load (after the import), CPU seconds of the child, peak RSS MiB."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-c", CHILD, target, str(rows)], env=env,
                         check=True, capture_output=True, text=True).stdout.split()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return float(out[0]), cpu, float(out[1])


def main() -> None:
    from make_partitioned import write_dataset

    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    rows = int(args.rows)
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        data = Path(folder) / "preds"
        started = time.perf_counter()
        paths = write_dataset(data, rows, args.files)
        size = sum(p.stat().st_size for p in paths)
        print(f"dataset: {rows:,} rows, {len(paths)} Parquet files, {size / 2**20:.1f} MiB, "
              f"written in {time.perf_counter() - started:.1f} s")
        single = Path(folder) / "one.parquet"
        write_dataset(Path(folder) / "one", rows, 1)[0].rename(single)
        print(f"load average before: {os.getloadavg()[0]:.1f}")
        print(f"{'run':<10} {'wall s':>8} {'cpu s':>8} {'peak RSS MiB':>13}")
        for name, target in (("import", "-"), ("dataset", str(data)),
                             ("one file", str(single))):
            wall, cpu, peak = child(target, rows)
            print(f"{name:<10} {wall:>8.1f} {cpu:>8.1f} {peak:>13.0f}", flush=True)
        print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
