"""Benchmark: smooth ECE (``smece``) against relplot's ``smECE`` on binary data of growing
size, and the bootstrap interval's cost (``--ci``).

Command (from the repository root, with the ``bench`` extra installed):

    nice -n 10 python benchmarks/smece.py > benchmarks/results/smece.txt

Data: p ~ Beta(2, 5), y ~ Bernoulli(p^1.1), seed 0. Each call timed as the best of 3
(``time.perf_counter``) on a shared 2-core machine. ``|diff|`` is the absolute difference
of the two values (the test asserts <= 1e-6).
"""

from __future__ import annotations

import time

import numpy as np
import relplot

from calaudit.metrics.smooth_ece import smooth_ece_replicates, smooth_ece_scores
from calaudit.numerics.resampling import bootstrap_counts

REPEAT = 3


def best(fn):
    times, value = [], None
    for _ in range(REPEAT):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return value, min(times)


def main() -> None:
    rng = np.random.default_rng(0)
    print("# smooth ECE, binary, best of 3 (seconds)")
    print(f"{'n':>9} {'calaudit':>10} {'relplot':>10} {'|diff|':>10} {'s calaudit':>11} "
          f"{'s relplot':>10}")
    for n in (1_000, 10_000, 100_000, 1_000_000):
        p = rng.beta(2, 5, n)
        y = (rng.uniform(size=n) < p ** 1.1).astype(np.float64)
        ours, t_ours = best(lambda: smooth_ece_scores(p, y))
        theirs, t_theirs = best(lambda: relplot.smECE(p, y))
        print(f"{n:>9} {ours:>10.6f} {theirs:>10.6f} {abs(ours - theirs):>10.1e} "
              f"{t_ours:>11.4f} {t_theirs:>10.4f}")
    n, q = 10_000, 1000
    p = rng.beta(2, 5, n)
    y = (rng.uniform(size=n) < p ** 1.1).astype(np.float64)
    counts = bootstrap_counts(np.random.default_rng(1), n, q)
    start = time.perf_counter()
    smooth_ece_replicates(p, y, counts)
    print(f"# bootstrap: {q} replicates at n = {n:,}: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
