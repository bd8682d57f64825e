"""Down-sampled negatives: the weighted audit keeps the gate's promise, the unweighted one
cannot (the sample is not the population).

A population ``x ~ N(0, I_2)``, ``P(y = 1 | x) = sigmoid(z)`` with ``z = -2.2 + x_1 +
0.5 x_2`` (about 15 % events); the model predicts ``p = sigmoid(z)``, calibrated on the
population. The evaluation sample keeps every positive and each negative with probability
``r = 0.1`` (``--negative-rate 0.1``). Under this null the default gate of the weighted
audit (``negative_rate=0.1``) should FAIL at most ``alpha`` of the time; the unweighted
audit of the same sample should FAIL (its labels are not Bernoulli(p)). Power: the model
``p = sigmoid(0.1 + 1.1 z)`` (over-predicts and is over-confident on the population) on
the same design.

Usage: python validation/weights_negative_sampling.py [--reps 600] [--power-reps 200]
Output: validation/results/weights_negative_sampling.txt
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import calaudit  # noqa: E402
from calaudit import CalibrationData  # noqa: E402

RATE = 0.1
ALPHA = 0.05
POPULATION = 10_000
RESAMPLES = 199


def sample(rng: np.random.Generator, miscalibrated: bool) -> tuple[np.ndarray, np.ndarray]:
    x = rng.normal(size=(POPULATION, 2))
    z = -2.2 + x[:, 0] + 0.5 * x[:, 1]
    y = (rng.random(POPULATION) < 1 / (1 + np.exp(-z))).astype(np.int64)
    p = 1 / (1 + np.exp(-(0.1 + 1.1 * z if miscalibrated else z)))
    keep = (y == 1) | (rng.random(POPULATION) < RATE)
    return y[keep], p[keep]


def verdict(y: np.ndarray, p: np.ndarray, weighted: bool, seed: int) -> tuple[str, bool]:
    """The audit's verdict and whether its ``ece_consistency`` test rejects at ALPHA."""
    data = CalibrationData.from_arrays(y, p, negative_rate=RATE if weighted else None)
    config = calaudit.AuditConfig(n_resamples=RESAMPLES, random_state=seed, alpha=ALPHA)
    result = calaudit.run_audit(data, config)
    return (str(result.verdict.value),
            bool(result.test("ece_consistency").p_value <= ALPHA))


def rate_line(label: str, fails: int, reps: int, word: str = "FAIL") -> str:
    low, high = stats.binomtest(fails, reps).proportion_ci(0.95, method="exact")
    return (f"{label:<44} {word:<6} {fails:>4}/{reps:<4} = {fails / reps:.3f}  "
            f"95% Clopper-Pearson [{low:.3f}, {high:.3f}]")


def run(reps: int, power_reps: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    counts = dict.fromkeys(("null_weighted", "null_unweighted", "alt_weighted",
                            "alt_unweighted", "null_ece", "alt_ece"), 0)
    sizes = []
    for rep in range(reps):
        y, p = sample(rng, miscalibrated=False)
        sizes.append(y.size)
        gate, ece = verdict(y, p, True, rep)
        counts["null_weighted"] += gate == "FAIL"
        counts["null_ece"] += ece
        if rep < power_reps:
            counts["null_unweighted"] += verdict(y, p, False, rep)[0] == "FAIL"
    for rep in range(power_reps):
        y, p = sample(rng, miscalibrated=True)
        gate, ece = verdict(y, p, True, rep)
        counts["alt_weighted"] += gate == "FAIL"
        counts["alt_ece"] += ece
        counts["alt_unweighted"] += verdict(y, p, False, rep)[0] == "FAIL"
    return [
        f"population {POPULATION} rows, negatives kept at r = {RATE}; sample rows: "
        f"median {int(np.median(sizes))} (min {min(sizes)}, max {max(sizes)}); "
        f"default gate, alpha = {ALPHA}, {RESAMPLES} label redraws, seed {seed}",
        "",
        "null: the model is calibrated on the population",
        rate_line("  weighted audit (--negative-rate 0.1)", counts["null_weighted"], reps),
        rate_line("  unweighted audit of the same samples", counts["null_unweighted"],
                  power_reps),
        rate_line("  its ece_consistency test, p <= alpha", counts["null_ece"], reps,
                  "reject"),
        "power: p = sigmoid(0.1 + 1.1 z) (miscalibrated on the population)",
        rate_line("  weighted audit (--negative-rate 0.1)", counts["alt_weighted"],
                  power_reps),
        rate_line("  unweighted audit", counts["alt_unweighted"], power_reps),
        rate_line("  its ece_consistency test, p <= alpha", counts["alt_ece"], power_reps,
                  "reject"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=600)
    parser.add_argument("--power-reps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=20251128)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"
                                             / "weights_negative_sampling.txt"))
    args = parser.parse_args()
    started = time.perf_counter()
    lines = run(args.reps, args.power_reps, args.seed)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent, check=False).stdout.strip()
    lines.append(f"\nruntime {time.perf_counter() - started:.0f} s, calaudit at commit "
                 f"{commit or 'unknown'}")
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
