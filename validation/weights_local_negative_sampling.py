"""Down-sampled negatives with covariates: the weighted local test keeps its level, the
unweighted one cannot (the sample is not the population).

A population with a numeric covariate ``x ~ N(0, 1)`` and a group ``g`` in {a, b, c};
``P(y = 1 | x, g) = sigmoid(z)`` with ``z = -2 + 0.8 x + 0.5 [g = a]`` (about 17 % events);
the model predicts ``p = sigmoid(z)``, calibrated on the population and within every
neighbourhood of ``(p, x, g)``. The evaluation sample keeps every positive and each
negative with probability ``r = 0.1`` (``negative_rate=0.1``). Under this null the
weighted local tests (``local_consistency``, the gate's local primary, and its kernel
member ``klce_consistency``) should reject at most ``alpha`` of the time; the unweighted
tests of the same samples should reject (their labels are not Bernoulli(p)). Power: a
model that misses the group effect, ``p = sigmoid(z - 0.3 [g = a] + 0.15)``: locally
miscalibrated (too low in group a, too high elsewhere) though close in the large.

Only the local stage runs (:class:`calaudit.audit.local_calibration.LocalCalibrationStage`,
diagnostics off): the global tests are validated by ``weights_negative_sampling.py``.

Usage: python validation/weights_local_negative_sampling.py [--reps 600] [--power-reps 200]
Output: validation/results/weights_local_negative_sampling.txt
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
POPULATION = 6_000
RESAMPLES = 199
TESTS = ("local_consistency", "klce_consistency")


def sample(rng: np.random.Generator, miscalibrated: bool, population: int = POPULATION):
    x = rng.normal(size=population)
    g = rng.choice(np.array(["a", "b", "c"]), population)
    z = -2.0 + 0.8 * x + 0.5 * (g == "a")
    y = (rng.random(population) < 1 / (1 + np.exp(-z))).astype(np.int64)
    model = z - 0.3 * (g == "a") + 0.15 if miscalibrated else z
    p = 1 / (1 + np.exp(-model))
    keep = (y == 1) | (rng.random(population) < RATE)
    return y[keep], p[keep], pd.DataFrame({"x": x[keep], "g": g[keep]})


#: The cases' titles in the output.
TITLES = {"null": "null: the model is calibrated on the population",
          "alt": "power: p = sigmoid(z - 0.3 [g = a] + 0.15) (misses the group effect)"}


def header(population: int, sizes: list[int], seed: int, method: str = "") -> str:
    """The first line of the output: the design and the samples' sizes."""
    return (f"population {population} rows, negatives kept at r = {RATE}; sample rows: "
            f"median {int(np.median(sizes))} (min {min(sizes)}, max {max(sizes)}); "
            f"covariates x (numeric), g (categorical); alpha = {ALPHA}, {RESAMPLES} label "
            f"redraws, {method + ', ' if method else ''}seed {seed}")


def p_values(y, p, frame, weighted: bool, seed: int, method: str = "auto"
             ) -> dict[str, float]:
    data = CalibrationData.from_arrays(y, p, covariates=frame,
                                       negative_rate=RATE if weighted else None)
    config = calaudit.AuditConfig(random_state=seed, alpha=ALPHA, method=method,
                                  local=LocalConfig(tests=TESTS, n_resamples=RESAMPLES,
                                                    diagnostics=False))
    out = LocalCalibrationStage().run(data, config, np.random.default_rng(seed))
    if method != "auto":
        assert all(t.params["computation"]["method"] == method for t in out.tests)
    return {t.id: t.p_value for t in out.tests}


def rate_line(label: str, fails: int, reps: int) -> str:
    low, high = stats.binomtest(fails, reps).proportion_ci(0.95, method="exact")
    return (f"{label:<52} reject {fails:>4}/{reps:<4} = {fails / reps:.3f}  "
            f"95% Clopper-Pearson [{low:.3f}, {high:.3f}]")


def run(reps: int, power_reps: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    counts = {(case, weighted, test): 0 for case in ("null", "alt")
              for weighted in (True, False) for test in TESTS}
    sizes = []
    for case, n_sets in (("null", reps), ("alt", power_reps)):
        for rep in range(n_sets):
            y, p, frame = sample(rng, miscalibrated=case == "alt")
            sizes.append(y.size)
            for weighted in (True, False):
                if not weighted and rep >= power_reps:
                    continue
                found = p_values(y, p, frame, weighted, rep)
                for test in TESTS:
                    counts[(case, weighted, test)] += found[test] <= ALPHA
    lines = [header(POPULATION, sizes, seed), ""]
    for case, n_sets in (("null", reps), ("alt", power_reps)):
        lines.append(TITLES[case])
        for test in TESTS:
            lines.append(rate_line(f"  weighted {test} (negative_rate 0.1)",
                                   counts[(case, True, test)], n_sets))
            lines.append(rate_line(f"  unweighted {test} of the same samples",
                                   counts[(case, False, test)], power_reps))
    return lines


def cli(run_sets, reps: int, power_reps: int, name: str) -> None:
    """Parse ``--reps``, ``--power-reps``, ``--seed``, ``--out``, run ``run_sets`` and write
    its lines with the runtime and commit to ``--out`` (default ``results/<name>``)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=reps)
    parser.add_argument("--power-reps", type=int, default=power_reps)
    parser.add_argument("--seed", type=int, default=20251128)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / name))
    args = parser.parse_args()
    started = time.perf_counter()
    lines = run_sets(args.reps, args.power_reps, args.seed)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent, check=False).stdout.strip()
    lines.append(f"\nruntime {time.perf_counter() - started:.0f} s, calaudit at commit "
                 f"{commit or 'unknown'}")
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text, end="")


def main() -> None:
    cli(run, 600, 200, "weights_local_negative_sampling.txt")


if __name__ == "__main__":
    main()
