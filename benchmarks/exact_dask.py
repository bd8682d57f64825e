"""Benchmark: the exact local test (``--method exact``) in one process and on ``--workers
2``: CPU seconds and peak RSS per process (client, each worker), and whether the JSON is
identical (the exact passes as block-pair tasks, workers holding blocks).

    python benchmarks/exact_dask.py --rows 40000 --files 3 [--compare /path/to/other/tree]

The data are ``benchmarks/make_partitioned.py``'s seeded rows (``label``, ``prob``, a
numeric ``age`` and a categorical ``region``), written to a temporary directory as
``--files`` Parquet files. Each run is ``calaudit test DATA --covariates age,region
--method exact --json OUT --verbose`` as a child process (``run_audit_cli`` of
``benchmarks/scale_partitioned.py``: psutil samples the process tree every 0.25 s for each
process's peak RSS and CPU; the CPU of the whole tree comes from ``RUSAGE_CHILDREN``).

Runs: this tree in one process; this tree with ``--workers 2 --memory-limit 2GB``; and,
with ``--compare ROOT``, another source tree (e.g. a ``git archive`` of another commit) on
``--workers 2``, to compare the workers' memory with that tree's. The machine may be
shared: the load average at the start of each run is printed, and CPU seconds, not wall
time, are the figure to compare.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import scale_partitioned as sp  # noqa: E402  (benchmarks/scale_partitioned.py)
from make_partitioned import write_dataset  # noqa: E402


def run(data: Path, out: Path, root: Path, extra: list[str]) -> dict:
    """``run_audit_cli`` with ``--method exact``, the code of ``root`` (its PYTHONPATH
    and working directory)."""
    previous, here = sp.ROOT, os.getcwd()
    sp.ROOT = root
    os.chdir(root)  # ``python -m`` puts the working directory first on the path
    try:
        return sp.run_audit_cli(data, out, ["--method", "exact", *extra])
    finally:
        sp.ROOT = previous
        os.chdir(here)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=40_000)
    parser.add_argument("--files", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--compare", help="another source tree, run on --workers too")
    parser.add_argument("--skip-single", action="store_true",
                        help="no single-process run (the JSON comparisons are then "
                             "against this tree's --workers run)")
    args = parser.parse_args()
    print(f"# exact local test, {args.rows:,} rows in {args.files} Parquet files, "
          f"--covariates age,region --method exact (500 local resamples, the default)")
    cluster = ["--workers", str(args.workers), "--memory-limit", args.memory_limit]
    plan = [] if args.skip_single else [("single process", ROOT, [])]
    plan.append((f"--workers {args.workers}", ROOT, cluster))
    if args.compare:
        plan.append((f"--workers {args.workers}, {args.compare}", Path(args.compare),
                     cluster))
    with tempfile.TemporaryDirectory(prefix="exact_dask_") as scratch:
        base = Path(scratch)
        data = base / "data"
        write_dataset(data, args.rows, args.files)
        outs = []
        for k, (name, root, extra) in enumerate(plan):
            load = os.getloadavg()[0]
            outs.append(base / f"{k}.json")
            r = run(data, outs[-1], root, extra)
            print(f"\n{name}: exit {r['code']}, CPU {r['cpu']:.1f} s (every process), "
                  f"wall {r['wall']:.1f} s, load average {load:.1f} at the start")
            if r["error"]:
                print(f"  {r['error']}")
            for proc, figures in r["processes"].items():
                print(f"  {proc}: peak RSS {figures['peak_mib']:,} MiB, "
                      f"CPU {figures['cpu']} s")
            for line in r["stages"]:
                print(f"  {line}")
        first = sp.stable_json(outs[0])
        for (name, _, _), path in zip(plan[1:], outs[1:]):
            diff = sp.differences(first, sp.stable_json(path))
            print(f"\n{name} vs {plan[0][0]}: identical JSON apart from timings: "
                  f"{not diff}" + (f" ({len(diff)} differing values)" if diff else ""))
            for line in diff[:5]:
                print(f"  {line}")


if __name__ == "__main__":
    main()
