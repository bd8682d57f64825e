"""Wall time, CPU time and peak memory of the squared-error pipeline on CIFAR-10.

    nice -n 10 python benchmarks/squared_cifar10.py [--network densenet121] [--target cce2]
        [--estimators bin,kde,kkr,ukkr] [--rows 10000] [--per-estimator]

Default: the full CCE_2 pipeline of Gruber & Bach (80/20 split, 5-fold cross-validation
over the appendix-B grids, ensemble estimate) on one network of
``../shared/datasets/cifar10`` (n = 10,000, m = 10), all four estimators; target <= 3
minutes on the 2-core machine. Prints the load average too: the machine is shared, and
wall time under load overstates the cost (CPU time is the steadier figure). Peak memory:
``tracemalloc`` (numpy buffers) and the process's maximum resident set size. Skips
cleanly when the shared datasets are absent.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets" / "cifar10"
for candidate in (DATA, Path("/work/shared/datasets/cifar10")):
    if candidate.is_dir():
        DATA = candidate
        break


def load(network: str, rows: int | None):
    probs = np.loadtxt(DATA / f"{network}.csv", delimiter=",")
    labels = np.loadtxt(DATA / "labels.csv", delimiter=",").astype(np.int64) - 1
    probs = probs / probs.sum(axis=1, keepdims=True)  # CSV rounding: rows sum to 1 +- 1e-7
    return (labels[:rows], probs[:rows]) if rows else (labels, probs)


def measure(y, p, target: str, estimators: tuple[str, ...]) -> dict:
    from calaudit.squared import estimate_squared_error

    tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    result = estimate_squared_error(y, p, target, estimators=estimators, rng=0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"result": result, "wall": wall, "cpu": cpu, "peak_mb": peak / 2**20}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="densenet121")
    parser.add_argument("--target", default="cce2", choices=("tce2", "cwce2", "cce2"))
    parser.add_argument("--estimators", default="bin,kde,kkr,ukkr")
    parser.add_argument("--rows", type=int, default=None, help="first ROWS rows only")
    parser.add_argument("--per-estimator", action="store_true",
                        help="also time each estimator alone")
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"skipped: {DATA} not found (the shared datasets are not available)")
        return 0
    y, p = load(args.network, args.rows)
    estimators = tuple(e.strip() for e in args.estimators.split(",") if e.strip())
    print(f"{args.network}: n = {y.size}, m = {p.shape[1]}, target {args.target}, "
          f"estimators {','.join(estimators)}; load average before: "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    runs = [("all", estimators)]
    if args.per_estimator:
        runs += [(e, (e,)) for e in estimators]
    for label, chosen in runs:
        m = measure(y, p, args.target, chosen)
        r = m["result"]
        print(f"[{label}] wall {m['wall']:.1f} s, cpu {m['cpu']:.1f} s, "
              f"tracemalloc peak {m['peak_mb']:.0f} MB; chosen {r.estimator} "
              f"{r.chosen.candidate.parameter}={r.chosen.candidate.value:.3g}, "
              f"estimate {r.estimate:.6f}, risk {r.risk:.6f}")
        for fitted in r.per_estimator:
            print(f"    {fitted.estimator:5s} risk {fitted.candidate.risk:.7f} "
                  f"+- {fitted.candidate.risk_se:.7f}  estimate {fitted.estimate:.6f}")
        if "kkr" in r.diagnostics or "ukkr" in r.diagnostics:
            folds = r.diagnostics.get("kkr") or r.diagnostics["ukkr"]
            print(f"    kernel spectrum ranks per fold: {[f['rank'] for f in folds]}")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"max resident set size {rss:.0f} MB; load average after: "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
