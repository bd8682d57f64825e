"""Cost of weights: each stage of the default battery, unweighted and weighted, side by side.

Data: ``n`` binary rows, ``p ~ U(0.02, 0.98)``, labels drawn from ``p``; weights: frequency
weights ``1 + Poisson(1)`` and, separately, negatives kept at rate 0.1 (``negative_rate``).
Each stage runs on the same data and seed (``stage.run``, wall seconds, threads of this
process, and their CPU seconds; with ``--repeats R`` the three audits' stages run in R
interleaved rounds and each keeps its smallest times); the ``total`` row sums the stages and
the ``audit`` row is the whole ``run_audit`` (at 10^6 rows both SKCE stages take the
random-feature path). ``--skip STAGE`` leaves a stage out and ``--stages A,B`` times only
those (either drops the whole-audit row). ``--covariates`` adds a numeric covariate
(``age ~ U(20, 80)``) and a categorical one (``race``, 4 levels, one of them 5 points
under-predicted), so the local stage runs too.

Usage: python benchmarks/weights_cost.py [n] [--resamples 1000] [--repeats 1] [--skip STAGE]
       [--stages A,B] [--covariates] [--out FILE]
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


def timed(function) -> tuple[float, float]:
    """Wall and CPU seconds (every thread of this process) of ``function()``."""
    started, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - started, time.process_time() - cpu


def stage_times(data: CalibrationData, config: calaudit.AuditConfig, skip: set[str]
                ) -> dict[str, tuple[float, float]]:
    out = {}
    for stage in stages():
        if stage.name not in skip:
            out[stage.name] = timed(lambda s=stage: s.run(data, config,
                                                          stream(config.seed, s.name)))
    return out


def best_times(runs: dict[str, CalibrationData], config: calaudit.AuditConfig,
               repeats: int, skip: set[str], audit: bool
               ) -> dict[str, dict[str, dict[str, float]]]:
    """Each stage's smallest wall and CPU times over ``repeats`` rounds (the three audits
    interleaved in every round, so a change of the machine's load hits them alike), and
    one whole audit each (``audit``)."""
    best: dict[str, dict[str, dict[str, float]]] = {
        clock: {name: {} for name in runs} for clock in ("wall", "cpu")}
    for _ in range(repeats):
        for name, data in runs.items():
            for stage, seconds in stage_times(data, config, skip).items():
                for clock, value in zip(("wall", "cpu"), seconds):
                    best[clock][name][stage] = min(value, best[clock][name].get(
                        stage, float("inf")))
    for name, data in runs.items():
        if audit:
            seconds = timed(lambda d=data: calaudit.run_audit(d, config))
            for clock, value in zip(("wall", "cpu"), seconds):
                best[clock][name]["audit"] = value
    return best


def table(times: dict[str, dict[str, float]], rows: list[str], common: list[str],
          clock: str) -> list[str]:
    """One table of ``times`` (audit -> row -> seconds) and the ratios to unweighted."""
    runs = list(times)
    lines = [f"{clock + ' seconds':<20}" + "".join(f"{name:>15}" for name in runs)
             + "".join(f"{'x ' + name:>17}" for name in runs[1:])]
    for row in rows:
        base = times["unweighted"][row]
        line = f"{row:<20}" + "".join(f"{times[name][row]:>15.2f}" for name in runs)
        line += "".join(f"{times[name][row] / max(base, 1e-9):>17.2f}" for name in runs[1:])
        lines.append(line)
    totals = {name: sum(times[name][s] for s in common) for name in runs}
    lines.append(f"{'total':<20}" + "".join(f"{totals[name]:>15.2f}" for name in runs)
                 + "".join(f"{totals[name] / totals['unweighted']:>17.2f}"
                           for name in runs[1:]))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("n", nargs="?", type=float, default=1e6)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--out", default=None)
    parser.add_argument("--repeats", type=int, default=1,
                        help="rounds of the stages; each stage's smallest time is kept")
    parser.add_argument("--skip", action="append", default=[], metavar="STAGE",
                        help="a stage left out (repeatable; then no whole-audit row)")
    parser.add_argument("--stages", default="",
                        help="comma-separated stages to time, the others left out")
    parser.add_argument("--covariates", action="store_true",
                        help="add the covariates age and race (the local stage runs)")
    args = parser.parse_args()
    n = int(args.n)
    rng = np.random.default_rng(0)
    p = rng.uniform(0.02, 0.98, n)
    extra = {}
    truth = p
    if args.covariates:
        race = rng.choice(np.array(list("ABCD")), n)
        extra = {"covariates": {"age": rng.uniform(20, 80, n), "race": race}}
        truth = np.clip(p + 0.05 * (race == "B"), 0.0, 1.0)
    y = (rng.random(n) < truth).astype(np.int64)
    config = calaudit.AuditConfig(n_resamples=args.resamples, random_state=1)
    runs = {
        "unweighted": CalibrationData.from_arrays(y, p, **extra),
        "frequency": CalibrationData.from_arrays(y, p, sample_weight=1 + rng.poisson(1.0, n),
                                                 **extra),
        "negative_rate": CalibrationData.from_arrays(y, p, negative_rate=0.1, **extra),
    }
    load = os.getloadavg()[0]
    skip = set(args.skip)
    if args.stages:
        chosen = {name.strip() for name in args.stages.split(",")}
        skip |= {s.name for s in stages() if s.name not in chosen}
    times = best_times(runs, config, args.repeats, skip, not skip)
    common = [s.name for s in stages() if s.name not in skip]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent, check=False).stdout.strip()
    lines = [f"n = {n}, {args.resamples} resamples, wall and CPU seconds (threads of this "
             f"process; stages: the smallest of {args.repeats} interleaved rounds), "
             f"commit {commit or 'unknown'}, load {load:.1f} -> {os.getloadavg()[0]:.1f} "
             f"({os.cpu_count()} cores)" + ("; covariates age, race" if args.covariates else "")
             + (f"; stages left out: {', '.join(sorted(skip))}"
                                            if skip else "")]
    rows = common + ([] if skip else ["audit"])
    for clock in ("wall", "cpu"):
        lines += table(times[clock], rows, common, clock) + [""]
    lines.pop()
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
