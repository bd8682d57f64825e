"""``method = "auto"``'s estimate of the local stage's exact path against the measured time.

For each size the local stage runs on the exact path (``--method exact``) on binary data
with a 4-level and two numeric covariates; the script prints the estimate that ``auto``
compares with ``exact_budget_seconds`` (``calaudit.inference.method.exact_seconds`` with
``LOCAL_STAGE_SECONDS``) beside the stage's CPU and wall seconds. The estimate should not be
below the CPU seconds: ``auto`` must not choose an exact path it underestimates.

    python benchmarks/auto_estimate.py > benchmarks/results/auto_estimate.txt
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
import pandas as pd

import calaudit
from calaudit.audit.config import AuditConfig, LocalConfig
from calaudit.audit.local_calibration import LocalCalibrationStage
from calaudit.audit.runner import run_audit
from calaudit.inference.method import LOCAL_STAGE_SECONDS, exact_seconds

SIZES = ((5_000, 199), (5_000, 500), (15_000, 199), (15_000, 500), (30_000, 199),
         (30_000, 500))


def data(n: int) -> calaudit.CalibrationData:
    rng = np.random.default_rng(n)
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.random(n) < p).astype(int)
    frame = pd.DataFrame({"g": rng.integers(0, 4, n).astype(str), "x1": rng.normal(size=n),
                          "x2": rng.normal(size=n)})
    return calaudit.CalibrationData.from_arrays(y, p, covariates=frame)


def main() -> None:
    sizes = SIZES if len(sys.argv) < 2 else tuple(
        tuple(int(v) for v in item.split(":")) for item in sys.argv[1:])
    print(f"# cpus {os.cpu_count()}; estimate = n^2 (B / 5e10 + {LOCAL_STAGE_SECONDS:g})")
    print(f"{'n':>7} {'B':>5} {'estimate s':>11} {'cpu s':>8} {'wall s':>8} {'load':>6}")
    for n, resamples in sizes:
        config = AuditConfig(method="exact", local=LocalConfig(n_resamples=resamples))
        audit_data = data(n)
        load = os.getloadavg()[0]
        wall, cpu = time.perf_counter(), time.process_time()
        run_audit(audit_data, config, stages=(LocalCalibrationStage(),))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        estimate = exact_seconds(n, resamples, LOCAL_STAGE_SECONDS)
        print(f"{n:>7} {resamples:>5} {estimate:>11.1f} {cpu:>8.1f} {wall:>8.1f} {load:>6.2f}",
              flush=True)


if __name__ == "__main__":
    main()
