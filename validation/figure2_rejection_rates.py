"""Reproduction of Widmann et al. (2019), Figure 2, at reduced scale: empirical rejection
rates of every global calibration test under the generative models M1 (calibrated), M2 and
M3 (miscalibrated) of section 7.

Command (from the repository root; CPU heavy, about 10-20 minutes on 2 shared cores):

    OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/figure2_rejection_rates.py \
        --datasets 1000 --resamples 200 --workers 2 > validation/figure2_rejection_rates.txt

Writes ``validation/figure2_rejection_rates.csv`` (every p-value), the table on stdout and
``validation/figure2_rejection_rates.png`` (rejection rate against alpha, as Figure 2).

Models (m = 10 classes, n = 250 rows, predictions p_i ~ Dir(0.1, ..., 0.1)):
M1: y_i ~ Cat(p_i); M2: y_i ~ 0.5 Cat(p_i) + 0.5 Cat(e_1); M3: y_i ~ Cat(0.1, ..., 0.1).

Each data set goes through calaudit's production stages (``SkceStage``,
``EceFamilyStage``) with the default settings (exponential TV kernel, median heuristic,
15 uniform bins for the top-label ECE), plus the paper's ECE test: consistency resampling
of the canonical ECE with 10 bins per dimension (``ece_canonical_consistency``; calaudit
keeps predictions fixed, the paper also resampled them). Rejection rates are given with
95% Wilson intervals. Expected: under M1 the asymptotic and consistency tests reject at
about alpha and the bounds at most alpha; under M2 and M3 the quadratic asymptotic test
has power near 1.
"""

from __future__ import annotations

import argparse
import csv
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from calaudit.audit.battery import EceFamilyStage, SkceStage
from calaudit.audit.config import AuditConfig
from calaudit.data.dataset import CalibrationData
from calaudit.inference.consistency import canonical_ece_consistency_test
from calaudit.metrics.ece_variants import CanonicalBins
from calaudit.numerics.intervals import wilson_interval

HERE = Path(__file__).resolve().parent
ALPHAS = (0.01, 0.05, 0.1)
TESTS = ("skce_b_bound", "skce_uq_bound", "skce_ul_bound", "skce_ul_asymptotic",
         "skce_uq_asymptotic", "skce_consistency", "ece_consistency", "ece_canonical_consistency")
M, N = 10, 250


def sample(model: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Predictions and labels from M1, M2 or M3."""
    probs = rng.dirichlet(np.full(M, 0.1), size=N)
    if model == "M3":
        return probs, rng.integers(0, M, size=N)
    cumulative = np.cumsum(probs, axis=1)
    labels = (rng.random(N)[:, None] >= cumulative[:, :-1]).sum(axis=1)
    if model == "M2":
        labels = np.where(rng.random(N) < 0.5, labels, 0)
    return probs, labels


def pvalues(probs, labels, config, rng) -> dict[str, float]:
    data = CalibrationData(probs, labels, tuple(str(k) for k in range(M)))
    stage_rng, canonical_rng = rng.spawn(2)
    out = {}
    for stage in (SkceStage(), EceFamilyStage()):
        for test in stage.run(data, config, stage_rng).tests:
            out[test.id] = test.p_value
    bins = CanonicalBins.build(labels, probs, 10)
    result = canonical_ece_consistency_test(bins, float(bins.ece()), canonical_rng,
                                            config.n_resamples)
    out["ece_canonical_consistency"] = result.p_value
    return out


def one_dataset(job: tuple[str, np.random.SeedSequence, int]) -> dict:
    """p-values of every test on one data set (its own seed: results do not depend on the
    number of workers)."""
    model, seed, resamples = job
    rng = np.random.default_rng(seed)
    probs, labels = sample(model, rng)
    return {"model": model, **pvalues(probs, labels, AuditConfig(n_resamples=resamples), rng)}


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 4.2))
    grid = np.linspace(0.0, 1.0, 201)
    for axis_index, model in enumerate(("M1", "M2", "M3")):
        ax = fig.add_subplot(1, 3, axis_index + 1)
        for test in TESTS:
            p = np.array([r[test] for r in rows if r["model"] == model])
            ax.plot(grid, [(p <= a).mean() for a in grid], label=test, lw=1.2)
        ax.plot([0, 1], [0, 1], "k--", lw=0.8)
        ax.set_title(f"{model}: rejection rate vs significance level")
        ax.set_xlabel("alpha")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.01)
        if axis_index == 0:
            ax.set_ylabel("empirical rejection rate")
    fig.axes[-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=500)
    parser.add_argument("--seed", type=int, default=2019)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    jobs = [(model, seed, args.resamples) for model in ("M1", "M2", "M3")
            for seed in np.random.SeedSequence([args.seed, int(model[1])]).spawn(args.datasets)]
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        rows = list(pool.map(one_dataset, jobs, chunksize=20))
    elapsed = time.perf_counter() - started
    with open(HERE / "figure2_rejection_rates.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["model", *TESTS])
        writer.writeheader()
        writer.writerows(rows)
    print(f"# {args.datasets} data sets per model, n = {N}, m = {M}, Dir(0.1) predictions, "
          f"{args.resamples} resamples per resampling test, seed {args.seed}; "
          f"{elapsed:.0f} s")
    print("# rejection rate [95% Wilson interval] at each alpha")
    header = f"{'model':5s} {'test':27s}" + "".join(f" {'alpha=' + str(a):>24s}" for a in ALPHAS)
    print(header)
    for model in ("M1", "M2", "M3"):
        for test in TESTS:
            p = np.array([r[test] for r in rows if r["model"] == model])
            cells = []
            for a in ALPHAS:
                k = int(np.count_nonzero(p <= a))
                low, high = wilson_interval(k, p.size)
                cells.append(f"{k / p.size:.3f} [{float(low):.3f}, {float(high):.3f}]")
            print(f"{model:5s} {test:27s}" + "".join(f" {c:>24s}" for c in cells))
    plot(rows, HERE / "figure2_rejection_rates.png")


if __name__ == "__main__":
    main()
