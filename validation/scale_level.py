"""Level of the random-feature consistency tests under calibrated models.

Null scenarios (predictions calibrated given the covariates: labels drawn from the
predictions), ``--datasets`` independent data sets each (default 500):

* ``klce_binary``: ``klce_consistency``, binary, n = 10,000, a numeric covariate ``age``
  and a categorical ``group`` (4 categories, strings), ``D`` = 256;
* ``skce_multiclass``: ``skce_consistency`` (exponential-TV kernel, Cauchy frequencies),
  4 classes, n = 20,000, ``D`` = 256;
* ``klce_multiclass_10k``: ``klce_consistency``, 3 classes, n = 10,000, numeric +
  categorical covariates, ``D`` = 256;
* ``klce_multiclass``: the same at n = 100,000;
* ``skce_binary``: ``skce_consistency``, binary, n = 100,000, ``D`` = 256;
* ``gate_binary``: the gate's verdict (``calaudit.run_audit`` with the default gate: the
  primary tests ``skce_consistency``, ``ece_consistency`` and ``klce_consistency``
  Holm-adjusted together, the first and last through features), binary, n = 10,000,
  numeric + categorical covariates, ``D`` = 256; a rejection is a FAIL verdict. Only the
  primaries run (the diagnostics never gate; ``validation/gate_type1.py`` checks that
  leaving them out does not change the verdict).

The SKCE scenarios and the gate run through the audit stages as ``calaudit test --method
features`` runs them (:func:`run_stage_test` / ``calaudit.run_audit``
with ``method="features"``; the path of ``calaudit.stats.skce_test(computation=
"features")``), with the stage's exact estimates skipped for CPU (``skce.max_quadratic_n``
= 5,000, so the median heuristic uses the stage's 5,000-row subsample); the test draws
from its own spawned stream, so this does not change its p-value. The KLCE scenarios call
the library functions the local stage calls for its feature test (median-heuristic
bandwidths on 2,000 rows, ``product_gram``, ``product_features``,
``feature_consistency_test``): through the stage the LCB, group-table and bandwidth
diagnostics cost 6-10 times the test itself, which the shared machine could not afford
for 500 data sets.

``B`` = 199 resamples (p-values in steps of 1/200): the test is exact-conditional for any
``B`` and ``D`` (the null is the statistic under labels redrawn from the predictions), so a
small ``B`` only coarsens the p-values; rejection at alpha = 0.05 means p <= 0.05, i.e. the
observed statistic ranks in the top 10 of 200, exactly 5 % under the null.

Resumable and splittable: data set ``i`` of a scenario is generated from the seed
``(scenario tag, i)`` alone and its p-value is appended to
``validation/results/scale_level/<scenario>.csv``; ``--start/--count`` pick the indices,
indices already in the file are skipped. ``--summary`` prints the rejection rates with
their 99 % Clopper-Pearson intervals (the claim holds when the interval contains 0.05 or
lies below it) from the saved files.

Commands::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/scale_level.py \\
        --scenarios klce_binary,skce_binary --start 0 --count 500
    python validation/scale_level.py --summary > validation/results/scale_level.txt
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from calaudit import run_audit
from calaudit.audit.battery import ClinicalStage, EceFamilyStage, SkceStage
from calaudit.audit.config import AuditConfig, GlobalTestsConfig, LocalConfig, SkceConfig
from calaudit.audit.local_calibration import LocalCalibrationStage
from calaudit.data.dataset import CalibrationData
from calaudit.inference.feature_tests import feature_consistency_test
from calaudit.local.bandwidth import choose_bandwidth
from calaudit.local.encoding import encode_covariates
from calaudit.local.features import product_features
from calaudit.local.kernel import product_gram
from calaudit.local.klce import prediction_features, residuals
from calaudit.numerics.random import stream
from calaudit.results import Status, lookup

ALPHA, B = 0.05, 199
OUT = Path(__file__).parent / "results" / "scale_level"


def run_stage_test(stage, test_id: str, data: CalibrationData, config: AuditConfig):
    """Run ``stage`` as the audit does and return its test ``test_id``."""
    output = stage.run(data, config, stream(config.seed, stage.name))
    return lookup(output.tests, test_id, "test")


def clopper_pearson(k: int, n: int, level: float = 0.99) -> tuple[float, float]:
    """Exact binomial interval for ``k`` successes in ``n`` trials."""
    tail = (1 - level) / 2
    low = stats.beta.ppf(tail, k, n - k + 1) if k > 0 else 0.0
    high = stats.beta.ppf(1 - tail, k + 1, n - k) if k < n else 1.0
    return float(low), float(high)


def calibrated(rng: np.random.Generator, n: int, classes: int,
               covariates: bool = True) -> CalibrationData:
    """Predictions depending on ``age`` and ``group``, labels drawn from them."""
    age = rng.uniform(20, 80, n)
    group = rng.integers(0, 4, n)
    if classes == 2:
        logit = -0.5 + 0.04 * (age - 50) + 0.3 * group + rng.normal(0, 1, n)
        p = 1 / (1 + np.exp(-logit))
        y = (rng.random(n) < p).astype(int)
        proba = p
    else:
        scores = rng.normal(size=(n, classes)) + 0.02 * (age - 50)[:, None] * np.arange(classes)
        proba = np.exp(scores)
        proba /= proba.sum(axis=1, keepdims=True)
        u = rng.random(n)
        y = (u[:, None] >= np.cumsum(proba, axis=1)[:, :-1]).sum(axis=1)
    cov = {"age": age, "group": np.array(["a", "b", "c", "d"])[group]} if covariates else None
    return CalibrationData.from_arrays(y, proba, covariates=cov)


@dataclass(frozen=True)
class Scenario:
    tag: int
    n: int
    classes: int
    test: str            # klce_consistency, skce_consistency or gate (the verdict)
    n_features: int | None

    @property
    def covariates(self) -> bool:
        return self.test in ("klce_consistency", "gate")


SCENARIOS = {
    "klce_binary": Scenario(1, 10_000, 2, "klce_consistency", 256),
    "skce_multiclass": Scenario(2, 20_000, 4, "skce_consistency", 256),
    "klce_multiclass_10k": Scenario(6, 10_000, 3, "klce_consistency", 256),
    "klce_multiclass": Scenario(3, 100_000, 3, "klce_consistency", 256),
    "skce_binary": Scenario(4, 100_000, 2, "skce_consistency", 256),
    "gate_binary": Scenario(5, 10_000, 2, "gate", 256),
}

#: The stages whose tests decide the verdict (the primaries: ``skce_consistency``,
#: ``ece_consistency``, ``klce_consistency``).
GATE_STAGES = (EceFamilyStage(), ClinicalStage(), SkceStage(), LocalCalibrationStage())


def local_config() -> LocalConfig:
    """The local stage with the diagnostics that cannot change a test trimmed."""
    return LocalConfig(tests=("klce_consistency",), n_resamples=B, per_class=False,
                       group_ci_resamples=1, intersections=False, attribution=False,
                       lcb_prob_bandwidth=0.1, lcb_cov_bandwidth=1.0)


def gate_fails(data: CalibrationData, seed: int, n_features: int) -> tuple[float, int]:
    """1.0 if the default gate's verdict is FAIL under ``method="features"`` (primary
    tests only, ``B`` resamples each), else 0.0; and ``D``."""
    config = AuditConfig(seed=seed, n_resamples=B, method="features",
                         n_features=n_features, local=local_config(),
                         skce=SkceConfig(max_quadratic_n=5_000),
                         global_tests=GlobalTestsConfig(
                             tests=("skce_consistency", "ece_consistency")))
    result = run_audit(data, config, stages=GATE_STAGES)
    local = next(t for t in result.tests if t.id == "klce_consistency")
    assert local.params["computation"]["method"] == "features"
    return float(result.verdict is Status.FAIL), n_features


def klce_features_pvalue(data: CalibrationData, seed: int, n_features: int) -> float:
    """``klce_consistency`` through features as the local stage runs it (median-heuristic
    bandwidths on 2,000 rows, the product kernel's features, labels redrawn from the
    predictions), by the library functions the stage calls."""
    rng = np.random.default_rng(seed)
    x = prediction_features(data.y_proba)
    enc = encode_covariates(data.covariates, standardize=True)
    pb = choose_bandwidth(x, None, rng, 2000)
    cb = choose_bandwidth(enc.features, None, rng, 2000, enc.blocks)
    gram = product_gram(x, pb.gamma, enc.features, cb.gamma)
    features = product_features(gram.features, n_features, int(rng.integers(2**62)))
    r = residuals(data.y_true, data.y_proba)
    proba = data.y_proba[:, 1].copy() if data.is_binary else np.array(data.y_proba)
    return feature_consistency_test(features, gram.features, r, proba, rng, B).p_value


def p_value(sc: Scenario, data: CalibrationData, seed: int) -> tuple[float, int]:
    """The test's p-value (the gate: 1.0 for a FAIL verdict, else 0.0) and ``D``."""
    if sc.test == "gate":
        return gate_fails(data, seed, sc.n_features)
    if sc.test == "klce_consistency":
        return klce_features_pvalue(data, seed, sc.n_features), sc.n_features
    config = AuditConfig(seed=seed, n_resamples=B, method="features",
                         n_features=sc.n_features, skce=SkceConfig(max_quadratic_n=5_000),
                         global_tests=GlobalTestsConfig(tests=(sc.test,)))
    result = run_stage_test(SkceStage(), sc.test, data, config)
    computation = result.params["computation"]
    assert computation["method"] == "features", computation
    return result.pvalue, computation["n_features"]


def run(name: str, start: int, count: int) -> None:
    sc = SCENARIOS[name]
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.csv"
    done = {int(line.split(",")[0]) for line in path.read_text().splitlines()[1:]} \
        if path.exists() else set()
    if not path.exists():
        first = "fail" if sc.test == "gate" else "p_value"
        path.write_text(f"index,{first},n_features,cpu_seconds\n")
    for i in range(start, start + count):
        if i in done:
            continue
        started = time.process_time()
        rng = np.random.default_rng([sc.tag, i])
        data = calibrated(rng, sc.n, sc.classes, sc.covariates)
        p, d = p_value(sc, data, int(rng.integers(2**31)))
        with path.open("a") as fh:
            fh.write(f"{i},{p:.6g},{d},{time.process_time() - started:.3f}\n")


def summary(names: list[str]) -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent).stdout.strip()
    print(f"level of the random-feature consistency tests (method = features): alpha = "
          f"{ALPHA}, B = {B} resamples, 99% Clopper-Pearson intervals; code at {commit}")
    for name in names:
        path = OUT / f"{name}.csv"
        if not path.exists():
            continue
        rows = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
        sc = SCENARIOS[name]
        fails = rows[:, 1] == 1 if sc.test == "gate" else rows[:, 1] <= ALPHA
        k, total = int(fails.sum()), len(rows)
        low, high = clopper_pearson(k, total)
        verdict = "HOLDS" if low <= ALPHA else "FAILS"
        ds = sorted({int(d) for d in rows[:, 2]})
        print(f"{name:<19} {sc.test:<17} n = {sc.n:>7,} classes = {sc.classes} "
              f"covariates = {'age+group' if sc.covariates else 'none':<9} D = "
              f"{'/'.join(map(str, ds)):<5} data sets {total:>4}  "
              f"{'FAIL verdicts' if sc.test == 'gate' else 'rejections'} {k:>3} = "
              f"{k / total:.3f}  99% CP [{low:.3f}, {high:.3f}] {verdict}  "
              f"cpu {rows[:, 3].mean():.2f} s per data set")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--summary", action="store_true")
    args = parser.parse_args()
    names = args.scenarios.split(",")
    if args.summary:
        summary(names)
        return 0
    for name in names:
        if name not in SCENARIOS:
            parser.error(f"unknown scenario {name!r}; choose from {', '.join(SCENARIOS)}")
    # interleave blocks of 25 data sets per scenario so a run stopped early has them all
    for block in range(args.start, args.start + args.count, 25):
        for name in names:
            run(name, block, min(25, args.start + args.count - block))
    os.sync()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
