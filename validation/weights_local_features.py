"""The weighted local tests on the random-feature path keep their level: negatives
kept at 10 %, covariates, ``method = features``.

A population with a numeric covariate ``x ~ N(0, 1)`` and a group ``g`` in {a, b, c};
``P(y = 1 | x, g) = sigmoid(z)`` with ``z = -2 + 0.8 x + 0.5 [g = a]`` (about 17 % events);
the model predicts ``p = sigmoid(z)``, calibrated on the population and within every
neighbourhood of ``(p, x, g)``. Each evaluation sample keeps every positive of a
population of 30,000 and each negative with probability ``r = 0.1`` (``negative_rate=0.1``,
about 7,500 rows). The local stage runs on random features (``method = features``,
:mod:`calaudit.local.weighted_features`): ``local_consistency`` (the aggregate of the
weighted KLCE^2 and the score members, from the same redraws) and its kernel member
``klce_consistency`` should reject at most ``alpha`` of the time (the Monte-Carlo tests
are exact-conditional: labels redrawn from ``p / (p + r (1 - p))``, weights following
the redrawn label). Power: a model that misses the group effect,
``p = sigmoid(z - 0.3 [g = a] + 0.15)``.

Only the local stage runs (diagnostics off).

Usage: python validation/weights_local_features.py [--reps 300] [--power-reps 60]
Output: validation/results/weights_local_features.txt
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import calaudit  # noqa: E402
from calaudit import CalibrationData  # noqa: E402
from calaudit.audit.config import LocalConfig  # noqa: E402
from calaudit.audit.local_calibration import LocalCalibrationStage  # noqa: E402

RATE = 0.1
ALPHA = 0.05
POPULATION = 30_000
RESAMPLES = 199
TESTS = ("local_consistency", "klce_consistency")


def sample(rng: np.random.Generator, miscalibrated: bool):
    x = rng.normal(size=POPULATION)
    g = rng.choice(np.array(["a", "b", "c"]), POPULATION)
    z = -2.0 + 0.8 * x + 0.5 * (g == "a")
    y = (rng.random(POPULATION) < 1 / (1 + np.exp(-z))).astype(np.int64)
    model = z - 0.3 * (g == "a") + 0.15 if miscalibrated else z
    p = 1 / (1 + np.exp(-model))
    keep = (y == 1) | (rng.random(POPULATION) < RATE)
    return y[keep], p[keep], pd.DataFrame({"x": x[keep], "g": g[keep]})


def p_values(y, p, frame, weighted: bool, seed: int) -> dict[str, float]:
    data = CalibrationData.from_arrays(y, p, covariates=frame,
                                       negative_rate=RATE if weighted else None)
    config = calaudit.AuditConfig(random_state=seed, alpha=ALPHA, method="features",
                                  local=LocalConfig(
        tests=TESTS, n_resamples=RESAMPLES, diagnostics=False))
    out = LocalCalibrationStage().run(data, config, np.random.default_rng(seed))
    assert all(t.params["computation"]["method"] == "features" for t in out.tests)
    return {t.id: t.p_value for t in out.tests}


def rate_line(label: str, fails: int, reps: int) -> str:
    low, high = stats.binomtest(fails, reps).proportion_ci(0.95, method="exact")
    return (f"{label:<52} reject {fails:>4}/{reps:<4} = {fails / reps:.3f}  "
            f"95% Clopper-Pearson [{low:.3f}, {high:.3f}]")


def run(reps: int, power_reps: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    counts = {(case, test): 0 for case in ("null", "alt") for test in TESTS}
    sizes = []
    for case, n_sets in (("null", reps), ("alt", power_reps)):
        for rep in range(n_sets):
            y, p, frame = sample(rng, miscalibrated=case == "alt")
            sizes.append(y.size)
            found = p_values(y, p, frame, True, rep)
            for test in TESTS:
                counts[(case, test)] += found[test] <= ALPHA
    lines = [f"population {POPULATION} rows, negatives kept at r = {RATE}; sample rows: "
             f"median {int(np.median(sizes))} (min {min(sizes)}, max {max(sizes)}); "
             f"covariates x (numeric), g (categorical); alpha = {ALPHA}, {RESAMPLES} label "
             f"redraws, method = features, seed {seed}", ""]
    for case, title, n_sets in (
            ("null", "null: the model is calibrated on the population", reps),
            ("alt", "power: p = sigmoid(z - 0.3 [g = a] + 0.15) (misses the group effect)",
             power_reps)):
        lines.append(title)
        for test in TESTS:
            lines.append(rate_line(f"  weighted {test} (negative_rate 0.1, features)",
                                   counts[(case, test)], n_sets))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--power-reps", type=int, default=60)
    parser.add_argument("--seed", type=int, default=20251128)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"
                                             / "weights_local_features.txt"))
    args = parser.parse_args()
    started = time.perf_counter()
    lines = run(args.reps, args.power_reps, args.seed)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent, check=False).stdout.strip()
    lines.append(f"\nruntime {time.perf_counter() - started:.0f} s, calaudit at commit "
                 f"{commit or 'unknown'}")
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
