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

``--ece-only``: the weighted ``ece_consistency`` test alone (the audit's defaults: 15
uniform bins, 199 label redraws) on the same designs, its rejection rate at ``alpha``
(``--reps`` null and ``--power-reps`` miscalibrated samples; the test redraws every row,
so this checks its row redraws' level directly, in seconds instead of the audits' half
hour).

Usage: python validation/weights_negative_sampling.py [--reps 600] [--power-reps 200]
       [--ece-only]
Output: validation/results/weights_negative_sampling.txt (``--ece-only``:
validation/results/weights_negative_sampling_ece.txt)
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
from calaudit.data.weights import SampleWeights  # noqa: E402
from calaudit.inference.consistency import ece_consistency  # noqa: E402

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


def verdict(y: np.ndarray, p: np.ndarray, weighted: bool, seed: int) -> str:
    data = CalibrationData.from_arrays(y, p, negative_rate=RATE if weighted else None)
    config = calaudit.AuditConfig(n_resamples=RESAMPLES, random_state=seed, alpha=ALPHA)
    return str(calaudit.run_audit(data, config).verdict.value)


def rate_line(label: str, fails: int, reps: int, word: str = "FAIL") -> str:
    low, high = stats.binomtest(fails, reps).proportion_ci(0.95, method="exact")
    return (f"{label:<44} {word} {fails:>4}/{reps:<4} = {fails / reps:.3f}  "
            f"95% Clopper-Pearson [{low:.3f}, {high:.3f}]")


def run(reps: int, power_reps: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    counts = dict.fromkeys(("null_weighted", "null_unweighted", "alt_weighted",
                            "alt_unweighted"), 0)
    sizes = []
    for rep in range(reps):
        y, p = sample(rng, miscalibrated=False)
        sizes.append(y.size)
        counts["null_weighted"] += verdict(y, p, True, rep) == "FAIL"
        if rep < power_reps:
            counts["null_unweighted"] += verdict(y, p, False, rep) == "FAIL"
    for rep in range(power_reps):
        y, p = sample(rng, miscalibrated=True)
        counts["alt_weighted"] += verdict(y, p, True, rep) == "FAIL"
        counts["alt_unweighted"] += verdict(y, p, False, rep) == "FAIL"
    return [
        f"population {POPULATION} rows, negatives kept at r = {RATE}; sample rows: "
        f"median {int(np.median(sizes))} (min {min(sizes)}, max {max(sizes)}); "
        f"default gate, alpha = {ALPHA}, {RESAMPLES} label redraws, seed {seed}",
        "",
        "null: the model is calibrated on the population",
        rate_line("  weighted audit (--negative-rate 0.1)", counts["null_weighted"], reps),
        rate_line("  unweighted audit of the same samples", counts["null_unweighted"],
                  power_reps),
        "power: p = sigmoid(0.1 + 1.1 z) (miscalibrated on the population)",
        rate_line("  weighted audit (--negative-rate 0.1)", counts["alt_weighted"],
                  power_reps),
        rate_line("  unweighted audit", counts["alt_unweighted"], power_reps),
    ]


def ece_rejections(reps: int, power_reps: int, seed: int) -> list[str]:
    """Rejection rates of the weighted ``ece_consistency`` test alone."""
    rng = np.random.default_rng(seed)
    counts = {}
    for label, miscalibrated, n_sets in (("null", False, reps), ("power", True, power_reps)):
        counts[label] = 0
        for _ in range(n_sets):
            y, p = sample(rng, miscalibrated)
            weights = SampleWeights(np.ones(y.size), negative_rate=np.full(y.size, RATE))
            test = ece_consistency(y, np.column_stack([1 - p, p]), weights=weights,
                                   n_resamples=RESAMPLES, alpha=ALPHA, rng=rng)
            counts[label] += test.p_value <= ALPHA
    return [f"population {POPULATION} rows, negatives kept at r = {RATE}; the weighted "
            f"ece_consistency test alone (15 uniform bins, {RESAMPLES} label redraws), "
            f"alpha = {ALPHA}, seed {seed}", "",
            rate_line("null: calibrated on the population", counts["null"], reps, "reject"),
            rate_line("power: p = sigmoid(0.1 + 1.1 z)", counts["power"], power_reps,
                      "reject")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=600)
    parser.add_argument("--power-reps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=20251128)
    parser.add_argument("--ece-only", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    out = args.out or str(Path(__file__).parent / "results" / (
        "weights_negative_sampling" + ("_ece" if args.ece_only else "") + ".txt"))
    started = time.perf_counter()
    lines = (ece_rejections if args.ece_only else run)(args.reps, args.power_reps, args.seed)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent, check=False).stdout.strip()
    lines.append(f"\nruntime {time.perf_counter() - started:.0f} s, calaudit at commit "
                 f"{commit or 'unknown'}")
    text = "\n".join(lines) + "\n"
    Path(out).write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
