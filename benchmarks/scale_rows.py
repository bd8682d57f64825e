"""Benchmark: ``calaudit test`` at 10^6 (or 10^7) binary rows with a numeric and a
categorical covariate, default battery, JSON + HTML report.

Targets (quiet 2-core machine): 10^6 rows <= 60 s wall and 2 GB peak RSS;
10^7 rows <= 10 min and 6 GB.

Command (from the repository root):

    python benchmarks/scale_rows.py 1e6 > benchmarks/results/scale_1e6.txt

Data (seeded, generated into a temporary directory): ``age ~ U(20, 80)``, ``region`` one of
four categories, ``p = sigmoid(-1 + 0.03 (age - 50) + N(0, 1))``, ``y ~ Bernoulli(p)`` (a
calibrated model). The CLI runs in a child process under ``/usr/bin/time -v`` (wall, CPU,
peak RSS); ``--verbose`` prints the per-stage times, which are copied here. The machine is
shared: the load average before and after is printed, and CPU time (user + system) is
the figure that does not depend on other jobs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def make_data(n: int, path: Path, seed: int = 20261122) -> None:
    rng = np.random.default_rng(seed)
    age = rng.uniform(20, 80, n)
    region = rng.choice(np.array(["north", "south", "east", "west"]), n)
    p = 1.0 / (1.0 + np.exp(-(-1.0 + 0.03 * (age - 50) + rng.normal(0, 1, n))))
    y = (rng.random(n) < p).astype(np.int8)
    pd.DataFrame({"label": y, "prob": p, "age": age, "region": region}).to_parquet(path)


def timed_cli(args: list[str], json_path: Path) -> dict:
    """Run ``calaudit`` with ``args`` under ``/usr/bin/time -v``; wall, CPU, peak RSS, the
    per-stage log lines and the JSON result."""
    cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "calaudit", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = os.getloadavg()[0]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    after = os.getloadavg()[0]
    err = proc.stderr

    def grab(pattern: str) -> str:
        found = re.search(pattern, err)
        return found.group(1) if found else "nan"

    import json

    return {"code": proc.returncode, "load": (before, after),
            "wall": grab(r"Elapsed \(wall clock\) time.*: (.*)"),
            "cpu": float(grab(r"User time \(seconds\): (.*)"))
            + float(grab(r"System time \(seconds\): (.*)")),
            "rss_mib": int(grab(r"Maximum resident set size \(kbytes\): (.*)")) / 1024,
            "stages": [line.strip() for line in (proc.stdout + err).splitlines()
                       if "stage " in line or "error" in line.lower()],
            "result": json.loads(json_path.read_text()) if json_path.exists() else None}


def report(run: dict) -> None:
    before, after = run["load"]
    print(f"exit code {run['code']}; load average {before:.2f} before, {after:.2f} after "
          f"(2 cores, shared)")
    print(f"wall {run['wall']}; cpu {run['cpu']:.1f} s; peak RSS {run['rss_mib']:.0f} MiB")
    for line in run["stages"]:
        print("  " + line)
    result = run["result"]
    if result is None:
        return
    for t in result["tests"]:
        comp = (t.get("params") or {}).get("computation")
        how = f"{comp['method']} (D = {comp.get('n_features')})" if comp else ""
        print(f"  {t['id']:<22} {t['status']:<12} p = {t.get('p_value')!s:<22} {how}")
    print(f"verdict {result['verdict']}")


def main() -> int:
    n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000
    extra = sys.argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "rows.parquet"
        make_data(n, data)
        out = Path(tmp) / "r.json"
        run = timed_cli(["test", str(data), "--covariates", "age,region", "--json", str(out),
                         "--html", str(Path(tmp) / "r.html"), "--exit-zero", "--verbose",
                         *extra], out)
        print(f"calaudit test, n = {n:,} binary rows, covariates age (numeric) + region "
              f"(4 categories), JSON + HTML, args {' '.join(extra) or '(defaults)'}")
        report(run)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
