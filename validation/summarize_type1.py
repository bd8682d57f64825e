"""Pool the rows of validation/results/local_type1.txt by test.

Command (saved output: validation/results/local_type1_pooled.txt):

    python validation/summarize_type1.py validation/results/local_type1.txt \\
        > validation/results/local_type1_pooled.txt

With 27 (consistency) or 9 (bootstrap, permutation) configurations of ``reps`` data sets
each, a few configurations of a valid test fall outside their individual 95% ranges by
chance (expected: 5%). The pooled rejection rate over all configurations has a much
tighter range, and the count of configurations outside their range is compared with
Binomial(configurations, 0.05).
"""

from __future__ import annotations

import sys
from collections import defaultdict

from scipy import stats


def main(path: str) -> None:
    lines = open(path).read().splitlines()
    reps = int(lines[0].split("reps=")[1].split(",")[0])
    rows = defaultdict(list)
    for line in lines[2:]:
        if line.startswith("#") or not line.strip():
            continue
        d, n, kernels, test, rate, ok = line.split()
        rows[test].append((float(rate), ok == "yes"))
    print(f"# pooled type-I error at alpha=0.05 ({reps} data sets per configuration)")
    print(f"{'test':>12} {'configs':>8} {'pooled rate':>12} {'95% range':>17} "
          f"{'outside':>8} {'P(>= outside)':>14}")
    for test, values in rows.items():
        total = reps * len(values)
        pooled = sum(r for r, _ in values) / len(values)
        low = stats.binom.ppf(0.025, total, 0.05) / total
        high = stats.binom.ppf(0.975, total, 0.05) / total
        outside = sum(1 for _, ok in values if not ok)
        tail = stats.binom.sf(outside - 1, len(values), 0.05)
        print(f"{test:>12} {len(values):>8} {pooled:12.4f} [{low:.4f}, {high:.4f}] "
              f"{outside:>8} {tail:14.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
