"""Coverage of the group table's bias intervals at the normal switch.

A group of ``n`` rows gets the percentile bootstrap interval of ``mean(y - p)`` below
``NORMAL_MIN_ROWS`` (10,000) rows and the normal interval ``mean -/+ z sd / sqrt(n)`` from
there on (:mod:`calaudit.local.groups`). Here, on calibrated groups (``p ~ Beta(2, 2 (1 -
m) / m)`` with mean ``m``, ``y ~ Bernoulli(p)``, so the bias ``E(y - p)`` is 0), both
intervals are computed on the same data sets at ``n = NORMAL_MIN_ROWS`` (the smallest
group that gets the normal one), for a common event rate and rare ones, at level 0.95 and
at 0.999 (the Bonferroni level of a table of 50 groups), with ``B = 1000`` resamples as in
the audit; and the normal one alone at ``n = 10^5`` with 50 expected events. Printed: the
share of intervals that contain 0 with a 99 % Clopper-Pearson interval. The rule holds
if the normal interval covers as well as the bootstrap where both run.

Command: ``nice -n 10 python validation/group_interval_coverage.py >
validation/results/group_interval_coverage.txt``
"""

from __future__ import annotations

import time

import numpy as np
from scipy import stats

from calaudit.local.groups import NORMAL_MIN_ROWS, normal_interval, resampled_means

LEVELS = (0.95, 0.999)
B = 1000


def clopper_pearson(k: int, n: int, level: float = 0.99) -> tuple[float, float]:
    a = (1 - level) / 2
    low = stats.beta.ppf(a, k, n - k + 1) if k > 0 else 0.0
    high = stats.beta.ppf(1 - a, k + 1, n - k) if k < n else 1.0
    return float(low), float(high)


def group(n: int, mean: float, rng: np.random.Generator) -> np.ndarray:
    p = rng.beta(2.0, 2.0 * (1.0 - mean) / mean, n)
    return (rng.random(n) < p) - p


def run(n: int, mean: float, reps: int, bootstrap: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    hits = {(m, lv): 0 for m in ("normal", "bootstrap") for lv in LEVELS}
    started = time.process_time()
    for _ in range(reps):
        d = group(n, mean, rng)
        means = resampled_means(d, rng, B) if bootstrap else None
        for lv in LEVELS:
            low, high = normal_interval(float(d.mean()), float(d.std(ddof=1)), d.size, lv)
            hits["normal", lv] += low <= 0 <= high
            if bootstrap:  # the percentile interval of bootstrap_mean_interval
                tail = (1.0 - lv) / 2.0
                low, high = np.quantile(means, [tail, 1.0 - tail])
                hits["bootstrap", lv] += low <= 0 <= high
    cpu = time.process_time() - started
    for method in ("normal", "bootstrap") if bootstrap else ("normal",):
        for lv in LEVELS:
            k = hits[method, lv]
            low, high = clopper_pearson(k, reps)
            print(f"n {n:>7,}  event rate {mean:<6}  {method:<9}  level {lv:<5}  "
                  f"coverage {k / reps:.4f}  99% CP [{low:.4f}, {high:.4f}]  ({reps} data sets)")
    print(f"  ({cpu:.0f} CPU-s)", flush=True)


def main() -> int:
    print(f"group bias intervals: normal switch at NORMAL_MIN_ROWS = {NORMAL_MIN_ROWS:,} rows; "
          f"B = {B} bootstrap resamples")
    for i, mean in enumerate((0.3, 0.02, 0.002)):
        run(NORMAL_MIN_ROWS, mean, 1000, True, 100 + i)
    run(100_000, 0.0005, 2000, False, 200)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
