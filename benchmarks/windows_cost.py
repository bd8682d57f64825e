"""Cost of calibration over time: ``calaudit test`` on 10^6 rows (binary, one categorical
covariate) without windows, with ``--time-col/--window`` cutting them into 30 windows, and
with the opt-in ``--window-battery`` (the audit's battery on each window's rows) too.

Prints one table: wall-clock seconds of each run (the median of ``--repeats`` runs, each a
fresh process) and the ratio to the audit without windows.

    python benchmarks/windows_cost.py [--rows 1000000] [--windows 30] [--repeats 1]
        [--no-battery]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special


def write_data(path: Path, rows: int, seed: int = 0) -> None:
    """Calibrated binary predictions, a covariate of four levels, one time per row over
    30 days in order."""
    rng = np.random.default_rng(seed)
    z = rng.normal(-1.0, 1.0, rows)
    frame = pd.DataFrame({
        "label": (rng.uniform(size=rows) < special.expit(z)).astype(np.int8),
        "prob": special.expit(z),
        "grp": np.array(list("ABCD"))[rng.integers(0, 4, rows)],
        "scored_at": pd.Timestamp("2026-01-01") + pd.to_timedelta(
            np.sort(rng.uniform(0, 30 * 86400, rows)), unit="s"),
    })
    frame.to_parquet(path, index=False)


def run(args: list[str], out: Path) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "calaudit", "test", *args, "--json", str(out),
                           "--exit-zero", "--quiet"], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"calaudit failed ({done.returncode}): {done.stderr.strip()}")
    return seconds, json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--windows", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-battery", action="store_true",
                        help="skip the run with --window-battery")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as folder:
        data = Path(folder) / "rows.parquet"
        write_data(data, opts.rows)
        base = [str(data), "--covariates", "grp"]
        window = f"{-(-opts.rows // opts.windows)}"
        windows = ["--time-col", "scored_at", "--window", window]
        plain, windowed, battery, result = [], [], [], {}
        for _ in range(opts.repeats):
            plain.append(run(base, Path(folder) / "plain.json")[0])
            seconds, result = run(base + windows, Path(folder) / "windowed.json")
            windowed.append(seconds)
            if not opts.no_battery:
                seconds, full = run(base + windows + ["--window-battery"],
                                    Path(folder) / "battery.json")
                assert all(w["battery"] for w in full["monitoring"]["windows"])
                battery.append(seconds)
    a, b = statistics.median(plain), statistics.median(windowed)
    count = len(result["monitoring"]["windows"])
    print(f"calaudit test, {opts.rows:,} rows, binary, covariate grp (4 levels); "
          f"{platform.machine()}, {os.cpu_count()} CPUs; median of {opts.repeats} run(s)")
    print()
    print("| run | windows | seconds | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| calaudit test | - | {a:.1f} | 1.00 |")
    print(f"| calaudit test --time-col scored_at --window {window} | {count} | {b:.1f} | "
          f"{b / a:.2f} |")
    if battery:
        c = statistics.median(battery)
        print(f"| calaudit test --time-col scored_at --window {window} --window-battery | "
              f"{count} | {c:.1f} | {c / a:.2f} |")
        print()
        print(f"Where one window's battery spends its time ({window} rows, in-process):")
        print()
        print("| stage | seconds |")
        print("|---|---:|")
        for name, seconds in stage_seconds(int(window)):
            print(f"| {name} | {seconds:.2f} |")


def stage_seconds(rows: int) -> list[tuple[str, float]]:
    """Seconds of each battery stage on ``rows`` rows of the same law (the first window's
    configuration)."""
    from calaudit import AuditConfig, CalibrationData
    from calaudit.audit.window_battery import battery_stages, window_config
    from calaudit.numerics.random import stream

    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as folder:
        path = Path(folder) / "rows.parquet"
        write_data(path, rows)
        frame = pd.read_parquet(path)
    data = CalibrationData.from_arrays(frame["label"], frame["prob"],
                                       covariates={"grp": frame["grp"]}, categorical=["grp"])
    config = window_config(AuditConfig(), 1)
    out = []
    for stage in battery_stages():
        started = time.perf_counter()
        stage.run(data, config, stream(config.seed, stage.name))
        out.append((stage.name, time.perf_counter() - started))
    return out


if __name__ == "__main__":
    main()
