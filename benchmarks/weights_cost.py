"""Cost of weights: each stage of the default battery, unweighted and weighted, side by side.

Data: ``n`` binary rows, ``p ~ U(0.02, 0.98)``, labels drawn from ``p``; weights: frequency
weights ``1 + Poisson(1)`` and, separately, negatives kept at rate 0.1 (``negative_rate``).
Each stage runs on the same data and seed (``stage.run``, wall seconds, threads of this
process; with ``--repeats R`` the three audits' stages run in R interleaved rounds and each
keeps its smallest time); the ``total`` row sums the stages and the ``audit`` row is the
whole ``run_audit`` (at 10^6 rows both SKCE stages take the random-feature path).

Usage: python benchmarks/weights_cost.py [n] [--resamples 1000] [--repeats 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import calaudit  # noqa: E402
from calaudit import CalibrationData  # noqa: E402
from calaudit.audit.battery import stages  # noqa: E402
from calaudit.numerics.random import stream  # noqa: E402


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def stage_times(data: CalibrationData, config: calaudit.AuditConfig) -> dict[str, float]:
    out = {}
    for stage in stages():
        out[stage.name] = timed(lambda s=stage: s.run(data, config, stream(config.seed, s.name)))
    return out


def best_times(runs: dict[str, CalibrationData], config: calaudit.AuditConfig,
               repeats: int) -> dict[str, dict[str, float]]:
    """Each stage's smallest time over ``repeats`` rounds (the three audits interleaved in
    every round, so a change of the machine's load hits them alike), and one whole audit
    each."""
    best: dict[str, dict[str, float]] = {name: {} for name in runs}
    for _ in range(repeats):
        for name, data in runs.items():
            for stage, seconds in stage_times(data, config).items():
                best[name][stage] = min(seconds, best[name].get(stage, float("inf")))
    for name, data in runs.items():
        best[name]["audit"] = timed(lambda d=data: calaudit.run_audit(d, config))
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("n", nargs="?", type=float, default=1e6)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--out", default=None)
    parser.add_argument("--repeats", type=int, default=1,
                        help="rounds of the stages; each stage's smallest time is kept")
    args = parser.parse_args()
    n = int(args.n)
    rng = np.random.default_rng(0)
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.random(n) < p).astype(np.int64)
    config = calaudit.AuditConfig(n_resamples=args.resamples, random_state=1)
    runs = {
        "unweighted": CalibrationData.from_arrays(y, p),
        "frequency": CalibrationData.from_arrays(y, p, sample_weight=1 + rng.poisson(1.0, n)),
        "negative_rate": CalibrationData.from_arrays(y, p, negative_rate=0.1),
    }
    load = os.getloadavg()[0]
    times = best_times(runs, config, args.repeats)
    common = [s.name for s in stages()]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent, check=False).stdout.strip()
    lines = [f"n = {n}, {args.resamples} resamples, wall seconds (threads of this process; "
             f"stages: the smallest of {args.repeats} interleaved rounds), "
             f"commit {commit or 'unknown'}, load {load:.1f} -> {os.getloadavg()[0]:.1f} "
             f"({os.cpu_count()} cores)",
             f"{'stage':<20}" + "".join(f"{name:>15}" for name in runs)
             + "".join(f"{'x ' + name:>17}" for name in list(runs)[1:])]
    rows = [*common, "audit"]
    for row in rows:
        base = times["unweighted"][row]
        line = f"{row:<20}" + "".join(f"{times[name][row]:>15.2f}" for name in runs)
        line += "".join(f"{times[name][row] / max(base, 1e-9):>17.2f}" for name in list(runs)[1:])
        lines.append(line)
    totals = {name: sum(times[name][s] for s in common) for name in runs}
    lines.append(f"{'total':<20}" + "".join(f"{totals[name]:>15.2f}" for name in runs)
                 + "".join(f"{totals[name] / totals['unweighted']:>17.2f}"
                           for name in list(runs)[1:]))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
