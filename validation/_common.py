"""Helpers shared by the validation scripts (not part of the package)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
from scipy import stats

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path | None:
    """``$CALAUDIT_SHARED`` or the project's ``shared`` directory next to the checkout."""
    candidates = [os.environ.get("CALAUDIT_SHARED"), REPO.parent / "shared",
                  REPO.parent.parent / "shared"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "datasets").is_dir():
            return Path(candidate)
    return None


def require_shared() -> Path:
    """The shared directory, or exit 0 with a message (scripts skip cleanly without it)."""
    found = shared_dir()
    if found is None:
        print("shared datasets not found (set CALAUDIT_SHARED); skipping")
        sys.exit(0)
    return found


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def clopper_pearson(k: int, n: int, level: float = 0.99) -> tuple[float, float]:
    """Clopper-Pearson interval at ``level`` of a rate of ``k`` events in ``n`` trials."""
    a = (1 - level) / 2
    low = stats.beta.ppf(a, k, n - k + 1) if k > 0 else 0.0
    high = stats.beta.ppf(1 - a, k + 1, n - k) if k < n else 1.0
    return float(low), float(high)


def negatives_kept(rng: np.random.Generator, rows: int, design: bool):
    """A calibrated sample of about ``rows`` rows, ``p ~ U(0.02, 0.6)``, every positive kept
    and negatives at rate 0.1 (with design weights ``U(0.5, 2)`` when ``design``): ``y``,
    ``p`` and its :class:`~calaudit.data.weights.SampleWeights`."""
    from calaudit.data.weights import SampleWeights

    size = int(rows / (0.31 + 0.1 * 0.69))  # about ``rows`` rows kept
    p = rng.uniform(0.02, 0.6, size)
    y = (rng.random(size) < p).astype(np.int64)
    keep = (y == 1) | (rng.random(size) < 0.1)
    m = int(keep.sum())
    d = rng.uniform(0.5, 2.0, m) if design else np.ones(m)
    return y[keep], p[keep], SampleWeights(d, "design" if design else "frequency",
                                           np.full(m, 0.1))


def binomial_interval(reps: int, alpha: float, level: float = 0.95) -> tuple[float, float]:
    """Central ``level`` range of the rejection rate of a level-``alpha`` test over ``reps``
    independent repetitions (Binomial(reps, alpha) quantiles / reps)."""
    tail = (1.0 - level) / 2.0
    return (stats.binom.ppf(tail, reps, alpha) / reps,
            stats.binom.ppf(1.0 - tail, reps, alpha) / reps)


def simulate(n: int, d: int, rng: np.random.Generator, misspecified: bool = False):
    """The paper's simulation (section 4): ``x ~ N(0, I_d)``, ``y ~ Bern(sigmoid(sum x))``;
    predictions: the Bayes classifier ``sigmoid(sum x)`` or, ``misspecified``, the model
    ``sigmoid(sum_{i < d} x_i)`` that ignores the last coordinate."""
    x = rng.normal(size=(n, d))
    truth = sigmoid(x.sum(axis=1))
    y = (rng.random(n) < truth).astype(float)
    p = sigmoid(x[:, :-1].sum(axis=1)) if misspecified else truth
    return x, p, y
