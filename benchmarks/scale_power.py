"""Exact vs random-feature local test at 20,000 rows: time and power side by side.

Two alternatives (binary, covariates ``age`` numeric and ``group`` categorical A/B/C with
shares 40/40/20 %; predictions ``p = sigmoid(-1 + 0.03 (age - 50) + N(0, 1))``):

* ``opposite``: the true event rate is ``p + s delta p (1 - p)`` with ``s = +1`` in group A
  (under-predicted), ``-1`` in B, 0 in C, ``delta = 0.12`` -- calibrated on average;
* ``small_group``: rows with ``age > 78.8`` (2 %) have true rate ``p + 0.08`` (clipped),
  the rest are calibrated.

Each data set runs the KLCE consistency test twice on the same kernel (median-heuristic
bandwidths as the stage): ``exact`` (pairwise engine: the float64 statistic pass, then the
resamples in float32 as the stage's default ``resample_dtype``) and ``features`` (``D`` by
the size rule, float64). ``B`` resamples, alpha = 0.05. Printed: rejections, power and mean
seconds per test (CPU time of this process; the machine is shared). Also computed: the
features test with ``D`` chosen so that its time matches the exact test's (``--equal``).

Command: ``nice -n 10 python benchmarks/scale_power.py --datasets 25 > benchmarks/results/scale_power.txt``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from calaudit.data.dataset import CalibrationData
from calaudit.inference.feature_tests import feature_consistency_test
from calaudit.local.bandwidth import choose_bandwidth
from calaudit.local.encoding import encode_covariates
from calaudit.local.features import product_features
from calaudit.local.kernel import product_gram
from calaudit.local.klce import klce2, prediction_features, residuals
from calaudit.local.resampling import consistency_test
from calaudit.numerics.features import default_n_features


def make(rng, n, kind):
    age = rng.uniform(20, 80, n)
    group = rng.choice(3, n, p=[0.4, 0.4, 0.2])
    p = 1 / (1 + np.exp(-(-1 + 0.03 * (age - 50) + rng.normal(0, 1, n))))
    if kind == "opposite":
        sign = np.select([group == 0, group == 1], [1.0, -1.0], 0.0)
        truth = p + sign * 0.12 * p * (1 - p)
    else:
        truth = np.where(age > 78.8, np.clip(p + 0.08, 0, 1), p)
    y = (rng.random(n) < truth).astype(int)
    return CalibrationData.from_arrays(y, p, covariates={"age": age, "group": group},
                                       categorical=["group"])


def cpu(fn):
    start = time.process_time()
    value = fn()
    return value, time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--datasets", type=int, default=25)
    parser.add_argument("--resamples", type=int, default=500)
    parser.add_argument("--kinds", default="opposite,small_group")
    parser.add_argument("--equal", type=int, default=0,
                        help="also run features with this D (0: skip)")
    args = parser.parse_args()
    n, b = args.n, args.resamples
    d_rule = default_n_features(n, b)
    print(f"KLCE consistency test, n = {n:,}, B = {b}, alpha = 0.05, {args.datasets} data "
          f"sets per alternative; features D = {d_rule} (size rule)"
          + (f" and D = {args.equal}" if args.equal else ""), flush=True)
    for kind in args.kinds.split(","):
        rng = np.random.default_rng(7 if kind == "opposite" else 8)
        hits = {"exact": 0, "features": 0, "equal": 0}
        secs = {"exact": 0.0, "features": 0.0, "equal": 0.0}
        for _ in range(args.datasets):
            data = make(rng, n, kind)
            x = prediction_features(data.y_proba)
            enc = encode_covariates(data.covariates, standardize=True)
            pb = choose_bandwidth(x, None, rng, 2000)
            cb = choose_bandwidth(enc.features, None, rng, 2000, enc.blocks)
            gram = product_gram(x, pb.gamma, enc.features, cb.gamma)
            r = residuals(data.y_true, data.y_proba)
            proba = data.y_proba[:, 1].copy()
            seed = int(rng.integers(2**62))

            def exact():
                stat = klce2(gram, r)
                return consistency_test(gram, r, proba, np.random.default_rng(seed), b,
                                        statistic=stat, dtype=np.float32).p_value

            def features(d):
                ff = product_features(gram.features, d, seed)
                return feature_consistency_test(ff, gram.features, r, proba,
                                                np.random.default_rng(seed), b).p_value

            for name, fn in (("exact", exact), ("features", lambda: features(d_rule)),
                             ("equal", lambda: features(args.equal))):
                if name == "equal" and not args.equal:
                    continue
                p, s = cpu(fn)
                hits[name] += p <= 0.05
                secs[name] += s
        for name in hits:
            if name == "equal" and not args.equal:
                continue
            label = {"exact": "exact", "features": f"features D={d_rule}",
                     "equal": f"features D={args.equal}"}[name]
            print(f"{kind:<12} {label:<18} power {hits[name]:>3}/{args.datasets} = "
                  f"{hits[name] / args.datasets:.2f}; cpu {secs[name] / args.datasets:.2f} s "
                  f"per test", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
