"""Level of the random-feature tests under calibrated models (issue 13).

Three null scenarios (predictions calibrated given covariates: labels drawn from the
predictions), each with ``--datasets`` independent data sets (default 500):

* ``klce_binary``: KLCE consistency test through features, binary, n = 10,000, one numeric
  covariate and one categorical covariate (4 categories);
* ``skce_multiclass``: SKCE (exponential-TV kernel, Cauchy frequencies) consistency test
  through features, 4 classes, n = 20,000 (no covariates);
* ``klce_multiclass``: KLCE consistency test through features, 3 classes, n = ``--large-n``
  (default 100,000; the saved run used 10,000 for CPU reasons) with a numeric and a
  categorical covariate.

Kernels and bandwidths as the audit stages build them (median heuristic on a seeded
subsample -- 5,000 rows for the SKCE, the stage's rule above 20,000 rows --,
``product_gram`` / ``SkceFeatures``), ``D`` = 256 features, ``B`` = 99
resamples (p-values in steps of 0.01), alpha = 0.05. Output: rejections, the rate and
its 99 % Clopper-Pearson interval; the claim holds when the interval contains 0.05 or lies
below it. The test is exact-conditional by construction, so this checks the
implementation (draws, statistic, p-value), not an approximation.

Command: ``nice -n 10 python validation/scale_level.py > validation/results/scale_level.txt``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from calaudit.audit.method import MethodChoice
from calaudit.audit.skce_stage import SkceFeatures
from calaudit.data.dataset import CalibrationData
from calaudit.inference.feature_tests import feature_consistency_test
from calaudit.local.bandwidth import choose_bandwidth
from calaudit.local.encoding import encode_covariates
from calaudit.local.features import product_features
from calaudit.local.kernel import product_gram
from calaudit.local.klce import prediction_features, residuals
from calaudit.metrics.skce import choose_kernel

ALPHA, B, D = 0.05, 99, 256


def clopper_pearson(k: int, n: int, level: float = 0.99) -> tuple[float, float]:
    tail = (1 - level) / 2
    low = stats.beta.ppf(tail, k, n - k + 1) if k > 0 else 0.0
    high = stats.beta.ppf(1 - tail, k + 1, n - k) if k < n else 1.0
    return float(low), float(high)


def calibrated(rng, n, classes, covariates=True):
    age = rng.uniform(20, 80, n)
    group = rng.integers(0, 4, n)
    if classes == 2:
        logit = -0.5 + 0.04 * (age - 50) + 0.3 * group + rng.normal(0, 1, n)
        p = 1 / (1 + np.exp(-logit))
        y = (rng.random(n) < p).astype(int)
    else:
        scores = rng.normal(size=(n, classes)) + 0.02 * (age - 50)[:, None] * np.arange(classes)
        p = np.exp(scores)
        p /= p.sum(axis=1, keepdims=True)
        u = rng.random(n)
        y = (u[:, None] >= np.cumsum(p, axis=1)[:, :-1]).sum(axis=1)
    cov = {"age": age, "group": group} if covariates else None
    return CalibrationData.from_arrays(y, p, covariates=cov,
                                       categorical=["group"] if covariates else ())


def klce_pvalue(data, rng):
    x = prediction_features(data.y_proba)
    enc = encode_covariates(data.covariates, standardize=True)
    pb = choose_bandwidth(x, None, rng, 2000)
    cb = choose_bandwidth(enc.features, None, rng, 2000, enc.blocks)
    gram = product_gram(x, pb.gamma, enc.features, cb.gamma)
    features = product_features(gram.features, D, int(rng.integers(2**62)))
    r = residuals(data.y_true, data.y_proba)
    proba = data.y_proba[:, 1].copy() if data.is_binary else data.y_proba
    return feature_consistency_test(features, gram.features, r, proba, rng, B).p_value


def skce_pvalue(data, rng):
    choice = choose_kernel(data.y_proba, "exponential", None, exact_max_n=5_000, rng=rng)
    comp = MethodChoice("features", "features", "validation", D, int(rng.integers(2**62)))
    feats = SkceFeatures.build(choice, comp, data)
    return feats.one_pass(rng, None, B).consistency.p_value


SCENARIOS = {
    "klce_binary": (10_000, 2, True, klce_pvalue),
    "skce_multiclass": (20_000, 4, False, skce_pvalue),
    "klce_multiclass": (100_000, 3, True, klce_pvalue),
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=int, default=500)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--large-n", type=int, default=100_000)
    parser.add_argument("--report", type=int, default=25)
    args = parser.parse_args()
    print(f"level of the random-feature consistency tests: alpha = {ALPHA}, B = {B}, "
          f"D = {D}, {args.datasets} data sets per scenario", flush=True)
    names = args.scenarios.split(",")
    sizes = {name: (args.large_n if name == "klce_multiclass" else SCENARIOS[name][0])
             for name in names}
    rngs = {name: np.random.default_rng(len(name) * 1000 + sizes[name]) for name in names}
    rejections = dict.fromkeys(names, 0)
    seconds = dict.fromkeys(names, 0.0)
    # rounds of one data set per scenario, cumulative counts every --report rounds, so a
    # run stopped early still reports every scenario on equal counts
    for done in range(1, args.datasets + 1):
        for name in names:
            n, classes, covs, fn = SCENARIOS[name]
            started = time.process_time()
            data = calibrated(rngs[name], sizes[name], classes, covs)
            rejections[name] += fn(data, rngs[name]) <= ALPHA
            seconds[name] += time.process_time() - started
        if done % args.report == 0 or done == args.datasets:
            for name in names:
                low, high = clopper_pearson(rejections[name], done)
                ok = "HOLDS" if low <= ALPHA else "FAILS"
                _, classes, covs, _ = SCENARIOS[name]
                print(f"{done:>4} data sets  {name:<16} n = {sizes[name]:>7,} classes = "
                      f"{classes} covariates = {covs!s:<5} rejections {rejections[name]:>3} "
                      f"= {rejections[name] / done:.3f}; 99% CP [{low:.3f}, {high:.3f}] "
                      f"{ok}; cpu {seconds[name] / done:.2f} s per data set", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
