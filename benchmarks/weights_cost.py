"""Cost of weights: each stage of the default battery, unweighted and weighted, side by side.

Data: ``n`` binary rows, ``p ~ U(0.02, 0.98)``, labels drawn from ``p``; weights: frequency
weights ``1 + Poisson(1)`` and, separately, negatives kept at rate 0.1 (``negative_rate``).
Each stage runs on the same data and seed (``stage.run``, wall seconds, threads of this
process; with ``--repeats R`` the three audits' stages run in R interleaved rounds and each
keeps its smallest time); the ``total`` row sums the stages and the ``audit`` row is the
whole ``run_audit`` (at 10^6 rows both SKCE stages take the random-feature path). With
``--stages a,b`` only those stages run (no ``audit`` row); ``--cpu`` adds the CPU seconds
of the process (all its threads) beside the wall seconds, for a machine shared with
other work.

Usage: python benchmarks/weights_cost.py [n] [--resamples 1000] [--repeats 1]
       [--stages skce] [--cpu] [--out FILE]
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

#: Which clock :func:`timed` reads: wall seconds, or the process's CPU seconds.
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def timed(function) -> dict[str, float]:
    started = {name: clock() for name, clock in CLOCKS.items()}
    function()
    return {name: clock() - started[name] for name, clock in CLOCKS.items()}


def stage_times(data: CalibrationData, config: calaudit.AuditConfig, chosen: set[str] | None
                ) -> dict[str, dict[str, float]]:
    out = {}
    for stage in stages():
        if chosen is None or stage.name in chosen:
            out[stage.name] = timed(lambda s=stage: s.run(data, config,
                                                          stream(config.seed, s.name)))
    return out


def best_times(runs: dict[str, CalibrationData], config: calaudit.AuditConfig,
               repeats: int, chosen: set[str] | None) -> dict[str, dict[str, dict]]:
    """Per clock, each stage's smallest time over ``repeats`` rounds (the three audits
    interleaved in every round, so a change of the machine's load hits them alike), and
    one whole audit each unless only ``chosen`` stages run."""
    best: dict[str, dict[str, dict]] = {c: {name: {} for name in runs} for c in CLOCKS}
    for _ in range(repeats):
        for name, data in runs.items():
            for stage, seconds in stage_times(data, config, chosen).items():
                for clock, value in seconds.items():
                    best[clock][name][stage] = min(value, best[clock][name].get(stage, 1e300))
    if chosen is None:
        for name, data in runs.items():
            for clock, value in timed(lambda d=data: calaudit.run_audit(d, config)).items():
                best[clock][name]["audit"] = value
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("n", nargs="?", type=float, default=1e6)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--out", default=None)
    parser.add_argument("--repeats", type=int, default=1,
                        help="rounds of the stages; each stage's smallest time is kept")
    parser.add_argument("--stages", default=None, help="comma-separated stages to time")
    parser.add_argument("--cpu", action="store_true", help="also the CPU seconds")
    args = parser.parse_args()
    chosen = None if args.stages is None else set(args.stages.split(","))
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
    times = best_times(runs, config, args.repeats, chosen)
    text = "".join(table(n, args, times[clock], chosen, clock, load)
                   for clock in (["wall", "cpu"] if args.cpu else ["wall"]))
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)


def table(n: int, args, times: dict[str, dict[str, float]], chosen: set[str] | None,
          clock: str, load: float) -> str:
    """The stages' times on ``clock`` side by side, with the weighted/unweighted ratios."""
    runs = list(times)
    common = [s.name for s in stages() if chosen is None or s.name in chosen]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent, check=False).stdout.strip()
    lines = [f"n = {n}, {args.resamples} resamples, {clock} seconds (threads of this process; "
             f"stages: the smallest of {args.repeats} interleaved rounds), "
             f"commit {commit or 'unknown'}, load {load:.1f} -> {os.getloadavg()[0]:.1f} "
             f"({os.cpu_count()} cores)",
             f"{'stage':<20}" + "".join(f"{name:>15}" for name in runs)
             + "".join(f"{'x ' + name:>17}" for name in list(runs)[1:])]
    rows = [*common, *(["audit"] if chosen is None else [])]
    for row in rows:
        base = times["unweighted"][row]
        line = f"{row:<20}" + "".join(f"{times[name][row]:>15.2f}" for name in runs)
        line += "".join(f"{times[name][row] / max(base, 1e-9):>17.2f}" for name in list(runs)[1:])
        lines.append(line)
    totals = {name: sum(times[name][s] for s in common) for name in runs}
    lines.append(f"{'total':<20}" + "".join(f"{totals[name]:>15.2f}" for name in runs)
                 + "".join(f"{totals[name] / totals['unweighted']:>17.2f}"
                           for name in list(runs)[1:]))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
