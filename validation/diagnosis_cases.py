"""Simulated data with a known bias function, for the diagnosis tests, the validation
scripts and the benchmarks.

* :func:`opposite_groups`: groups A and B, the model under-predicts A by ``delta`` and
  over-predicts B by ``delta`` (probability scale), calibrated on average;
* :func:`one_region`: five regions, gender and age; the model under-predicts the South by
  ``delta`` and is calibrated elsewhere (gender and age carry no bias of their own);
* :func:`calibrated`: the same covariates, no bias anywhere (the attribution null).

Each returns ``(y, p, covariates, true_bias)``; ``y ~ Bernoulli(p + true_bias)``.
"""

from __future__ import annotations

import numpy as np

REGIONS = ("North", "South", "East", "West", "Central")


def _draw(rng: np.random.Generator, p: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return (rng.random(p.size) < p + bias).astype(int)


def opposite_groups(n: int, seed: int, delta: float = 0.12):
    """Groups A/B (half each) at ``+delta`` / ``-delta``; predictions in [0.2, 0.8]."""
    rng = np.random.default_rng(seed)
    group = np.where(rng.random(n) < 0.5, "A", "B")
    p = rng.uniform(0.2, 0.8, n)
    bias = np.where(group == "A", delta, -delta)
    return _draw(rng, p, bias), p, {"group": group}, bias


def _credit_covariates(rng: np.random.Generator, n: int) -> dict:
    return {"region": np.array(REGIONS)[rng.integers(0, len(REGIONS), n)],
            "gender": np.where(rng.random(n) < 0.5, "F", "M"),
            "age": np.round(rng.uniform(20, 70, n))}


def one_region(n: int, seed: int, delta: float = 0.11):
    """Five regions, gender, age; the South under-predicted by ``delta``."""
    rng = np.random.default_rng(seed)
    covs = _credit_covariates(rng, n)
    p = rng.uniform(0.15, 0.75, n)
    bias = np.where(covs["region"] == "South", delta, 0.0)
    return _draw(rng, p, bias), p, covs, bias


def calibrated(n: int, seed: int):
    """The covariates of :func:`one_region`, no bias."""
    rng = np.random.default_rng(seed)
    covs = _credit_covariates(rng, n)
    p = rng.uniform(0.05, 0.95, n)
    return _draw(rng, p, np.zeros(n)), p, covs, np.zeros(n)
