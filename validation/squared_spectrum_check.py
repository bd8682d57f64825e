"""The truncated (pivoted-Cholesky) kernel spectrum against the exact eigendecomposition
inside the whole squared-error pipeline, on CIFAR-10 predictions.

    nice -n 10 python validation/squared_spectrum_check.py [--rows 3000]
        > validation/squared_spectrum_check.txt

KKR (eq. 29) and UKKR (eq. 32) run through ``kernel_spectrum``: ``low_rank`` (calaudit's
default: pivoted Cholesky stopped at residual diagonal 1e-10, eigenvalues below treated as
0) or ``exact`` (``numpy.linalg.eigh`` of the n x n training kernel matrix, O(n^3)). For
the first ``--rows`` images of three networks, both pipelines (same split, seed 0, full
appendix-B grids) are run for TCE_2 and CCE_2; the table gives the largest relative
difference over all ridge values of the validation risks and, for each estimator's best
value, of the test estimate, plus the ranks and times. Skips cleanly without the datasets.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from calaudit.squared import Settings, estimate_squared_error

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets" / "cifar10"
for candidate in (DATA, Path("/work/shared/datasets/cifar10")):
    if candidate.is_dir():
        DATA = candidate
        break


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3000)
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"skipped: {DATA} not found (the shared datasets are not available)")
        return 0
    labels = np.loadtxt(DATA / "labels.csv", delimiter=",").astype(np.int64)[: args.rows] - 1
    print(f"# first {args.rows} CIFAR-10 images; kkr/ukkr with the exact and the low-rank "
          "spectrum; seed 0")
    print(f"{'network':13s} {'target':6s} {'estimator':9s} {'max rel diff risk':>18s} "
          f"{'rel diff estimate':>18s} {'best (exact/low)':>20s} {'rank':>10s} "
          f"{'cpu exact':>10s} {'cpu low':>8s}")
    for network in ("densenet121", "resnet18", "vgg11_bn"):
        probs = np.loadtxt(DATA / f"{network}.csv", delimiter=",")[: args.rows]
        probs /= probs.sum(axis=1, keepdims=True)
        for target in ("tce2", "cce2"):
            runs = {}
            for method in ("exact", "low_rank"):
                start = time.process_time()
                runs[method] = (estimate_squared_error(
                    labels, probs, target, estimators=("kkr", "ukkr"), rng=0,
                    settings=Settings(spectrum=method)), time.process_time() - start)
            exact, low = runs["exact"][0], runs["low_rank"][0]
            ranks = low.diagnostics["kernel_spectrum"]["rank"]
            for name in ("kkr", "ukkr"):
                pairs = [(a.risk, b.risk) for a, b in zip(exact.candidates, low.candidates,
                                                          strict=True) if a.estimator == name]
                risk_diff = max(abs(b - a) / abs(a) for a, b in pairs)
                e, lo = exact.best(name), low.best(name)
                est_diff = abs(lo.estimate - e.estimate) / abs(e.estimate)
                print(f"{network:13s} {target:6s} {name:9s} {risk_diff:18.2e} {est_diff:18.2e} "
                      f"{e.candidate.value:9.0e}/{lo.candidate.value:9.0e} "
                      f"{min(ranks):4d}-{max(ranks):<4d} {runs['exact'][1]:10.1f} "
                      f"{runs['low_rank'][1]:8.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
