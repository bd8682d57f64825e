"""Power and CPU time of the exact vs random-feature consistency tests.

Binary model, covariates ``age`` (numeric, U(20, 80)) and ``region`` (categorical A/B/C/D
with shares 37.5/37.5/20/5 %); predictions ``p = sigmoid(-1 + 0.03 (age - 50) + N(0, 1))``.
Two alternatives, each with an effect size ``delta``:

* ``opposite``: true event rate ``p + s delta p (1 - p)`` with ``s = +1`` in region A
  (under-predicted), ``-1`` in B (over-predicted), 0 in C and D. A and B have equal shares,
  so ``E[y | p] = p``: the model is calibrated given its predictions and only a test that
  looks at the covariates (KLCE) can see it; the SKCE rows show the level of the SKCE test
  on a model calibrated in its own sense;
* ``small_group``: rows of region D (5 %) have true rate ``clip(p + delta)``, the rest are
  calibrated.

Per data set, four tests at ``B`` resamples and alpha = 0.05, each on the same kernel for
both ways of computing it (median-heuristic bandwidths as the stages choose them):

* ``klce_consistency`` exact: the pairwise engine (float64 statistic, float32 resamples as
  the stage's default ``resample_dtype``), :func:`calaudit.local.resampling.consistency_test`;
  from :data:`ONE_PASS_N` rows one double-precision pass with the observed residuals as its
  lead column (the same p-value, one kernel pass fewer);
* ``klce_consistency`` features: :func:`calaudit.inference.feature_tests.
  feature_consistency_test` with ``D`` by the size rule (:func:`calaudit.numerics.features.
  default_n_features`);
* ``skce_consistency`` exact (exponential-TV kernel): the ``SKCE_uq`` statistic and
  :func:`calaudit.inference.consistency.skce_consistency_test`;
* ``skce_consistency`` features: :class:`calaudit.inference.feature_tests.SkceFeatures` one pass
  (``D`` by the size rule).

Under ``opposite`` at ``n >= 20,000`` the SKCE pair is not run (CPU; it is a null for the
SKCE there). CPU seconds of this process per test (the kernel choice, shared by both, is not timed;
the machine is shared, so CPU time is the figure to read, not wall time). The script also
prints what ``method = "auto"`` picks at each ``n`` for the audit's default resamples
(:func:`calaudit.inference.method.choose_method`).

Resumable and splittable: data set ``i`` of a cell ``(n, alternative, delta)`` comes from the
seed ``(n, alternative, delta index, i)``; results are appended to
``benchmarks/results/scale_power/<n>_<alternative>_<delta>.csv`` and indices already there
are skipped. ``--summary`` prints the table from the saved files.

Commands::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/scale_power.py \\
        --n 2000,5000 --datasets 100
    python benchmarks/scale_power.py --summary > benchmarks/results/scale_power.txt
"""

from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from scipy import stats

from calaudit.data.dataset import CalibrationData
from calaudit.inference.consistency import skce_consistency_test
from calaudit.inference.feature_tests import SkceFeatures, feature_consistency_test
from calaudit.inference.method import MethodChoice, choose_method
from calaudit.local.bandwidth import choose_bandwidth
from calaudit.local.encoding import encode_covariates
from calaudit.local.features import product_features
from calaudit.local.kernel import product_gram
from calaudit.local.klce import klce2, prediction_features, residuals
from calaudit.local.resampling import consistency_test
from calaudit.metrics.skce import choose_kernel, quadratic_terms, residual_gram
from calaudit.numerics.features import default_n_features
from calaudit.numerics.grams import cached

ALPHA = 0.05
OUT = Path(__file__).parent / "results" / "scale_power"
GRIDS = {"opposite": (0.05, 0.1, 0.2, 0.4), "small_group": (0.03, 0.06, 0.1, 0.15)}
TESTS = ("klce_exact", "klce_features", "skce_exact", "skce_features")
SHARES = (0.375, 0.375, 0.2, 0.05)
#: From this ``n`` the SKCE pair is not run under ``opposite`` (a null for the SKCE).
SKIP_SKCE_OPPOSITE = 20_000
#: From this ``n`` the exact KLCE test is one double-precision pass with the observed
#: residuals as a lead column (what the single-precision pass would switch to there,
#: :func:`calaudit.numerics.resampling.pass_dtype`, without the separate pass for the
#: observed statistic); below it, the audit's way (statistic pass + float32 resampling).
ONE_PASS_N = 20_000


def make(rng: np.random.Generator, n: int, kind: str, delta: float) -> CalibrationData:
    """One data set of alternative ``kind`` with effect ``delta`` (module docstring)."""
    age = rng.uniform(20, 80, n)
    region = rng.choice(4, n, p=SHARES)
    p = 1 / (1 + np.exp(-(-1 + 0.03 * (age - 50) + rng.normal(0, 1, n))))
    if kind == "opposite":
        sign = np.select([region == 0, region == 1], [1.0, -1.0], 0.0)
        truth = p + sign * delta * p * (1 - p)
    else:
        truth = np.where(region == 3, np.clip(p + delta, 0, 1), p)
    y = (rng.random(n) < truth).astype(int)
    names = np.array(["A", "B", "C", "D"])[region]
    return CalibrationData.from_arrays(y, p, covariates={"age": age, "region": names})


def timed(fn):
    start = time.process_time()
    value = fn()
    return value, time.process_time() - start


def four_tests(data: CalibrationData, rng: np.random.Generator, b: int,
               skce: bool = True) -> dict[str, float]:
    """p-values, ``D`` and CPU seconds of the four tests on one data set (``skce=False``:
    the SKCE pair is left out, NaN)."""
    n = data.n
    x = prediction_features(data.y_proba)
    enc = encode_covariates(data.covariates, standardize=True)
    pb = choose_bandwidth(x, None, rng, 2000)
    cb = choose_bandwidth(enc.features, None, rng, 2000, enc.blocks)
    gram = product_gram(x, pb.gamma, enc.features, cb.gamma)
    r = residuals(data.y_true, data.y_proba)
    proba = data.y_proba[:, 1].copy()
    choice = choose_kernel(data.y_proba, "exponential", None, exact_max_n=5_000, rng=rng)
    d = default_n_features(n, b)
    seed = int(rng.integers(2**62))
    draw_seed = int(rng.integers(2**62))

    def klce_exact():
        if n >= ONE_PASS_N:  # the observed residuals ride along in the double-precision pass
            return consistency_test(gram, r, proba, np.random.default_rng(draw_seed),
                                    b).p_value
        stat = klce2(gram, r)
        return consistency_test(gram, r, proba, np.random.default_rng(draw_seed), b,
                                statistic=stat, dtype=np.float32).p_value

    def klce_features():
        ff = product_features(gram.features, d, seed)
        return feature_consistency_test(ff, gram.features, r, proba,
                                        np.random.default_rng(draw_seed), b).p_value

    def skce_exact():
        kernel = choice.kernel
        stat = quadratic_terms(residual_gram(kernel, data.y_proba, data.residuals)).unbiased
        return skce_consistency_test(cached(kernel.on(data.y_proba)), data.y_proba, stat,
                                     np.random.default_rng(draw_seed), b).p_value

    def skce_features():
        comp = MethodChoice("features", "features", "benchmark", d, seed)
        feats = SkceFeatures.build(choice, comp, data.y_proba, data.residuals)
        return feats.one_pass(np.random.default_rng(draw_seed), None, b).consistency.p_value

    out: dict[str, float] = {"n_features": d}
    for name, fn in zip(TESTS, (klce_exact, klce_features, skce_exact, skce_features)):
        if not skce and name.startswith("skce"):
            out[name] = out[f"cpu_{name}"] = float("nan")
            continue
        out[name], out[f"cpu_{name}"] = timed(fn)
    return out


def cell_path(n: int, kind: str, delta: float) -> Path:
    return OUT / f"{n}_{kind}_{delta:g}.csv"


def run_cell(n: int, kind: str, k: int, start: int, count: int, b: int) -> None:
    delta = GRIDS[kind][k]
    path = cell_path(n, kind, delta)
    columns = ["index", "n_features", *TESTS, *(f"cpu_{t}" for t in TESTS)]
    done = {int(line.split(",")[0]) for line in path.read_text().splitlines()[1:]} \
        if path.exists() else set()
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        path.write_text(",".join(columns) + ",resamples\n")
    for i in range(start, start + count):
        if i in done:
            continue
        rng = np.random.default_rng([n, 0 if kind == "opposite" else 1, k, i])
        # under ``opposite`` E[y | p] = p: a null for the SKCE, left out at large n for CPU
        res = four_tests(make(rng, n, kind, delta), rng, b,
                         skce=not (kind == "opposite" and n >= SKIP_SKCE_OPPOSITE))
        res["index"] = i
        with path.open("a") as fh:
            fh.write(",".join(f"{res[c]:.6g}" for c in columns) + f",{b}\n")


def auto_choices(n: int) -> str:
    """What ``method = auto`` picks for the audit's default resamples at ``n`` rows."""
    config = SimpleNamespace(method="auto", exact_budget_seconds=10.0, n_features=None)
    rng = np.random.default_rng(0)
    local = choose_method(config, n, 500, rng)
    skce = choose_method(config, n, 1000, rng, exact_possible=n <= 20_000)
    return (f"auto at n = {n:,} (binary): klce_consistency (B = 500) -> {local.method} "
            f"(estimated exact {local.extra['estimated_exact_seconds']:.1f} s), "
            f"skce_consistency (B = 1,000) -> {skce.method} "
            f"(estimated exact {skce.extra['estimated_exact_seconds']:.1f} s)")


def interval(k: int, total: int) -> str:
    low = stats.beta.ppf(0.025, k, total - k + 1) if k > 0 else 0.0
    high = stats.beta.ppf(0.975, k + 1, total - k) if k < total else 1.0
    return f"[{low:.2f}, {high:.2f}]"


def summary() -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent).stdout.strip()
    print(f"power of the consistency tests at alpha = {ALPHA}, exact vs random features "
          f"(D by the size rule), same data sets, same label-redraw seed; 95% "
          f"Clopper-Pearson intervals; CPU seconds per test; code at {commit}")
    for path in sorted(OUT.glob("*.csv"), key=lambda p: (int(p.stem.split("_")[0]),
                                                          p.stem.split("_", 1)[1])):
        rows = np.genfromtxt(path, delimiter=",", names=True)
        rows = np.atleast_1d(rows)
        if rows.size == 0:
            continue
        n, rest = path.stem.split("_", 1)
        kind, delta = rest.rsplit("_", 1)
        total = len(rows)
        print(f"n = {int(n):>6,}  {kind:<11} delta = {delta:<5} data sets {total:>3}  "
              f"B = {int(rows['resamples'][0])}  D = {int(rows['n_features'][0])}")
        for test in ("klce", "skce"):
            if np.isnan(rows[f"{test}_exact"]).all():
                print(f"    {test}_consistency  not run (a null for the SKCE; CPU)")
                continue
            parts = []
            for way in ("exact", "features"):
                name = f"{test}_{way}"
                k = int((rows[name] <= ALPHA).sum())
                parts.append(f"{way:<8} {k / total:.2f} {interval(k, total)} "
                             f"cpu {rows[f'cpu_{name}'].mean():6.3f} s")
            both = rows[f"{test}_exact"] <= ALPHA, rows[f"{test}_features"] <= ALPHA
            only = f"only exact {int((both[0] & ~both[1]).sum())}, only features " \
                   f"{int((~both[0] & both[1]).sum())}"
            print(f"    {test}_consistency  " + "   ".join(parts) + f"   ({only})")
    for n in (2_000, 5_000, 20_000, 50_000):
        print(auto_choices(n))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", default="2000,5000,20000")
    parser.add_argument("--kinds", default="opposite,small_group")
    parser.add_argument("--effects", default="0,1,2,3",
                        help="indices into each alternative's effect grid")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--datasets", type=int, default=100)
    parser.add_argument("--block", type=int, default=10)
    parser.add_argument("--resamples", type=int, default=100)
    parser.add_argument("--summary", action="store_true")
    args = parser.parse_args()
    if args.summary:
        summary()
        return 0
    cells = [(int(n), kind, int(k)) for n in args.n.split(",")
             for kind in args.kinds.split(",") for k in args.effects.split(",")]
    stop = args.start + args.datasets
    for block in range(args.start, stop, args.block):
        for n, kind, k in cells:
            run_cell(n, kind, k, block, min(args.block, stop - block), args.resamples)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
