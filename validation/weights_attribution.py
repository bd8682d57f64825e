"""The weighted attribution (:mod:`calaudit.attribution.weighted`): level of the tests and
coverage of the standardised-bias intervals on samples of a finite population.

Population of 400,000 rows: ``region`` in {N, S, E}, ``age`` in {young, old}, a model
``p ~ U(0.1, 0.8)`` that under-predicts in region S (``logit P(y = 1) = logit p + 0.5 1{S}``)
and is calibrated elsewhere; ``age`` has no effect given region, so its test's null holds,
and the standardised bias of every age level is the population's
``mean expit(logit p + 0.5 1{S}) - mean p``. Samples:

* ``design``: Poisson sampling with inclusion probability proportional to
  ``exp(z) (3 if old)``, ``z ~ N(0, 1)`` (about ``n`` rows), weight ``1 / pi``
  (``--weight-kind design``);
* ``negatives 0.2``: a simple random sample of the population, negatives kept at 0.2
  (``--negative-rate 0.2``), weight ``1 / r`` for a negative;
* ``unweighted``: a simple random sample, unit weights (the naive line is then the
  unweighted audit's attribution): the baseline of the intervals, whose delta method
  holds the sample's covariates fixed and so covers the population value a little less
  than 95 %.

Per case and ``n``: the share of samples whose age test (given region) has p <= 0.05 (the
level), whose region test does (power), and whose 95 % intervals of the two age levels'
standardised biases contain the population value, for calaudit's sandwich Wald tests and
intervals and for the naive fit that takes the weights, rescaled to sum to ``n``, as
frequencies (model-based covariance, likelihood-ratio tests); 99 % Clopper-Pearson
intervals. A sample where a level is too small to estimate is not counted (the number of
samples counted is printed).

Command: ``nice -n 10 python validation/weights_attribution.py >
validation/results/weights_attribution.txt``
"""

from __future__ import annotations

import time

import numpy as np
from _common import clopper_pearson
from scipy import special

from calaudit.attribution.explain import AttributionSettings, attribute
from calaudit.attribution.weighted import ModelWeights
from calaudit.data.weights import SampleWeights
from calaudit.local.groups import Levels

SETS = 500
POPULATION = 400_000


def population(rng: np.random.Generator) -> dict[str, np.ndarray]:
    region = rng.integers(0, 3, POPULATION)  # N, S, E
    old = rng.random(POPULATION) < 0.4
    p = rng.uniform(0.1, 0.8, POPULATION)
    truth = special.expit(special.logit(p) + 0.5 * (region == 1))
    y = (rng.random(POPULATION) < truth).astype(np.float64)
    return {"region": region, "old": old, "p": p, "y": y, "z": rng.normal(size=POPULATION),
            "target": float(truth.mean() - p.mean())}


def sample(pop: dict, case: str, n: int, rng: np.random.Generator):
    """Rows of one sample and their :class:`SampleWeights`."""
    if case == "unweighted":
        rows = np.sort(rng.choice(POPULATION, n, replace=False))
        return rows, SampleWeights(np.ones(n), "design")
    if case == "design":
        size = np.exp(pop["z"]) * np.where(pop["old"], 3.0, 1.0)
        pi = np.minimum(1.0, n * size / size.sum())
        rows = np.flatnonzero(rng.random(POPULATION) < pi)
        return rows, SampleWeights(1.0 / pi[rows], "design")
    rows = rng.choice(POPULATION, int(n / 0.36), replace=False)  # about 36 % kept
    rows = rows[(pop["y"][rows] > 0) | (rng.random(rows.size) < 0.2)]
    return np.sort(rows), SampleWeights(np.ones(rows.size), "design", np.full(rows.size, 0.2))


def audit(pop: dict, rows: np.ndarray, weights: SampleWeights, naive: bool) -> dict:
    y, p = pop["y"][rows], pop["p"][rows]
    model_weights = ModelWeights.of(weights, y)
    if naive:  # the weights as frequencies, rescaled to sum to n
        a = model_weights.a * y.size / model_weights.a.sum()
        model_weights = ModelWeights(SampleWeights(a), a, None)
    levels = [Levels("region", pop["region"][rows].astype(np.int32), ("N", "S", "E")),
              Levels("age", pop["old"][rows].astype(np.int32), ("young", "old"))]
    return attribute(levels, ["categorical"] * 2, y, p, AttributionSettings(), "binary",
                     model_weights).section


def run(pop: dict, case: str, n: int, rng: np.random.Generator) -> list[str]:
    counts = {key: np.zeros(4, dtype=np.int64) for key in ("sandwich", "naive")}
    for _ in range(SETS):
        rows, weights = sample(pop, case, n, rng)
        for key in counts:
            entries = {e["covariate"]: e for e in audit(pop, rows, weights, key == "naive")
                       ["covariates"]}
            levels = entries["age"]["levels"]
            if entries["age"]["p_value"] is None or entries["region"]["p_value"] is None \
                    or len(levels) < 2 or any(lv["ci"] is None for lv in levels):
                continue  # a level too small or a fit that failed: not counted
            covered = all(lv["ci"][0] <= pop["target"] <= lv["ci"][1] for lv in levels)
            counts[key] += [1, entries["age"]["p_value"] <= 0.05,
                            entries["region"]["p_value"] <= 0.05, covered]

    def share(k: int, done: int) -> str:
        low, high = clopper_pearson(int(k), int(done))
        return f"{k / done:.3f} [{low:.3f}, {high:.3f}]"

    return [f"{case:<15} n {n:>5}  {key:<8}  level (age) {share(c[1], c[0])}  power (region) "
            f"{share(c[2], c[0])}  coverage (age levels) {share(c[3], c[0])}  ({c[0]} sets)"
            for key, c in counts.items()]


def main() -> None:
    rng = np.random.default_rng(20261128)
    pop = population(rng)
    print(f"weighted attribution: {SETS} samples per line; test level at 0.05, power, "
          f"joint coverage of the two age levels' 95 % intervals (target "
          f"{pop['target']:+.4f}); 99 % Clopper-Pearson")
    for case in ("unweighted", "design", "negatives 0.2"):
        for n in (500, 2000):
            started = time.process_time()
            lines = run(pop, case, n, rng)
            print("\n".join(lines) + f"\n  ({time.process_time() - started:.0f} CPU-s)",
                  flush=True)


if __name__ == "__main__":
    main()
