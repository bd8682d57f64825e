"""Power curves over (n, effect size) of the exact and the random-feature consistency tests.

Command (saved output: validation/results/power_curves.txt)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/power_curves.py \\
        --datasets 100
    python validation/power_curves.py --summary > validation/results/power_curves.txt

The data sets, tests and saved rows are those of ``benchmarks/scale_power.py`` (binary model,
a numeric and a categorical covariate; alternatives ``opposite``, biased in opposite
directions in two regions, and ``small_group``, a 5 % region under-predicted; ``B`` label
redraws, alpha = 0.05; exact and feature tests on the same data sets and the same redraw
seed). This script runs the grid below through it (resumable: data sets already saved in
``benchmarks/results/scale_power/`` are skipped) and prints the power as curves: for each
test and alternative, one row per ``n``, one column per effect size, ``exact / features``.

Grid: every effect size at 2,000 rows (the effect-size curve), and the middle effect of each
alternative (``opposite`` 0.1, ``small_group`` 0.1) at 5,000 and 20,000 rows (the n curve).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from scale_power import ALPHA, GRIDS, cell_path, run_cell  # noqa: E402

#: (n, alternative, index into the alternative's effect grid).
GRID = ([(2_000, kind, k) for kind in GRIDS for k in range(len(GRIDS[kind]))]
        + [(n, "opposite", 1) for n in (5_000, 20_000)]
        + [(n, "small_group", 2) for n in (5_000, 20_000)])


def run(datasets: int, block: int, resamples: int, largest: int) -> None:
    cells = [cell for cell in GRID if cell[0] <= largest]
    for start in range(0, datasets, block):
        for n, kind, k in cells:
            run_cell(n, kind, k, start, min(block, datasets - start), resamples)


def power(n: int, kind: str, delta: float, test: str) -> str:
    path = cell_path(n, kind, delta)
    if not path.exists():
        return "-"
    if len(path.read_text().splitlines()) < 2:
        return "-"
    rows = np.atleast_1d(np.genfromtxt(path, delimiter=",", names=True))
    if np.isnan(rows[f"{test}_exact"]).all():
        return "not run"
    total = rows.size
    k_exact = int((rows[f"{test}_exact"] <= ALPHA).sum())
    k_features = int((rows[f"{test}_features"] <= ALPHA).sum())
    return f"{k_exact / total:.2f} / {k_features / total:.2f} (N={total})"


def summary() -> None:
    print(f"power at alpha = {ALPHA}: exact / features (N data sets per cell; B and D as "
          f"saved by benchmarks/scale_power.py; 95% Clopper-Pearson half-width about "
          f"{0.5 * 1.96 / np.sqrt(100):.2f} at N = 100 and power 0.5; '-': cell not run yet, "
          f"the run resumes where it stopped)")
    for test in ("klce", "skce"):
        for kind, deltas in GRIDS.items():
            note = "  (E[y | p] = p: a null for the SKCE)" if (
                test == "skce" and kind == "opposite") else ""
            print(f"\n{test}_consistency, {kind}{note}")
            print(f"{'n':>7}  " + "".join(f"{'delta = ' + format(d, 'g'):>26}"
                                          for d in deltas))
            for n in sorted({cell[0] for cell in GRID}):
                print(f"{n:>7,}  " + "".join(f"{power(n, kind, d, test):>26}" for d in deltas))
    print("\nper-cell intervals, CPU seconds and the data sets where only one method "
          "rejects: benchmarks/results/scale_power.txt (the same data sets)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=int, default=100)
    parser.add_argument("--block", type=int, default=10)
    parser.add_argument("--resamples", type=int, default=100)
    parser.add_argument("--largest", type=int, default=20_000,
                        help="run only the cells with at most this many rows")
    parser.add_argument("--summary", action="store_true")
    args = parser.parse_args()
    if args.summary:
        summary()
    else:
        run(args.datasets, args.block, args.resamples, args.largest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
