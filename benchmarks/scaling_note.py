"""The figures of docs/scaling.md from saved ``scale_partitioned.py --what audit`` outputs.

    python benchmarks/scaling_note.py benchmarks/results/scale_partitioned_audit_1e6.txt \
        [benchmarks/results/scale_partitioned_audit_1e7.txt] [--rows 1e9] [--workers 16,64,256]

Reads, from each file, the rows, the single-process stage lines (CPU seconds per stage),
the ``--workers`` run's stage lines (data placed on the workers and partials fetched so
far, cumulative: a stage's share is the difference) and every process's peak RSS, and
prints Markdown tables: the measured per-row costs per stage, the per-process peaks (with
two files, the bytes per row of each process from the difference of the two sizes), and the
extrapolation to ``--rows`` rows on N workers. The extrapolation is linear in the rows:
``CPU = rows x (CPU-s per row)``, divided over N workers; data placed per stage = rows x
(bytes per row) (one copy; a broadcast gives each worker a copy); partials fetched = rows x
(bytes per row) (one partial per task of ``TASK_ROWS`` rows).
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

STAGE = re.compile(r"stage (\w+): ([\d.]+) s \(cpu ([\d.]+) s, peak RSS so far (\d+) MiB"
                   r"(?:; placed ([\d.]+) MiB on the workers, fetched ([\d.]+) MiB)?")
PROCESS = re.compile(r"^\s+(client|worker|scheduler|nanny) (\d+): peak RSS ([\d,]+) MiB"
                     r"(?: \(anonymous ([\d,na]+) MiB\))?, CPU ([\d.na]+) s")
ROWS = re.compile(r"data: \d+ (?:\w+ )?files, ([\d,]+) rows")
MODE = re.compile(r"^(single process[^:]*|--workers \d+.*?): exit (\d+), wall ([\d.]+) s, "
                  r"CPU ([\d.]+) s(?: \(every process reaped\), ([\d.]+) s)?")


def parse(path: Path) -> dict:
    """``{"rows", "modes": {mode: {"cpu", "stages": {name: {...}}, "processes": [...]}}}``."""
    out: dict = {"rows": 0, "modes": {}, "file": str(path)}
    mode = None
    for line in path.read_text().splitlines():
        if m := ROWS.search(line):
            out["rows"] = int(m.group(1).replace(",", ""))
        elif m := MODE.match(line):
            mode = "single" if m.group(1).startswith("single process") else "dask"
            # every process sampled where recorded: the reaped CPU misses the processes
            # of a local cluster that its own close kills
            cpu = m.group(5) or m.group(4)
            out["modes"][mode] = {"cpu": float(cpu), "wall": float(m.group(3)),
                                  "stages": {}, "processes": []}
        elif mode and (m := PROCESS.match(line)):
            anon = m.group(4).replace(",", "") if m.group(4) else ""
            out["modes"][mode]["processes"].append(
                (m.group(1), int(m.group(3).replace(",", "")), m.group(5),
                 int(anon) if anon.isdigit() else None))
        elif mode and (m := STAGE.search(line)):
            name, wall, cpu, rss, placed, fetched = m.groups()
            out["modes"][mode]["stages"][name] = {
                "cpu": float(cpu), "rss": int(rss),
                "placed": float(placed) if placed else 0.0,
                "fetched": float(fetched) if fetched else 0.0}
    return out


def per_stage(run: dict) -> list[tuple[str, float, float, float, float, float]]:
    """``(stage, CPU us/row in one process, client CPU us/row on Dask, the rest (on the
    workers) us/row, placed B/row, fetched B/row)``. The client's share is its own CPU in
    the ``--workers`` run; the workers' share is
    the one-process CPU minus it (a local cluster's scheduler and nannies run in processes of
    their own: their CPU is reported apart)."""
    n, rows = run["rows"], []
    single = run["modes"].get("single", {}).get("stages", {})
    dask = run["modes"].get("dask", {}).get("stages", {})
    placed = fetched = 0.0
    for name, figures in single.items():
        d = dask.get(name, {"placed": placed, "fetched": fetched, "cpu": figures["cpu"]})
        one, client = 1e6 * figures["cpu"] / n, 1e6 * d["cpu"] / n
        rows.append((name, one, client, max(one - client, 0.0),
                     2**20 * (d["placed"] - placed) / n, 2**20 * (d["fetched"] - fetched) / n))
        placed, fetched = d["placed"], d["fetched"]
    return rows


def _peak(process: tuple) -> str:
    """``1474`` or ``1474 (anon 529)``: a process's peak RSS and peak RssAnon in MiB."""
    anon = process[3]
    return f"{process[1]:,}" + (f" (anon {anon:,})" if anon is not None else "")


def _anon_slope(a: dict, b: dict, mode: str, role: str) -> str:
    """``", anonymous 12 B/row"`` from the two runs' largest RssAnon peaks, when recorded."""
    peaks = [max((p[3] for p in r["modes"].get(mode, {}).get("processes", [])
                  if p[0] == role and p[3] is not None), default=None) for r in (a, b)]
    if None in peaks:
        return ""
    return f", anonymous {(peaks[1] - peaks[0]) * 2**20 / (b['rows'] - a['rows']):.0f} B/row"


def human(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def size(nbytes: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes / 1e3:.0f} kB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--rows", type=float, default=1e9)
    parser.add_argument("--workers", default="16,64,256,1024")
    args = parser.parse_args()
    runs = sorted((parse(path) for path in args.files), key=lambda r: r["rows"])
    run = runs[-1]  # the largest measurement gives the per-row costs
    print(f"### Per-row costs per stage (from `{run['file']}`, {run['rows']:,} rows)\n")
    print("| stage | CPU us/row, one process | client CPU us/row, `--workers` | "
          "on the workers, us/row | placed on the workers, B/row | partials fetched, B/row |")
    print("|---|---|---|---|---|---|")
    stages = per_stage(run)
    for name, one, client, workers, placed, fetched in stages:
        print(f"| {name} | {one:.2f} | {client:.2f} | {workers:.2f} | {placed:.1f} | "
              f"{fetched:.1f} |")
    sums = [sum(s[k] for s in stages) for k in range(1, 6)]
    print("| all stages | " + " | ".join(f"{v:.2f}" if k < 3 else f"{v:.1f}"
                                         for k, v in enumerate(sums)) + " |")
    whole = {mode: 1e6 * figures["cpu"] / run["rows"] for mode, figures in run["modes"].items()}
    print(f"\nWhole run (loading, stages, output; every process): "
          f"{whole.get('single', math.nan):.2f} CPU-us/row in one process, "
          f"{whole.get('dask', math.nan):.2f} with `--workers` (client and workers together, "
          f"including the workers' start).")
    served = [p for p in run["modes"].get("dask", {}).get("processes", [])
              if p[0] in ("scheduler", "nanny")]
    if served:
        cpu = sum(float(p[2]) for p in served)
        print(f"Of these, the local cluster's scheduler and nannies (processes of their own, "
              f"beside the client): {1e6 * cpu / run['rows']:.2f} CPU-us/row ({cpu:.1f} s over "
              f"a {run['modes']['dask']['wall']:.0f} s run).")
    print()
    print("### Peak RSS per process (MiB)\n")
    print("Peak RSS, and in brackets peak anonymous memory (RssAnon: what `--spill` bounds; "
          "spilled columns are file-backed pages) where the file records it.\n")
    print("| rows | mode | client | workers | scheduler, nannies |")
    print("|---|---|---|---|---|")
    for r in runs:
        for mode, figures in r["modes"].items():
            client = [_peak(p) for p in figures["processes"] if p[0] == "client"]
            workers = [_peak(p) for p in figures["processes"] if p[0] == "worker"]
            served = [_peak(p) for p in figures["processes"] if p[0] in ("scheduler", "nanny")]
            print(f"| {r['rows']:,} | {mode} | {', '.join(client)} | "
                  f"{', '.join(workers) or '-'} | {', '.join(served) or '-'} |")
    if len(runs) >= 2:
        a, b = runs[0], runs[-1]
        print("\nBytes per row (difference of the two sizes):")
        for mode in ("single", "dask"):
            for role in ("client", "worker"):
                peaks = [max((p[1] for p in r["modes"].get(mode, {}).get("processes", [])
                              if p[0] == role), default=None) for r in (a, b)]
                if None not in peaks:
                    slope = (peaks[1] - peaks[0]) * 2**20 / (b["rows"] - a["rows"])
                    print(f"- {mode} {role}: {slope:.0f} B/row{_anon_slope(a, b, mode, role)}")
    n = args.rows
    workers = [int(w) for w in args.workers.split(",")]
    client_total, worker_total = sums[1], sums[2]
    print(f"\n### Extrapolation to {n:.0e} rows\n")
    print("Stages only (loading and output come on top, in the client): the client's share "
          "stays, the workers' share is divided by N.\n")
    print("| N workers | " + " | ".join(map(str, workers)) + " |")
    print("|---|" + "---|" * len(workers))
    print("| stages, client + workers / N | " + " | ".join(
        human(n * 1e-6 * (client_total + worker_total / w)) for w in workers) + " |")
    print("| of which the client | " + " | ".join(
        human(n * 1e-6 * client_total) for _ in workers) + " |")
    for name, one, client, on_workers, placed, fetched in stages:
        if on_workers * n * 1e-6 > 60:
            print(f"| {name}: workers' share / N | " + " | ".join(
                human(n * 1e-6 * on_workers / w) for w in workers) + " |")
    print("\n| stage | placed on the workers (one copy, all placements of the stage) | "
          "partials fetched |")
    print("|---|---|---|")
    for name, one, client, on_workers, placed, fetched in stages:
        if placed or fetched:
            print(f"| {name} | {size(n * placed)} | {size(n * fetched)} |")

if __name__ == "__main__":
    main()
