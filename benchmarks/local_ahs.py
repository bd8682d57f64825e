"""The local test with 500 resamples on all 48,660 rows of ahs2019_homeownership.csv.

Command (saved output: benchmarks/results/local_ahs.txt):

    python benchmarks/local_ahs.py [extra CLI args, e.g. --method exact] > benchmarks/results/local_ahs.txt

Predictions: a logistic regression on the ten AHS features (StandardScaler + scikit-learn
LogisticRegression), cross-fitted with 2 folds so that every row has an out-of-fold
prediction. Covariates: HINCP (numeric) and BLACK (categorical), as in the paper.

Measured: the full ``calaudit test preds.csv --covariates HINCP,BLACK --categorical BLACK
--local-resamples 500 --json out.json`` in a child process (wall time, CPU time and peak
resident memory of the child, from ``getrusage(RUSAGE_CHILDREN)``), which includes reading
the CSV, the global battery, the KLCE consistency test, LCB, curves and the group table;
then, in this process, the time of the exact local stage's kernel passes (the LCB pass on
its estimation kernel; the consistency test's pass, which also gives the observed KLCE^2).
Targets: <= 60 s wall, <= 2 GB peak.
The machine is shared with other jobs: the load average is printed before and after.
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

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "validation"))
from _common import require_shared  # noqa: E402

FEATURES = ["BLACK", "HHSEX", "METRO", "HHGRAD", "HHMAR", "HHCITSHP", "HHAGE", "NUMPEOPLE",
            "HINCP", "DIVISION"]


def write_predictions(shared: Path, target: Path) -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    df = pd.read_csv(shared / "datasets" / "ahs2019_homeownership.csv", index_col=0)
    y = df["OWNER"].astype(int)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    p = cross_val_predict(model, df[FEATURES], y, cv=2, method="predict_proba")[:, 1]
    pd.DataFrame({"label": y, "prob": p, "HINCP": df["HINCP"],
                  "BLACK": df["BLACK"].astype(int)}).to_csv(target, index=False)


def run_cli(preds: Path, out: Path) -> tuple[float, float, float, int]:
    cmd = [sys.executable, "-m", "calaudit", "test", str(preds), "--covariates",
           "HINCP,BLACK", "--categorical", "BLACK", "--local-resamples", "500", "--json",
           str(out), "--exit-zero", *sys.argv[1:]]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        print(proc.stdout, proc.stderr)
    return wall, cpu, after.ru_maxrss / 1024, proc.returncode


def passes(preds: Path) -> None:
    """CPU and wall time of the exact local stage's kernel passes, as the CLI runs them."""
    from calaudit.audit.config import AuditConfig
    from calaudit.audit.local_calibration import STREAMS
    from calaudit.data.load import load
    from calaudit.local.kernel_tests import LocalTests
    from calaudit.local.lcb import top_label_residual
    from calaudit.local.lcb_estimation import LcbEstimation
    from calaudit.local.resampling import consistency_test

    data = load(preds, covariates="HINCP,BLACK", categorical="BLACK")
    streams = dict(zip(STREAMS, np.random.default_rng(0).spawn(len(STREAMS)), strict=True))
    t = time.perf_counter()
    audit = LocalTests(data, AuditConfig(method="exact"), streams)
    print(f"in-process: setup (encoding, median bandwidths) {time.perf_counter() - t:.1f} s")
    outcome, prediction = top_label_residual(data.y_true, data.y_proba)
    t, c = time.perf_counter(), time.process_time()
    LcbEstimation(audit).local_bias(outcome - prediction)
    print(f"in-process: LCB, bandwidths by CV on subsamples + the float64 pass K @ [r, 1] "
          f"(estimation kernel): wall {time.perf_counter() - t:.1f} s, "
          f"cpu {time.process_time() - c:.1f} s")
    t, c = time.perf_counter(), time.process_time()
    res = consistency_test(audit.gram, audit.r, audit.proba, streams["klce_consistency"], 500,
                           dtype=np.float32)
    print(f"in-process: klce_consistency, 500 resample columns + the observed residuals as "
          f"the lead column (float64 when most replicates would need the tie check, as "
          f"here; KLCE^2 = {res.statistic:.3e}, p = {res.p_value:.4f}): "
          f"wall {time.perf_counter() - t:.1f} s, cpu {time.process_time() - c:.1f} s")


def main() -> None:
    shared = require_shared()
    with tempfile.TemporaryDirectory() as tmp:
        preds, out = Path(tmp) / "ahs_preds.csv", Path(tmp) / "result.json"
        write_predictions(shared, preds)
        print(f"# load average at start {os.getloadavg()}, cpus {os.cpu_count()}; extra CLI "
              f"args: {' '.join(sys.argv[1:]) or '(none: --method auto)'}")
        wall, cpu, rss, code = run_cli(preds, out)
        result = json.loads(out.read_text())
        test = next(t for t in result["tests"] if t["id"] == "klce_consistency")
        print(f"rows {result['data']['n']}, klce_consistency: KLCE^2 = {test['statistic']:.3e}, "
              f"p = {test['p_value']:.4f} ({test['n_resamples']} resamples), exit code {code}")
        print(f"calaudit test (child process): wall {wall:.1f} s, cpu {cpu:.1f} s, "
              f"peak RSS {rss:.0f} MB (targets: 60 s, 2048 MB)")
        print(f"# load average after the CLI run {os.getloadavg()}")
        passes(preds)
        print(f"# load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
