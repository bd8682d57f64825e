"""Family-wise error and power of the gate's verdict.

Simulates data sets under the complete null (labels drawn from the predictions, covariates
independent of the labels given the predictions) and under two alternatives, runs
``calaudit.run_audit`` with the default gate and records whether the verdict is FAIL.
Prints per scenario the FAIL rate with its 99 % Clopper-Pearson interval (the gate keeps
its promise when the interval contains alpha = 0.05 or lies below it) and the power beside
that of Holm over all three consistency tests (skce_consistency, ece_consistency and
klce_consistency, the KLCE alone as the local primary; klce_consistency is the aggregate
local test's kernel member, from the same redraws, so both rules are read off the same
runs).

Scenarios: ``binary_cov`` (binary, n = 500, numeric + 4-level covariate), ``scorecard``
(10 distinct predictions, 3-level covariate, n = 500), ``rare`` (p ~ Beta(0.5, 30),
n = 2,000, 4-level covariate), ``multi3`` / ``multi10`` (3 / 10 classes, n = 400, 3-level
covariate), ``small`` (binary, n = 60, 2-level covariate), ``imbalance`` (p ~ Beta(0.3,
20), n = 3,000, 4-level covariate), ``correlated`` (n = 500; the covariates depend on the
prediction: a 4-level covariate from the prediction's quartile, randomised for a third of
the rows, and a numeric one equal to logit p plus noise), ``levels40`` (a 40-level
covariate, n = 2,000), ``distinct5`` (5 distinct predictions, n = 500), ``n30000``
(binary, n = 30,000, numeric + 4-level covariate: the kernel tests take the path ``auto``
chooses). Alternatives: ``opposite`` (local bias that cancels globally: +delta in half the
covariate levels, -delta in the other half) and ``overconfident`` (predictions sharper
than the truth: p = softmax(1.5 log q)).

Cost. Null runs use ``run_audit`` with the default configuration except for settings that
cannot change the verdict: diagnostic tests off (only the primaries ``skce_consistency``,
``ece_consistency`` and ``local_consistency`` run; their random streams do not depend on
which other tests run), no per-class local p-values, no local diagnostics (LCB, group
table, attribution: ``local.diagnostics = false``), and the stages that only estimate
(calibration errors, squared errors, diagrams) left out. The first
data sets of every scenario are also run with the full default configuration and the two
verdicts compared (``check`` column: must be all equal). Power runs use every global test
(bounds included) so the Holm rule can be computed from the same run's raw p-values.
Resampling sizes are the defaults (1,000 global, 500 local).

    OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/gate_type1.py --nulls 1000 \
        --power 100 --minutes 40 --out validation/results/gate_type1.txt

Order of work (the table is rewritten after every chunk, so a run stopped by ``--minutes``
reports exactly the data sets it finished): round-robin until every scenario has
``--first`` null runs and a fifth of that in power runs per alternative; then null runs to
``--nulls``, cheapest scenario first; then power runs to ``--power``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from collections.abc import Callable

import numpy as np
from scipy import stats

from calaudit import run_audit
from calaudit.audit.battery import ClinicalStage, EceFamilyStage, SkceStage
from calaudit.audit.config import AuditConfig, GlobalTestsConfig, LocalConfig
from calaudit.audit.local_calibration import LocalCalibrationStage
from calaudit.audit.sections.global_tests import GLOBAL_TESTS
from calaudit.data.dataset import CalibrationData
from calaudit.inference.multitest import adjust_pvalues
from calaudit.results import Status

ALPHA = 0.05


def sharpen(q: np.ndarray, power: float) -> np.ndarray:
    """Rows of ``q`` raised to ``power`` and renormalised (over-confident for power > 1)."""
    s = np.clip(q, 1e-12, None) ** power
    return s / s.sum(axis=1, keepdims=True)


def shift_class0(q: np.ndarray, sign: np.ndarray, delta: float) -> np.ndarray:
    """Move ``delta`` of probability into (sign > 0) or out of (sign < 0) class 0."""
    out = q.copy()
    room = np.where(sign > 0, 1.0 - q[:, 0], q[:, 0])
    move = sign * np.minimum(delta, 0.9 * room)
    out[:, 0] += move
    rest = q[:, 1:] / np.clip(q[:, 1:].sum(axis=1, keepdims=True), 1e-12, None)
    out[:, 1:] -= move[:, None] * rest
    return np.clip(out, 0.0, None) / np.clip(out, 0.0, None).sum(axis=1, keepdims=True)


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    n: int
    classes: int
    predictions: Callable[[np.random.Generator, int], np.ndarray]  # (n, m) model output
    levels: int
    numeric: bool = False
    delta: float = 0.1
    #: covariates that depend on the predictions (``correlated``)
    correlated: bool = False


def binary(p: np.ndarray) -> np.ndarray:
    return np.column_stack([1.0 - p, p])


SCENARIOS = (
    Scenario("binary_cov", 500, 2, lambda r, n: binary(r.beta(2, 5, n)), 4, numeric=True,
             delta=0.08),
    Scenario("scorecard", 500, 2,
             lambda r, n: binary(r.choice(np.linspace(0.05, 0.5, 10), n)), 3, delta=0.08),
    Scenario("rare", 2000, 2, lambda r, n: binary(r.beta(0.5, 30, n)), 4, delta=0.015),
    Scenario("multi3", 400, 3, lambda r, n: r.dirichlet(np.full(3, 2.0), n), 3, delta=0.1),
    Scenario("multi10", 400, 10, lambda r, n: r.dirichlet(np.full(10, 1.0), n), 3,
             delta=0.1),
    Scenario("small", 60, 2, lambda r, n: binary(r.beta(2, 2, n)), 2, delta=0.2),
    Scenario("imbalance", 3000, 2, lambda r, n: binary(r.beta(0.3, 20, n)), 4, delta=0.01),
    Scenario("correlated", 500, 2, lambda r, n: binary(r.beta(2, 3, n)), 4, numeric=True,
             delta=0.08, correlated=True),
    Scenario("levels40", 2000, 2, lambda r, n: binary(r.beta(2, 5, n)), 40, delta=0.08),
    Scenario("distinct5", 500, 2,
             lambda r, n: binary(r.choice(np.linspace(0.1, 0.7, 5), n)), 4, delta=0.08),
    Scenario("n30000", 30000, 2, lambda r, n: binary(r.beta(2, 5, n)), 4, numeric=True,
             delta=0.02),
)


def make_data(sc: Scenario, rng: np.random.Generator, alternative: str) -> CalibrationData:
    """Predictions ``p`` (what the model outputs) and labels from the true ``q``."""
    p = sc.predictions(rng, sc.n)
    g = rng.integers(0, sc.levels, sc.n)
    if sc.correlated:  # the prediction's quartile, randomised for a third of the rows
        quartile = np.searchsorted(np.quantile(p[:, 1], [0.25, 0.5, 0.75]), p[:, 1])
        g = np.where(rng.random(sc.n) < 1 / 3, g, quartile)
    covariates = {"g": g}
    if sc.numeric:
        covariates["x"] = rng.normal(size=sc.n)
        if sc.correlated:
            covariates["x"] = covariates["x"] + np.log(p[:, 1] / p[:, 0])
    if alternative == "null":
        q = p
    elif alternative == "opposite":
        sign = np.where(g % 2 == 0, 1.0, -1.0)
        q = shift_class0(p, sign, sc.delta) if sc.classes > 2 else binary(
            np.clip(p[:, 1] + sign * sc.delta * np.minimum(1.0, 4 * p[:, 1]), 0.001, 0.999))
    else:  # overconfident: the truth is flatter than the predictions
        q = p
        p = sharpen(q, 1.5)
    u = rng.random(sc.n)
    y = (u[:, None] > np.cumsum(q, axis=1)[:, :-1]).sum(axis=1)
    proba = p[:, 1] if sc.classes == 2 else p
    return CalibrationData.from_arrays(y, proba, covariates=covariates, categorical=["g"])


FAST_STAGES = (EceFamilyStage(), ClinicalStage(), SkceStage(), LocalCalibrationStage())


def fast_config(seed: int) -> AuditConfig:
    """Default gate; only what cannot change the verdict is switched off."""
    return AuditConfig(seed=seed, global_tests=GlobalTestsConfig(
        tests=("skce_consistency", "ece_consistency")),
                       local=LocalConfig(per_class=False, diagnostics=False))


def full_config(seed: int, every_global_test: bool = False) -> AuditConfig:
    tests = GLOBAL_TESTS[:-1] if every_global_test else GlobalTestsConfig().tests
    return AuditConfig(seed=seed, global_tests=GlobalTestsConfig(tests=tests),
                       local=LocalConfig(per_class=False, group_ci_resamples=1))


KERNEL_MEMBER = "KLCE^2, median-heuristic bandwidths"


def holm_rule_fails(result) -> bool:
    """Holm over skce_consistency, ece_consistency and
    klce_consistency (the local aggregate's kernel member), FAIL if any adjusted p-value
    <= alpha (raw p-values of this run; a test that could not run counts as p = 1)."""
    tests = {t.id: t for t in result.tests}
    p = [tests[i].p_value if i in tests else 1.0
         for i in ("skce_consistency", "ece_consistency")]
    local = tests.get("local_consistency")
    if local is not None and "members" in local.params:
        p.append(next(m["p_value"] for m in local.params["members"]
                      if m["name"] == KERNEL_MEMBER))
    p = [v if math.isfinite(v) else 1.0 for v in p]
    return bool((adjust_pvalues(p, "holm") <= ALPHA).any())


def clopper_pearson(k: int, n: int, level: float = 0.99) -> tuple[float, float]:
    a = 1.0 - level
    low = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return low, high


@dataclasses.dataclass
class Tally:
    runs: int = 0
    fails: int = 0
    holm_fails: int = 0
    checked: int = 0
    agree: int = 0
    seconds: float = 0.0


def null_run(sc: Scenario, rep: int, tally: Tally, check: bool) -> None:
    rng = np.random.default_rng([rep, zlib_id(sc.name), 0])
    data = make_data(sc, rng, "null")
    started = time.perf_counter()
    result = run_audit(data, fast_config(rep), stages=FAST_STAGES)
    tally.seconds += time.perf_counter() - started
    tally.runs += 1
    tally.fails += result.verdict is Status.FAIL
    if check:
        full = run_audit(data, full_config(rep))
        tally.checked += 1
        tally.agree += (full.verdict is Status.FAIL) == (result.verdict is Status.FAIL)


def power_run(sc: Scenario, alternative: str, rep: int, tally: Tally) -> None:
    rng = np.random.default_rng([rep, zlib_id(sc.name), 1 if alternative == "opposite" else 2])
    data = make_data(sc, rng, alternative)
    started = time.perf_counter()
    result = run_audit(data, fast_config(rep), stages=FAST_STAGES)
    tally.seconds += time.perf_counter() - started
    tally.runs += 1
    tally.fails += result.verdict is Status.FAIL
    tally.holm_fails += holm_rule_fails(result)


def zlib_id(name: str) -> int:
    import zlib

    return zlib.crc32(name.encode())


def report(nulls: dict[str, Tally], power: dict[tuple[str, str], Tally], started: float,
           args: argparse.Namespace) -> str:
    lines = [f"gate_type1.py: alpha = {ALPHA}, default gate (primary tests skce_consistency, "
             f"ece_consistency, local_consistency, weighted Holm), resamples 1000 global / "
             f"500 local",
             f"arguments: --nulls {args.nulls} --power {args.power} --minutes {args.minutes} "
             f"--start {args.start} --scenarios {args.scenarios or 'all'}; "
             f"wall time {time.time() - started:.0f} s", "",
             "Type I error (complete null): verdict FAIL rate, 99% Clopper-Pearson interval",
             f"{'scenario':<12}{'runs':>6}{'FAIL':>6}{'rate':>8}  {'99% CI':<18}{'ok':>4}"
             f"{'check':>8}{'s/run':>8}"]
    for sc in SCENARIOS:
        t = nulls[sc.name]
        if not t.runs:
            lines.append(f"{sc.name:<12}{0:>6}")
            continue
        low, high = clopper_pearson(t.fails, t.runs)
        ok = "yes" if low <= ALPHA else "NO"
        lines.append(f"{sc.name:<12}{t.runs:>6}{t.fails:>6}{t.fails / t.runs:>8.3f}  "
                     f"[{low:.3f}, {high:.3f}]{'':<3}{ok:>4}{f'{t.agree}/{t.checked}':>8}"
                     f"{t.seconds / t.runs:>8.2f}")
    lines += ["", "Power: verdict FAIL rate under the alternatives, the gate vs Holm over the "
                  "three consistency tests (same runs)",
              f"{'scenario':<12}{'alternative':<15}{'runs':>6}{'gate':>8}{'holm':>8}"]
    for sc in SCENARIOS:
        for alternative in ("opposite", "overconfident"):
            t = power[(sc.name, alternative)]
            if t.runs:
                lines.append(f"{sc.name:<12}{alternative:<15}{t.runs:>6}"
                             f"{t.fails / t.runs:>8.3f}{t.holm_fails / t.runs:>8.3f}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nulls", type=int, default=1000)
    parser.add_argument("--power", type=int, default=100)
    parser.add_argument("--chunk", type=int, default=50)
    parser.add_argument("--checks", type=int, default=5,
                        help="null data sets per scenario also run with the full default")
    parser.add_argument("--minutes", type=float, default=40.0)
    parser.add_argument("--first", type=int, default=200,
                        help="null runs per scenario before any scenario goes further")
    parser.add_argument("--out", default=None)
    parser.add_argument("--scenarios", default=None,
                        help="comma list of scenario names (default: all)")
    parser.add_argument("--start", type=int, default=0,
                        help="first data-set index (continue an earlier run: data set k is "
                             "seeded by k alone, so runs over disjoint ranges add up)")
    args = parser.parse_args()
    if args.scenarios:
        global SCENARIOS
        wanted = set(args.scenarios.split(","))
        SCENARIOS = tuple(sc for sc in SCENARIOS if sc.name in wanted)
    started = time.time()
    nulls = {sc.name: Tally() for sc in SCENARIOS}
    power = {(sc.name, a): Tally() for sc in SCENARIOS for a in ("opposite", "overconfident")}
    deadline = started + 60 * args.minutes

    def write() -> None:
        text = report(nulls, power, started, args)
        if args.out:
            with open(args.out, "w") as fh:
                fh.write(text)
        print(text, file=sys.stderr if args.out else sys.stdout, flush=True)

    def run_nulls(sc: Scenario, target: int) -> None:
        t = nulls[sc.name]
        for run in range(t.runs, min(target, t.runs + args.chunk)):
            if time.time() > deadline:
                return
            null_run(sc, args.start + run, t, check=run < args.checks)

    def run_power(sc: Scenario, target: int) -> None:
        for alternative in ("opposite", "overconfident"):
            p = power[(sc.name, alternative)]
            for rep in range(p.runs, min(target, p.runs + args.chunk // 5)):
                if time.time() > deadline:
                    return
                power_run(sc, alternative, rep, p)

    # A: every scenario gets a first share of null and power runs (round-robin);
    # B: null runs to the target, cheapest scenarios first (so most reach it in time);
    # C: power runs to the target.
    first = min(args.nulls, args.first)
    while time.time() < deadline and any(
            nulls[sc.name].runs < first or power[(sc.name, "overconfident")].runs
            < min(args.power, args.first // 5) for sc in SCENARIOS):
        for sc in SCENARIOS:
            run_nulls(sc, first)
            run_power(sc, min(args.power, args.first // 5))
        write()
    by_cost = sorted(SCENARIOS, key=lambda sc: nulls[sc.name].seconds / max(
        nulls[sc.name].runs, 1))
    for sc in by_cost:
        while time.time() < deadline and nulls[sc.name].runs < args.nulls:
            run_nulls(sc, args.nulls)
            write()
    while time.time() < deadline and any(power[(sc.name, a)].runs < args.power
                                         for sc in SCENARIOS
                                         for a in ("opposite", "overconfident")):
        for sc in SCENARIOS:
            run_power(sc, args.power)
        write()
    write()


if __name__ == "__main__":
    main()
