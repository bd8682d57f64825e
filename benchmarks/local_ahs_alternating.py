"""The exact local test on AHS (48,660 rows), alternating an old and the current tree.

Command (a saved run is the AHS part of benchmarks/results/local_test_cost.txt):

    git archive <old commit> | tar -x -C /tmp/old
    python benchmarks/local_ahs_alternating.py /tmp/old [pairs]

Each run is ``calaudit test preds.csv --covariates HINCP,BLACK --categorical BLACK
--local-resamples 500 --method exact`` in a child process (the command of
``benchmarks/local_ahs.py``, whose ``write_predictions`` writes the predictions once), with
``PYTHONPATH`` set to the old tree, then to this one; wall time, CPU time (user + system
of the child) and peak RSS of each, the load average before each run. After the runs: the
two JSON results compared (every test's status and p-value, the local test's statistic).
The machine may be shared: CPU seconds are the comparable figure, wall times are not.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "validation"))
from _common import require_shared  # noqa: E402
from local_ahs import write_predictions  # noqa: E402

NEW = Path(__file__).resolve().parents[1]


def run(tree: Path, preds: Path, out: Path) -> tuple[float, float, float]:
    cmd = [sys.executable, "-m", "calaudit", "test", str(preds), "--covariates",
           "HINCP,BLACK", "--categorical", "BLACK", "--local-resamples", "500",
           "--method", "exact", "--json", str(out), "--exit-zero"]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024


def compare(old: dict, new: dict) -> None:
    for a, b in zip(old["tests"], new["tests"], strict=True):
        same = (a.get("status"), a.get("p_value")) == (b.get("status"), b.get("p_value"))
        stat = ""
        if isinstance(a.get("statistic"), float) and a["statistic"] != b["statistic"]:
            rel = abs(a["statistic"] - b["statistic"]) / abs(a["statistic"])
            stat = f"; statistic {a['statistic']!r} -> {b['statistic']!r} (relative {rel:.1e})"
        print(f"  {a['id']}: status {a.get('status')} -> {b.get('status')}, p "
              f"{a.get('p_value')} -> {b.get('p_value')} ({'same' if same else 'CHANGED'})"
              f"{stat}")


def main() -> None:
    old = Path(sys.argv[1]).resolve()
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as tmp:
        preds = Path(tmp) / "ahs_preds.csv"
        write_predictions(require_shared(), preds)
        print(f"# old tree {old}, new tree {NEW}; cpus {os.cpu_count()}")
        print("run tree  load average (1, 5, 15 min)   wall s   cpu s   peak RSS MB")
        figures: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
        for i in range(pairs):
            for name, tree in (("old", old), ("new", NEW)):
                load = os.getloadavg()
                wall, cpu, rss = run(tree, preds, Path(tmp) / f"{name}.json")
                figures[name].append((wall, cpu))
                print(f"{i + 1:3d} {name}   ({load[0]:5.2f}, {load[1]:5.2f}, {load[2]:5.2f})"
                      f"   {wall:6.1f}  {cpu:6.1f}   {rss:6.0f}")
        for name, runs in figures.items():
            walls, cpus = sorted(w for w, _ in runs), sorted(c for _, c in runs)
            print(f"{name}: median wall {walls[len(walls) // 2]:.1f} s, median cpu "
                  f"{cpus[len(cpus) // 2]:.1f} s")
        print("results, old -> new:")
        compare(json.loads((Path(tmp) / "old.json").read_text()),
                json.loads((Path(tmp) / "new.json").read_text()))


if __name__ == "__main__":
    main()
