"""The weighted group table on calibrated groups: coverage of the bias interval and level
of the group test (:mod:`calaudit.local.weighted_groups`).

One group of ``n`` sampled rows per data set, calibrated on the population (``y ~
Bernoulli(p)``), so its weighted bias ``E w (y - p) / E w`` is 0:

* design weights ``exp(x)``, ``x ~ N(0, 1)`` (Kish's size about ``n / e``), ``p ~ U(0.05,
  0.6)`` independent of the weight; the same weights with ``p = 0.5`` where ``x > 0.5`` and
  0.02 elsewhere (the residual's spread grows with the weight); mild weights ``U(0.5, 2)``;
* negatives kept at rate ``r`` (0.3, 0.1): population rows ``p ~ U(0.05, 0.6)``, a
  negative sampled with probability ``r``, weight ``1 / r``.

Printed per case: the share of 95 % intervals that contain 0 and the share of group tests
with p <= 0.05 (Monte Carlo with ``B = 199`` and the refined normal approximation), each
with a 99 % Clopper-Pearson interval.

Command: ``nice -n 10 python validation/weights_group_table.py >
validation/results/weights_group_table.txt``
"""

from __future__ import annotations

import time

import numpy as np
from _common import clopper_pearson

from calaudit.data.weights import SampleWeights
from calaudit.local.groups import GroupSettings, Levels
from calaudit.local.weighted_groups import WeightedRows, weighted_group_table

SETS = 2000
SETTINGS = GroupSettings(min_rows=10, min_events=2, level=0.95)


def draw(case: str, n: int, rng: np.random.Generator):
    """``y``, ``p`` and the weights of one calibrated sample of ``n`` rows (about ``n``
    under sampling)."""
    if case.startswith("negatives"):
        rate = float(case.split()[-1])
        size = int(n / (0.33 + rate * 0.67))  # about n rows kept
        p = rng.uniform(0.05, 0.6, size)
        y = (rng.random(size) < p).astype(np.int64)
        keep = (y == 1) | (rng.random(size) < rate)
        return y[keep], p[keep], SampleWeights(np.ones(keep.sum()), "frequency",
                                               np.full(keep.sum(), rate))
    x = rng.normal(size=n)
    if case == "design mild":
        p, d = rng.uniform(0.05, 0.6, n), rng.uniform(0.5, 2.0, n)
    elif case == "design lognormal":
        p, d = rng.uniform(0.05, 0.6, n), np.exp(x)
    else:
        p, d = np.where(x > 0.5, 0.5, 0.02), np.exp(x)
    y = (rng.random(n) < p).astype(np.int64)
    return y, p, SampleWeights(d, "design")


def run(case: str, n: int, rng: np.random.Generator) -> str:
    covered = rejected_mc = rejected_normal = done = 0
    for _ in range(SETS):
        y, p, weights = draw(case, n, rng)
        levels = [Levels("g", np.zeros(y.size, np.int32), ("all",))]
        rows = WeightedRows.of(weights, y, p)
        frequency = weights.kind == "frequency"
        mc = weighted_group_table(levels, False, rows, frequency, rng, SETTINGS, 199)[1][0]
        normal = weighted_group_table(levels, False, rows, frequency, rng, SETTINGS,
                                      None)[1][0]
        if mc["bias_ci"] is None:
            continue
        done += 1
        covered += mc["bias_ci"][0] <= 0 <= mc["bias_ci"][1]
        rejected_mc += mc["p_value"] <= 0.05
        rejected_normal += normal["p_value"] <= 0.05

    def share(k: int) -> str:
        low, high = clopper_pearson(k, done)
        return f"{k / done:.4f} [{low:.4f}, {high:.4f}]"

    return (f"{case:<26} n {n:>4}  coverage {share(covered)}  level MC "
            f"{share(rejected_mc)}  approximation {share(rejected_normal)}  ({done} sets)")


def main() -> None:
    rng = np.random.default_rng(20261128)
    print("weighted group table, calibrated groups: 95 % interval coverage, level at 0.05 "
          "(99 % Clopper-Pearson)")
    for case in ("design mild", "design lognormal", "design spread rising with w",
                 "negatives kept at 0.3", "negatives kept at 0.1"):
        for n in (60, 300, 1000):
            started = time.process_time()
            print(run(case, n, rng) + f"  {time.process_time() - started:.0f} CPU-s",
                  flush=True)


if __name__ == "__main__":
    main()
