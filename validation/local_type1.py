"""Type-I error of the local calibration tests (paper section 4 / appendix A.2, Figure 5).

Command (saved output: validation/results/local_type1.txt):

    nice -n 10 python validation/local_type1.py --reps 500 > validation/results/local_type1.txt

Null model: x ~ N(0, I_d), y ~ Bernoulli(sigmoid(sum x)), predictions = the Bayes
classifier sigmoid(sum x), covariates X = x (z-scored as in calaudit). For every d, n and
kernel setting, ``reps`` independent data sets are tested at alpha = 0.05 with
B = 199 resamples (so the consistency test has exact size 10/200 = 0.05). A valid test's
rejection rate should fall in the central 95% range of Binomial(reps, 0.05) / reps
(column ``ok``). Kernel settings: ``median`` (calaudit's default median heuristic),
``narrow`` (prediction bandwidth 0.05, covariate bandwidth 0.5) and ``wide`` (0.3 and 3).
The paper's Algorithm 1 (``bootstrap``) and KiTE's centred permutation null
(``permutation``, KiTE kernels: width 0.1, gamma = 1/d on the raw covariates) are run on
the same data sets for comparison.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import binomial_interval, simulate

from calaudit.local.bandwidth import choose_bandwidth
from calaudit.local.kernel import product_gram
from calaudit.local.resampling import bootstrap_test, consistency_test, permutation_test

SETTINGS = {"median": (None, None), "narrow": (0.05, 0.5), "wide": (0.3, 3.0)}


def run_one(x, p, y, setting, rng, b):
    prob_s, cov_s = SETTINGS[setting]
    z = (x - x.mean(0)) / x.std(0)
    blocks = [slice(i, i + 1) for i in range(x.shape[1])]
    bw_p = choose_bandwidth(p, prob_s, rng)
    bw_x = choose_bandwidth(z, cov_s, rng, blocks=blocks)
    gram = product_gram(p, bw_p.gamma, z, bw_x.gamma)
    out = {"consistency": consistency_test(gram, y - p, p, rng, b).p_value}
    if setting == "median":
        out["bootstrap"] = bootstrap_test(gram, y - p, rng, b).p_value
        kite = product_gram(p, 100.0, x, 1.0 / x.shape[1])
        out["permutation"] = permutation_test(kite, y - p, rng, b).p_value
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--resamples", type=int, default=199)
    parser.add_argument("--seed", type=int, default=20261121)
    args = parser.parse_args()
    alpha = 0.05
    low, high = binomial_interval(args.reps, alpha)
    print(f"# type-I error at alpha={alpha}, reps={args.reps}, B={args.resamples}; "
          f"acceptance range of the rejection rate: [{low:.3f}, {high:.3f}]")
    print(f"{'d':>2} {'n':>5} {'kernels':>8} {'test':>12} {'rate':>6} {'ok':>3}")
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    for d in (1, 2, 4):
        for n in (250, 500, 1000):
            for setting in SETTINGS:
                counts: dict[str, int] = {}
                for _ in range(args.reps):
                    x, p, y = simulate(n, d, rng)
                    for test, pv in run_one(x, p, y, setting, rng, args.resamples).items():
                        counts[test] = counts.get(test, 0) + (pv <= alpha)
                for test, k in counts.items():
                    rate = k / args.reps
                    ok = "yes" if low <= rate <= high else "NO"
                    print(f"{d:>2} {n:>5} {setting:>8} {test:>12} {rate:6.3f} {ok:>3}",
                          flush=True)
    print(f"# {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
