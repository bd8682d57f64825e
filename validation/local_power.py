"""Power of the local calibration test as d and n grow (paper section 4, Figure 3 style).

Command (saved output: validation/results/local_power.txt):

    nice -n 10 python validation/local_power.py --reps 200 > validation/results/local_power.txt

Data: x ~ N(0, I_d), y ~ Bernoulli(sigmoid(sum x)); the model sigmoid(sum_{i<d} x_i)
ignores the last coordinate (calibrated on x_1..x_{d-1}, miscalibrated on x_d). The test
uses all d coordinates as covariates (one does not know which one is the problem), z-scored,
with calaudit's default kernels (median heuristic) and B = 199. Reported: rejection rate
(power) and type-II error = 1 - power at alpha = 0.05, for the consistency test (default)
and the paper's Algorithm 1 bootstrap.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import simulate

from calaudit.local.bandwidth import choose_bandwidth
from calaudit.local.kernel import product_gram
from calaudit.local.resampling import bootstrap_test, consistency_test


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--resamples", type=int, default=199)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    alpha = 0.05
    rng = np.random.default_rng(args.seed)
    print(f"# power at alpha={alpha}, reps={args.reps}, B={args.resamples}; "
          "model ignores x_d; covariates x_1..x_d")
    print(f"{'d':>2} {'n':>5} {'test':>12} {'power':>6} {'type II':>8}")
    started = time.perf_counter()
    for n in (500, 1000):
        for d in (1, 2, 4, 6, 8, 10):
            hits = {"consistency": 0, "bootstrap": 0}
            for _ in range(args.reps):
                x, p, y = simulate(n, d, rng, misspecified=True)
                z = (x - x.mean(0)) / x.std(0)
                blocks = [slice(i, i + 1) for i in range(d)]
                gram = product_gram(p, choose_bandwidth(p, None, rng).gamma, z,
                                    choose_bandwidth(z, None, rng, blocks=blocks).gamma)
                hits["consistency"] += consistency_test(gram, y - p, p, rng,
                                                        args.resamples).p_value <= alpha
                hits["bootstrap"] += bootstrap_test(gram, y - p, rng,
                                                    args.resamples).p_value <= alpha
            for test, k in hits.items():
                power = k / args.reps
                print(f"{d:>2} {n:>5} {test:>12} {power:6.3f} {1 - power:8.3f}", flush=True)
    print(f"# {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
