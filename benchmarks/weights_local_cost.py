"""Cost of weights in the local stage: unweighted and weighted, side by side.

Data: ``n`` binary rows, ``p ~ U(0.02, 0.98)``, covariates ``age ~ U(20, 80)`` (numeric)
and ``race`` (4 levels), labels drawn from ``p`` (plus 0.05 in one level); weights:
frequency weights ``1 + Poisson(1)`` and, separately, negatives kept at rate 0.1
(``negative_rate``). The local stage (tests ``local_consistency``, 1000 resamples by
default, and the diagnostics: LCB, group table, attribution) runs on the same data and
seed, the three cases interleaved in each of ``--repeats`` rounds, each keeping its
smallest CPU seconds (all threads of the process) and wall seconds. ``params.computation``
of the local test says which path ran (at these sizes: random features, by the
``method = auto`` rule).

Usage: python benchmarks/weights_local_cost.py [n] [--resamples 1000] [--repeats 1]
       [--out FILE]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import calaudit  # noqa: E402
from calaudit import CalibrationData  # noqa: E402
from calaudit.audit.local_calibration import LocalCalibrationStage  # noqa: E402
from calaudit.audit.sections.local import LocalConfig  # noqa: E402
from calaudit.numerics.random import stream  # noqa: E402


def cases(n: int) -> dict[str, CalibrationData]:
    rng = np.random.default_rng(0)
    age, race = rng.uniform(20, 80, n), rng.choice(list("ABCD"), n)
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.random(n) < np.clip(p + 0.05 * (race == "B"), 0, 1)).astype(np.int64)
    cov = {"age": age, "race": race}
    return {"unweighted": CalibrationData.from_arrays(y, p, covariates=cov),
            "frequency 1+Poisson(1)": CalibrationData.from_arrays(
                y, p, covariates=cov, sample_weight=1 + rng.poisson(1.0, n)),
            "negatives kept at 0.1": CalibrationData.from_arrays(y, p, covariates=cov,
                                                                 negative_rate=0.1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("n", nargs="?", type=float, default=1e5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    n = int(args.n)
    config = calaudit.AuditConfig(random_state=1, local=LocalConfig(
        n_resamples=args.resamples))
    stage = LocalCalibrationStage()
    runs = cases(n)
    best = {name: {"cpu": np.inf, "wall": np.inf} for name in runs}
    paths = {}
    for _ in range(args.repeats):
        for name, data in runs.items():
            cpu, wall = time.process_time(), time.perf_counter()
            out = stage.run(data, config, stream(config.seed, stage.name))
            best[name]["cpu"] = min(best[name]["cpu"], time.process_time() - cpu)
            best[name]["wall"] = min(best[name]["wall"], time.perf_counter() - wall)
            test = {t.id: t for t in out.tests}["local_consistency"]
            paths[name] = (test.params["computation"]["method"], test.p_value)
    base = best["unweighted"]["cpu"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent, check=False).stdout.strip()
    lines = [f"local stage (local_consistency, {args.resamples} resamples, diagnostics on), "
             f"{n} rows, covariates age (numeric) + race (4 levels); best of "
             f"{args.repeats}; calaudit at commit {commit or 'unknown'}", "",
             f"{'case':<26}{'CPU s':>9}{'wall s':>9}{'CPU / unweighted':>18}  path, p-value"]
    for name, times in best.items():
        method, p_value = paths[name]
        lines.append(f"{name:<26}{times['cpu']:>9.2f}{times['wall']:>9.2f}"
                     f"{times['cpu'] / base:>18.2f}  {method}, {p_value:.4g}")
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
