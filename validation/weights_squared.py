"""The weighted squared calibration errors estimate the population's, not the sample's
(:mod:`calaudit.squared` on weighted rows, docs/weights.md).

Binary population: ``p ~ U(0.02, 0.6)``, ``P(Y = 1 | p) = q(p)``; the target is the
class-wise squared error of the population, ``CWCE_2^2 = 2 E[(p - q(p))^2]`` (both classes
give the same term), integrated numerically. Cases:

* ``calibrated, negatives 0.1``: ``q(p) = p`` (population CWCE_2^2 = 0); negatives kept at
  rate 0.1 (``--negative-rate 0.1``): the sample's law of ``Y`` given ``p`` is
  ``q / (q + 0.1 (1 - q))``, far from calibrated;
* ``miscalibrated, negatives 0.1``: ``q(p) = p^0.7``, the same sampling;
* ``miscalibrated, design``: ``q(p) = p^0.7``, a row kept with probability ``0.05 + 0.95 p``
  whatever its label (design weight ``1 / (0.05 + 0.95 p)``): the law of ``Y`` given ``p``
  is unchanged but the sample over-represents large ``p``.

About ``n`` = 1000 rows are kept per data set; ``cwce2`` by the default pipeline (all four
estimators, appendix-B grids, 5 folds, 20 % test split), weighted and unweighted. Printed
per case: the population value, the mean of each estimate over data sets with its
standard error, the bias in standard errors and the share of each chosen estimator; for
scale, the unweighted pipeline on a simple random sample of the population with as many
rows as the weighted sample's Kish effective size (the estimators' own small-sample bias:
they square fitted residual curves, so they are positive on calibrated data).

The last line of each case compares the weighted estimate with the simple random sample
of the Kish size (difference of the means and its standard error, the data sets being
independent): the weights should add no bias beyond the estimators' own at the effective
sample size.

Commands: ``nice -n 10 python validation/weights_squared.py >
validation/results/weights_squared.txt``; the design case on more data sets:
``python validation/weights_squared.py --cases design --sets 400 --seed 7 >
validation/results/weights_squared_design.txt``
"""

from __future__ import annotations

import argparse
import collections
import time

import numpy as np

from calaudit.data.dataset import CalibrationData
from calaudit.squared.api import squared_metrics

CASES = ("calibrated, negatives 0.1", "miscalibrated, negatives 0.1", "miscalibrated, design")
LOW, HIGH = 0.02, 0.6


def truth_curve(case: str):
    return (lambda p: p) if case.startswith("calibrated") else (lambda p: p ** 0.7)


def population_value(case: str) -> float:
    """``2 E[(p - q(p))^2]`` for ``p ~ U(LOW, HIGH)`` (midpoint rule, 10^6 points)."""
    grid = LOW + (np.arange(1_000_000) + 0.5) * (HIGH - LOW) / 1_000_000
    return float(2.0 * np.mean((grid - truth_curve(case)(grid)) ** 2))


def draw(case: str, n: int, rng: np.random.Generator) -> CalibrationData:
    """One sample of about ``n`` kept rows with its weights."""
    q = truth_curve(case)
    if case.endswith("design"):
        size = int(n / (0.05 + 0.95 * (LOW + HIGH) / 2))
        p = rng.uniform(LOW, HIGH, size)
        y = (rng.random(size) < q(p)).astype(np.int64)
        inclusion = 0.05 + 0.95 * p
        keep = rng.random(size) < inclusion
        return CalibrationData.from_arrays(y[keep], p[keep], sample_weight=1.0 / inclusion[keep],
                                           weight_kind="design")
    rate = 0.1
    mean_q = float(np.mean(q(np.linspace(LOW, HIGH, 1001))))
    size = int(n / (mean_q + rate * (1 - mean_q)))
    p = rng.uniform(LOW, HIGH, size)
    y = (rng.random(size) < q(p)).astype(np.int64)
    keep = (y == 1) | (rng.random(size) < rate)
    return CalibrationData.from_arrays(y[keep], p[keep], negative_rate=rate)


def estimate(data: CalibrationData, weighted: bool, seed: int) -> tuple[float, str]:
    (metric,) = squared_metrics(
        data.y_true, data.y_proba, targets=("cwce2",), rng=np.random.default_rng(seed),
        weights=data.weights if weighted else None,
        sample_weight=data.sample_weight if weighted else None)
    return metric.value, metric.params["estimator"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=60)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", nargs="+", choices=("negatives", "miscalibrated", "design"),
                        help="run only the cases whose name contains these words")
    args = parser.parse_args()
    start = time.time()
    print(f"# {args.sets} data sets per case, about {args.rows} kept rows each, seed {args.seed}")
    print("# cwce2 by the default pipeline; mean over data sets (standard error); bias in SE")
    for c, case in enumerate(CASES):
        if args.cases and not all(word in case for word in args.cases):
            continue
        truth = population_value(case)
        rng = np.random.default_rng([args.seed, c])
        rows = ("weighted", "unweighted", "simple random sample")
        values: dict[str, list[float]] = {row: [] for row in rows}
        chosen = {row: collections.Counter() for row in rows}
        for s in range(args.sets):
            data = draw(case, args.rows, rng)
            kish = int(round(data.sample_weight.sum() ** 2 / (data.sample_weight ** 2).sum()))
            p = rng.uniform(LOW, HIGH, kish)
            labels = (rng.random(kish) < truth_curve(case)(p)).astype(int)
            srs = CalibrationData.from_arrays(labels, p)
            for row, (sample, weighted) in zip(rows, ((data, True), (data, False), (srs, False))):
                value, estimator = estimate(sample, weighted, 1000 * c + s)
                values[row].append(value)
                chosen[row][estimator] += 1
        print(f"\n## {case}: population CWCE_2^2 = {truth:.6f}")
        for row in rows:
            v = np.array(values[row])
            se = v.std(ddof=1) / np.sqrt(v.size)
            share = ", ".join(f"{k} {n / v.size:.2f}" for k, n in sorted(chosen[row].items()))
            print(f"{row:>20}: mean {v.mean():.6f} ({se:.6f}), bias {v.mean() - truth:+.6f} "
                  f"= {(v.mean() - truth) / se:+.1f} SE; chosen: {share}")
        w, r = np.array(values["weighted"]), np.array(values["simple random sample"])
        se = np.sqrt(w.var(ddof=1) / w.size + r.var(ddof=1) / r.size)
        print(f"{'weighted - sample':>20}: {w.mean() - r.mean():+.6f} ({se:.6f}) = "
              f"{(w.mean() - r.mean()) / se:+.1f} SE")
    print(f"\n# {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
