"""Level of the weighted ``skce_consistency`` on random features at 0.05
(:mod:`calaudit.inference.weighted_skce_features`, the path a weighted audit takes above
the exact weighted path's rows): Monte-Carlo p-value from ``B = 199`` unit-label redraws,
the default feature count and the weighted median heuristic on a subsample (every sample
has more than 4,096 rows).

Calibrated populations ``p ~ U(0.02, 0.6)``, ``y ~ Bernoulli(p)``; a negative sampled
with probability 0.1 and weighted 10, every positive kept (about 4,500 rows per data set),
with design weights ``U(0.5, 2)`` on top. Second case, frequency weights: about 9,000
units with ``p`` on a grid of 3,000 values of ``U(0.02, 0.98)``, ``y ~ Bernoulli(p)``,
the identical ``(p, y)`` units gathered into rows of ``t`` units (about 4,200 rows of
about two units, up to about ten: the binomial counts by thresholds). Printed per case: the share of
data sets with p <= 0.05 and its 99 % Clopper-Pearson interval, and for the first case
the unweighted ``skce_consistency`` (random features, the unweighted audit's path) on the
same samples.

Command: ``nice -n 10 python validation/weights_skce_features.py >
validation/results/weights_skce_features.txt``
"""

from __future__ import annotations

import sys
import time

import numpy as np
from _common import clopper_pearson, negatives_kept

from calaudit.data.weights import SampleWeights
from calaudit.inference.method import Computation
from calaudit.inference.skce_battery import skce_battery
from calaudit.inference.weighted_skce_features import weighted_skce

SETS = int(sys.argv[1]) if len(sys.argv) > 1 else 300
ROWS = 4500
RESAMPLES = 199
ALPHA = 0.05


def draw(case: str, rng: np.random.Generator):
    """``y``, ``p`` and the weights of one sample of a calibrated population."""
    if case.startswith("frequency"):
        grid = rng.uniform(0.02, 0.98, 3000)
        p = grid[rng.integers(0, grid.size, 9000)]
        y = (rng.random(p.size) < p).astype(np.int64)
        cells, units = np.unique(np.column_stack([p, y]), axis=0, return_counts=True)
        return cells[:, 1].astype(np.int64), cells[:, 0], SampleWeights(
            units.astype(np.float64), "frequency")
    return negatives_kept(rng, ROWS, case.endswith("design"))


def main() -> None:
    print(f"weighted skce_consistency on random features, B = {RESAMPLES}, {SETS} "
          f"calibrated data sets of about {ROWS} rows per case; rejection rate at {ALPHA}")
    for number, case in enumerate(["negatives kept at 10 %, design",
                                   "frequency, identical units gathered"]):
        start = time.time()
        rng = np.random.default_rng(2026 + number)
        rejected = unweighted = inconclusive = 0
        for _ in range(SETS):
            y, p, weights = draw(case, rng)
            probs = np.column_stack([1 - p, p])
            _, (result,) = weighted_skce(
                y, probs, weights, weights.of_labels(y), kernel="exponential",
                bandwidth=None, max_quadratic_n=0, n_features=None,
                tests=("skce_consistency",), n_resamples=RESAMPLES, alpha=ALPHA, rng=rng)
            inconclusive += not np.isfinite(result.p_value)
            rejected += bool(result.p_value <= ALPHA)
            if number == 0:
                plain = skce_battery(probs, np.eye(2)[y] - probs,
                                     tests=("skce_consistency",), n_resamples=RESAMPLES,
                                     computation=Computation("features"), rng=rng).tests[0]
                unweighted += bool(plain.p_value <= ALPHA)
        low, high = clopper_pearson(rejected, SETS)
        plain_share = f"; unweighted features: {unweighted / SETS:.3f}" if number == 0 else ""
        print(f"{case:36s} weighted: {rejected / SETS:.3f} (99 % CI {low:.3f} to "
              f"{high:.3f}), inconclusive {inconclusive}{plain_share}  "
              f"[{time.time() - start:.0f} s]", flush=True)


if __name__ == "__main__":
    main()
