"""Risks and estimates of the squared calibration errors on 14 CIFAR-10 networks, shaped
like Gruber & Bach's Tables 1 (TCE_2) and 3/5 (CCE_2) and Figures 2-4.

    nice -n 10 python validation/squared_cifar10.py > validation/squared_cifar10.txt

For every network of ``../shared/datasets/cifar10`` (n = 10,000 test images, 10 classes;
labels.csv is 1-based) the pipeline of sec. 3.2.2 / 5.2 runs with calaudit's defaults:
seed 0, 80/20 split, 5-fold cross-validation over the appendix-B grids, ensemble estimate
on the 20 % test split. Tables:

* risk tables: validation ``sqrt(R) x 100`` of each estimator at its best hyperparameter
  (mean over folds; +- is the standard error over folds, ``se(R) / (2 sqrt(R))``), and
  for TCE_2 also 15 equal-width bins without tuning (``bin15``), as in Table 1;
* estimate tables: ``CE_2 x 100 = sqrt(estimate) x 100`` of each estimator on the test
  split (+- from the fold models' standard error, same delta method); the chosen
  estimator (smallest risk) is marked with ``*``.

The paper's networks (LeNet-5, DenseNet-40, ...) differ from these, so the numbers are
ours, not a reproduction of theirs. For CCE_2, ``bin`` is calaudit's per-dimension grid
binning (the paper has no canonical binning). Skips cleanly when the datasets are absent.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

from calaudit.squared import estimate_squared_error

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets" / "cifar10"
for candidate in (DATA, Path("/work/shared/datasets/cifar10")):
    if candidate.is_dir():
        DATA = candidate
        break
ESTIMATORS = ("bin", "kde", "kkr", "ukkr")


def root_pm(value: float, se: float) -> str:
    """``sqrt(value) x 100 +- se / (2 sqrt(value)) x 100``."""
    if value <= 0:
        return f"{'<=0':>7} {'':>6}"
    root = math.sqrt(value)
    return f"{100 * root:7.3f} +-{100 * se / (2 * root):5.3f}"


def table(title: str, rows: list[tuple[str, list[str]]], columns: list[str]) -> None:
    print(f"\n## {title}")
    print(f"{'network':15s}" + "".join(f"{c:>17s}" for c in columns))
    for name, cells in rows:
        print(f"{name:15s}" + "".join(f"{c:>17s}" for c in cells))


def main() -> int:
    if not DATA.is_dir():
        print(f"skipped: {DATA} not found (the shared datasets are not available)")
        return 0
    labels = np.loadtxt(DATA / "labels.csv", delimiter=",").astype(np.int64) - 1
    networks = sorted(p.stem for p in DATA.glob("*.csv") if p.stem != "labels")
    print(f"# {len(networks)} CIFAR-10 networks, n = {labels.size}; seed 0; "
          "80/20 split, 5-fold CV, appendix-B grids")
    results: dict[str, dict] = {}
    for network in networks:
        probs = np.loadtxt(DATA / f"{network}.csv", delimiter=",")
        probs /= probs.sum(axis=1, keepdims=True)  # CSV rounding (rows sum to 1 +- 4e-7)
        results[network] = {}
        for target in ("tce2", "cce2"):
            start = time.process_time()
            result = estimate_squared_error(labels, probs, target, rng=0)
            results[network][target] = result
            print(f"# {network} {target}: chosen {result.estimator} "
                  f"({result.chosen.candidate.parameter} = {result.chosen.candidate.value:.3g})"
                  f", cpu {time.process_time() - start:.0f} s", flush=True)
        accuracy = np.mean(probs.argmax(axis=1) == labels)
        results[network]["accuracy"] = accuracy

    for target, title in (("tce2", "TCE_2"), ("cce2", "CCE_2")):
        rows, estimates = [], []
        for network in networks:
            result = results[network][target]
            cells = []
            if target == "tce2":
                fifteen = next(c for c in result.candidates
                               if c.estimator == "bin" and c.value == 15.0)
                cells.append(root_pm(fifteen.risk, fifteen.risk_se))
            cells += [root_pm(result.best(e).candidate.risk, result.best(e).candidate.risk_se)
                      for e in ESTIMATORS]
            rows.append((network, cells))
            marks = [root_pm(result.best(e).estimate, result.best(e).estimate_se)
                     + ("*" if e == result.estimator else " ") for e in ESTIMATORS]
            estimates.append((network, marks))
        columns = (["bin15"] if target == "tce2" else []) + list(ESTIMATORS)
        table(f"validation sqrt(risk) x 100 of {title} estimators (lower is better)",
              rows, columns)
        table(f"{title} x 100 = sqrt(estimate) x 100 on the test split (* = chosen)",
              estimates, list(ESTIMATORS))
        hyper = [(network, [f"{results[network][target].best(e).candidate.value:.3g}"
                            for e in ESTIMATORS]) for network in networks]
        table(f"{title}: best hyperparameter (n_bins / bandwidth / lambda scale)", hyper,
              list(ESTIMATORS))
    print("\n## accuracy and the chosen estimators")
    for network in networks:
        r = results[network]
        print(f"{network:15s} accuracy {r['accuracy']:.4f}  TCE_2 -> {r['tce2'].estimator:5s}"
              f" {100 * r['tce2'].root:6.3f}   CCE_2 -> {r['cce2'].estimator:5s}"
              f" {100 * r['cce2'].root:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
