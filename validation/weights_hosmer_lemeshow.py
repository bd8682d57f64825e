"""Level of the weighted Hosmer-Lemeshow test at 0.05
(:func:`calaudit.inference.weighted_tests.weighted_hosmer_lemeshow`): 10 groups at the
weighted quantiles of ``p``, Monte-Carlo p-value from ``B = 199`` label redraws.

Calibrated populations (``y ~ Bernoulli(p)``), one sample of about 1,000 rows per data
set:

* design weights ``exp(x)``, ``x ~ N(0, 1)``, with ``p = expit(x + z - 1)``, ``z ~ N(0,
  1)`` (the weight grows with the prediction; every row its own weight value: every row
  redrawn);
* design weights drawn from {1, 2, 5} independently of ``p ~ U(0.02, 0.9)`` (the
  Poisson-binomial draws per (group, weight value));
* negatives kept at 10 %: population ``p ~ U(0.02, 0.6)``, a negative sampled with
  probability 0.1 and weighted 10; the same with design weights ``U(0.5, 2)`` on top.

Printed per case: the share of data sets with p <= 0.05 and its 99 % Clopper-Pearson
interval; for negatives kept at 10 % also the unweighted Hosmer-Lemeshow test of the same
samples (chi-square), which rejects the calibrated population.

Command: ``nice -n 10 python validation/weights_hosmer_lemeshow.py >
validation/results/weights_hosmer_lemeshow.txt``
"""

from __future__ import annotations

import time

import numpy as np
from _common import clopper_pearson, negatives_kept
from scipy import special

from calaudit.data.weights import SampleWeights
from calaudit.inference.classical import hosmer_lemeshow

SETS = 2000
ROWS = 1000
RESAMPLES = 199
ALPHA = 0.05


def draw(case: str, rng: np.random.Generator):
    """``y``, ``p`` and the weights of one sample of a calibrated population."""
    if case.startswith("negatives"):
        return negatives_kept(rng, ROWS, case.endswith("design"))
    if case == "design exp(x), p grows with x":
        x = rng.normal(size=ROWS)
        p = special.expit(x + rng.normal(size=ROWS) - 1.0)
        d = np.exp(x)
    else:
        p = rng.uniform(0.02, 0.9, ROWS)
        d = rng.choice([1.0, 2.0, 5.0], ROWS)
    y = (rng.random(ROWS) < p).astype(np.int64)
    return y, p, SampleWeights(d, "design")


def main() -> None:
    print(f"weighted Hosmer-Lemeshow, 10 groups, B = {RESAMPLES}, {SETS} calibrated data "
          f"sets of about {ROWS} rows per case; rejection rate at {ALPHA}")
    cases = ["design exp(x), p grows with x", "design {1, 2, 5}",
             "negatives kept at 10 %", "negatives kept at 10 %, design"]
    for number, case in enumerate(cases):
        start = time.time()
        rng = np.random.default_rng(2026 + number)
        rejected = unweighted = inconclusive = 0
        for _ in range(SETS):
            y, p, weights = draw(case, rng)
            result = hosmer_lemeshow(y, p, 10, weights, RESAMPLES, rng)
            inconclusive += not np.isfinite(result.p_value)
            rejected += bool(result.p_value <= ALPHA)
            if case.startswith("negatives"):
                plain = hosmer_lemeshow(y, p, 10)
                unweighted += bool(plain.p_value <= ALPHA)
        low, high = clopper_pearson(rejected, SETS)
        line = (f"{case:32s} weighted: {rejected / SETS:.3f} (99 % CI {low:.3f} to "
                f"{high:.3f}), inconclusive {inconclusive}")
        if case.startswith("negatives"):
            line += f"; unweighted chi-square: {unweighted / SETS:.3f}"
        print(line + f"  [{time.time() - start:.0f} s]", flush=True)


if __name__ == "__main__":
    main()
