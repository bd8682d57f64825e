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

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from weights_local_negative_sampling import (  # noqa: E402
    ALPHA,
    TESTS,
    TITLES,
    cli,
    header,
    p_values,
    rate_line,
    sample,
)

POPULATION = 30_000


def run(reps: int, power_reps: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    counts = {(case, test): 0 for case in ("null", "alt") for test in TESTS}
    sizes = []
    for case, n_sets in (("null", reps), ("alt", power_reps)):
        for rep in range(n_sets):
            y, p, frame = sample(rng, case == "alt", POPULATION)
            sizes.append(y.size)
            found = p_values(y, p, frame, True, rep, method="features")
            for test in TESTS:
                counts[(case, test)] += found[test] <= ALPHA
    lines = [header(POPULATION, sizes, seed, "method = features"), ""]
    for case, n_sets in (("null", reps), ("alt", power_reps)):
        lines.append(TITLES[case])
        for test in TESTS:
            lines.append(rate_line(f"  weighted {test} (negative_rate 0.1, features)",
                                   counts[(case, test)], n_sets))
    return lines


def main() -> None:
    cli(run, 300, 60, "weights_local_features.txt")


if __name__ == "__main__":
    main()
