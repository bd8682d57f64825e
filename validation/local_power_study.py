"""Power of the verdict against local miscalibration, beside the simple tests a
statistician would run instead, and beside a rule with the KLCE as the local primary.

Each cell simulates data sets whose model is calibrated on average but biased for
sub-populations, runs ``calaudit.run_audit`` with the default gate and records whether
the verdict is FAIL. On the same data sets it runs three baselines, each at level alpha
on its own (no adjustment for the global questions the verdict also answers):

* ``z-Bonf``: per-group z, ``z_g = sum_g (y - p) / sqrt(sum_g p (1 - p))`` over the
  groups of the group table's main effects (categories; four quantile bands of a numeric
  covariate), two-sided, Bonferroni over the groups. Multi-class: one-vs-rest per group
  and class.
* ``chi2``: the chi-square of the group residual sums, ``sum_g z_g^2`` on ``G`` degrees
  of freedom over the same groups (multi-class: ``sum_g U_g^T C_g^+ U_g`` with
  ``U_g = sum_g (e_y - p)``, ``C_g = sum_g diag p - p p^T``).
* ``LR``: the logistic recalibration model's likelihood-ratio test of the covariate terms
  (treatment-coded levels, numeric covariates in the same bands) given an intercept, with
  ``logit p`` as offset (statsmodels GLM); multi-class: the multinomial model with
  ``log p`` as offset (fitted here by Newton's method).

``old`` is the rule with the KLCE as the local primary instead of the aggregate local
test: Holm over skce_consistency, ece_consistency and klce_consistency (the aggregate's
kernel member: the same redraws, so the same p-value). ``agree`` is the share of data
sets in which the attribution test names a covariate at adjusted p <= 0.01 and the
verdict FAILs (with the count of such data sets).

Cells (alpha = 0.05; the default gate and resamples: 1,000 global, 500 local): the six
of the group-bias table (n, levels of the biased categorical covariate, delta, numeric
noise covariates; half the levels +delta, half -delta, predictions uniform on
[0.05, 0.95]), ``smooth`` (bias ``delta * tanh(x)`` in a numeric covariate, two noise
covariates) and ``multi3`` (three classes, probability ``delta`` moved into class 0 in
half of a 4-level covariate's levels and out of it in the other half, one noise
covariate).

    OPENBLAS_NUM_THREADS=1 python validation/local_power_study.py --runs 200 \
        --out validation/results/local_power_study.txt
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import zlib

import numpy as np
from scipy import optimize, special, stats

from calaudit import run_audit
from calaudit.audit.config import AuditConfig, GlobalTestsConfig, LocalConfig
from calaudit.data.dataset import CalibrationData
from calaudit.inference.multitest import adjust_pvalues
from calaudit.local.groups import quantile_bands
from calaudit.results import Status

ALPHA = 0.05
KERNEL_MEMBER = "KLCE^2, median-heuristic bandwidths"


@dataclasses.dataclass(frozen=True)
class Cell:
    name: str
    n: int
    levels: int
    delta: float
    noise: int
    kind: str = "groups"  # groups | smooth | multi3


CELLS = (
    Cell("n500_L4_d08_noise3", 500, 4, 0.08, 3),
    Cell("n500_L4_d08_noise0", 500, 4, 0.08, 0),
    Cell("n500_L10_d08_noise3", 500, 10, 0.08, 3),
    Cell("n2000_L4_d05_noise3", 2000, 4, 0.05, 3),
    Cell("n2000_L10_d05_noise1", 2000, 10, 0.05, 1),
    Cell("n10000_L4_d03_noise3", 10000, 4, 0.03, 3),
    Cell("smooth_n2000_d06", 2000, 0, 0.06, 2, "smooth"),
    Cell("multi3_n600_L4_d08", 600, 4, 0.08, 1, "multi3"),
)


def simulate(cell: Cell, rng: np.random.Generator):
    """``(labels, predictions, covariates)``; predictions (n,) binary or (n, 3)."""
    n = cell.n
    covariates: dict[str, np.ndarray] = {}
    if cell.kind == "multi3":
        p = rng.dirichlet(np.full(3, 2.0), n)
        g = rng.integers(0, cell.levels, n)
        covariates["g"] = np.array([f"L{v}" for v in g])
        sign = np.where(g < cell.levels // 2, 1.0, -1.0)
        room = np.where(sign > 0, 1 - p[:, 0], p[:, 0])
        move = sign * np.minimum(cell.delta, 0.9 * room)
        q = p.copy()
        q[:, 0] += move
        q[:, 1:] -= move[:, None] * p[:, 1:] / p[:, 1:].sum(axis=1, keepdims=True)
        for k in range(cell.noise):
            covariates[f"x{k}"] = rng.normal(size=n)
        y = (rng.random(n)[:, None] > np.cumsum(q, axis=1)[:, :-1]).sum(axis=1)
        return y, p, covariates
    p = rng.uniform(0.05, 0.95, n)
    if cell.kind == "smooth":
        signal = rng.normal(size=n)
        covariates["s"] = signal
        shift = cell.delta * np.tanh(signal)
    else:
        g = rng.integers(0, cell.levels, n)
        covariates["g"] = np.array([f"L{v}" for v in g])
        shift = np.where(g < cell.levels // 2, cell.delta, -cell.delta)
    for k in range(cell.noise):
        covariates[f"x{k}"] = rng.normal(size=n)
    y = (rng.random(n) < np.clip(p + shift, 0.001, 0.999)).astype(int)
    return y, p, covariates


def level_codes(covariates: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The group table's main-effect levels: categories, four quantile bands."""
    out = []
    for values in covariates.values():
        if values.dtype.kind in "OUS":
            out.append(np.unique(values, return_inverse=True)[1])
        else:
            out.append(np.asarray(quantile_bands(values, 4)[0], dtype=np.int64))
    return out


def indicators(codes: list[np.ndarray]) -> np.ndarray:
    return np.column_stack([c == v for c in codes for v in np.unique(c)]).astype(float)


def treatment(codes: list[np.ndarray]) -> np.ndarray:
    columns = [np.ones(codes[0].size)]
    for c in codes:
        columns += [(c == v).astype(float) for v in np.unique(c)[1:]]
    return np.column_stack(columns)


def binary_baselines(y, p, codes) -> tuple[float, float, float]:
    import statsmodels.api as sm

    r, w = y - p, p * (1 - p)
    h = indicators(codes)
    z = h.T @ r / np.sqrt(h.T @ w)
    bonferroni = min(1.0, 2 * stats.norm.sf(np.abs(z)).min() * z.size)
    chi2 = float(stats.chi2.sf(np.sum(z**2), z.size))
    x = treatment(codes)
    offset = special.logit(p)
    full = sm.GLM(y, x, family=sm.families.Binomial(), offset=offset).fit()
    null = sm.GLM(y, x[:, :1], family=sm.families.Binomial(), offset=offset).fit()
    lr = float(stats.chi2.sf(2 * (full.llf - null.llf), x.shape[1] - 1))
    return bonferroni, chi2, lr


def _multinomial_loglik(beta, x, y, offset, m):
    eta = offset.copy()
    eta[:, 1:] += x @ beta.reshape(x.shape[1], m - 1)
    return float(np.sum(eta[np.arange(y.size), y] - special.logsumexp(eta, axis=1)))


def _multinomial_fit(x, y, offset, m):
    def negative(beta):
        eta = offset.copy()
        eta[:, 1:] += x @ beta.reshape(x.shape[1], m - 1)
        prob = special.softmax(eta, axis=1)
        target = np.eye(m)[y]
        gradient = x.T @ (target - prob)[:, 1:]
        return -_multinomial_loglik(beta, x, y, offset, m), -gradient.ravel()

    start = np.zeros(x.shape[1] * (m - 1))
    return -optimize.minimize(negative, start, jac=True, method="BFGS",
                              options={"gtol": 1e-8, "maxiter": 500}).fun


def multiclass_baselines(y, p, codes) -> tuple[float, float, float]:
    m = p.shape[1]
    r = np.eye(m)[y] - p
    h = indicators(codes).astype(bool)
    z_p, chi = [], 0.0
    for g in range(h.shape[1]):
        rows = h[:, g]
        u = r[rows].sum(axis=0)
        variance = (p[rows] * (1 - p[rows])).sum(axis=0)
        z_p += list(2 * stats.norm.sf(np.abs(u / np.sqrt(variance))))
        cov = np.diag(p[rows].sum(axis=0)) - p[rows].T @ p[rows]
        chi += float(u @ np.linalg.pinv(cov) @ u)
    bonferroni = min(1.0, min(z_p) * len(z_p))
    chi2 = float(stats.chi2.sf(chi, h.shape[1] * (m - 1)))
    x = treatment(codes)
    offset = np.log(np.clip(p, 1e-12, None))
    full = _multinomial_fit(x, y, offset, m)
    null = _multinomial_fit(x[:, :1], y, offset, m)
    lr = float(stats.chi2.sf(2 * (full - null), (x.shape[1] - 1) * (m - 1)))
    return bonferroni, chi2, lr


def config(seed: int) -> AuditConfig:
    """The default gate; only what cannot change the verdict is switched off (the
    diagnostic global tests, per-class views, group interval resamples)."""
    return AuditConfig(seed=seed, global_tests=GlobalTestsConfig(
        tests=("skce_consistency", "ece_consistency")),
                       local=LocalConfig(per_class=False, group_ci_resamples=1))


def old_rule(result) -> bool:
    tests = {t.id: t for t in result.tests}
    local = tests["local_consistency"].params["members"]
    kernel = next(m["p_value"] for m in local if m["name"] == KERNEL_MEMBER)
    p = [tests["skce_consistency"].p_value, tests["ece_consistency"].p_value, kernel]
    return bool((adjust_pvalues(p, "holm") <= ALPHA).any())


def attribution_named(result) -> bool:
    rows = result.attribution.get("covariates", []) if result.attribution else []
    adjusted = [row.get("p_value_adjusted") for row in rows]
    return any(a is not None and a <= 0.01 for a in adjusted)


@dataclasses.dataclass
class Tally:
    runs: int = 0
    verdict: int = 0
    old: int = 0
    baselines: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3, int))
    named: int = 0
    named_and_fail: int = 0
    seconds: float = 0.0


def one_run(cell: Cell, rep: int, tally: Tally) -> None:
    rng = np.random.default_rng([rep, zlib.crc32(cell.name.encode())])
    y, p, covariates = simulate(cell, rng)
    data = CalibrationData.from_arrays(y, p, covariates=covariates)
    started = time.perf_counter()
    result = run_audit(data, config(rep))
    tally.seconds += time.perf_counter() - started
    tally.runs += 1
    fail = result.verdict is Status.FAIL
    tally.verdict += fail
    tally.old += old_rule(result)
    codes = level_codes(covariates)
    base = (binary_baselines(y, p, codes) if p.ndim == 1
            else multiclass_baselines(y, p, codes))
    tally.baselines += np.array(base) <= ALPHA
    if attribution_named(result):
        tally.named += 1
        tally.named_and_fail += fail


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    a = 1.0 - level
    low = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return low, high


def report(tallies: dict[str, Tally], args, started: float) -> str:
    lines = [
        "local_power_study.py: verdict FAIL rate (default gate) against local "
        f"miscalibration, alpha = {ALPHA}",
        f"arguments: --runs {args.runs} --cells {args.cells or 'all'}; wall time "
        f"{time.time() - started:.0f} s", "",
        f"{'cell':<24}{'runs':>5}{'verdict':>9}  {'95% CI':<15}{'old':>7}{'z-Bonf':>8}"
        f"{'chi2':>7}{'LR':>7}{'best':>7}{'ratio':>7}{'ok':>4}  {'agree':<12}{'s/run':>7}"]
    for cell in CELLS:
        t = tallies.get(cell.name)
        if t is None or not t.runs:
            continue
        rate = t.verdict / t.runs
        base = t.baselines / t.runs
        best = float(base.max())
        ratio = rate / best if best else float("nan")
        low, high = clopper_pearson(t.verdict, t.runs)
        agree = (f"{t.named_and_fail}/{t.named}" if t.named else "-")
        lines.append(
            f"{cell.name:<24}{t.runs:>5}{rate:>9.3f}  [{low:.2f}, {high:.2f}]  "
            f"{t.old / t.runs:>6.3f}{base[0]:>8.3f}{base[1]:>7.3f}{base[2]:>7.3f}{best:>7.3f}"
            f"{ratio:>7.2f}{'yes' if ratio >= 0.85 else 'NO':>4}  {agree:<12}"
            f"{t.seconds / t.runs:>7.2f}")
    lines += ["", "verdict: FAIL rate of the default gate; old: Holm over skce_consistency, "
              "ece_consistency, klce_consistency (the KLCE as the local primary); "
              "best: the best baseline; ratio: verdict / best (ok: >= 0.85); agree: data "
              "sets whose attribution names a covariate at adjusted p <= 0.01 and whose "
              "verdict FAILs / such data sets."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--cells", default=None, help="comma list of cell names")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    cells = [c for c in CELLS if not args.cells or c.name in args.cells.split(",")]
    started = time.time()
    tallies = {c.name: Tally() for c in cells}
    for rep in range(args.start, args.start + args.runs):
        for cell in cells:
            one_run(cell, rep, tallies[cell.name])
        if (rep + 1) % 10 == 0 or rep + 1 == args.start + args.runs:
            text = report(tallies, args, started)
            if args.out:
                with open(args.out, "w") as fh:
                    fh.write(text)
            print(text, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
