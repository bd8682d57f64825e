"""Benchmark: ``calaudit test`` on CIFAR-10 (densenet121, 10,000 x 10) at the defaults
(``--method auto``: the SKCE goes through random features, est. exact time 20 s >
``exact_budget_seconds``) and with ``--method exact``. Target: <= 8 s wall on a
quiet 2-core machine. Prints wall, CPU and peak RSS per run and the SKCE stage time.

Command: ``python benchmarks/scale_cifar10.py > benchmarks/results/scale_cifar10.txt``
Data: ``../shared/datasets/cifar10`` (skipped cleanly when absent).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_rows import report, timed_cli  # noqa: E402

DATA = Path("/work/shared/datasets/cifar10")


def main() -> int:
    if not (DATA / "labels.csv").exists():
        print("CIFAR-10 data not found; skipping")
        return 0
    p = np.loadtxt(DATA / "densenet121.csv", delimiter=",")
    y = np.loadtxt(DATA / "labels.csv").astype(int) - 1
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cifar.csv"
        frame = pd.DataFrame(p, columns=[f"p_{k}" for k in range(10)])
        frame.insert(0, "label", y)
        frame.to_csv(path, index=False)
        for extra in ([], ["--method", "exact"]):
            out = Path(tmp) / "r.json"
            run = timed_cli(["test", str(path), "--prob-cols", "p_*", "--json", str(out),
                             "--exit-zero", "--verbose", *extra], out)
            print(f"calaudit test CIFAR-10 densenet121 (10,000 x 10), args "
                  f"{' '.join(extra) or '(defaults)'}")
            report(run)
            print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
