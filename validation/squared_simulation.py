"""Gruber & Bach, sec. 5.1: the empirical risk (eq. 20) over the temperature is minimised
at the true calibration estimation function.

    nice -n 10 python validation/squared_simulation.py [--repetitions 100] [--seed 0]
        > validation/squared_simulation.txt

Ground truth ``P_i ~ Dir(0.04, ..., 0.04)`` (5 classes, n = 500), labels ``Y_i ~ P_i``,
predictions ``f_i = softmax(0.3 log P_i)`` (over-confident, accuracy about 90 %). The
calibration estimation function ``h_theta(p, p') = <p - softmax(10/3 theta log p),
p' - softmax(10/3 theta log p')>`` equals ``h*`` exactly at ``theta = 1``. For each of
100 repetitions the risk of eq. 20 (calaudit's factorised U-statistic,
``calaudit.squared.pairwise_risk``) is computed on a grid of temperatures; the table gives
its mean and standard deviation over repetitions, the mean excess over ``theta = 1`` and
how often each temperature is the repetition's minimiser. Also: the estimate
``mean_i h_1(f_i, f_i)`` against the true ``CCE_2^2 = mean_i ||f_i - P_i||^2``.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from scipy.special import softmax

from calaudit.squared import pairwise_risk

THETAS = (0.25, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.3, 1.4, 1.5, 1.75, 2.0)


def simulate(rng: np.random.Generator, n: int = 500, m: int = 5, alpha: float = 0.04):
    """Truth ``P``, labels ``Y ~ P`` and predictions ``softmax(0.3 log P)``."""
    truth = rng.dirichlet(np.full(m, alpha), n)
    labels = (rng.uniform(size=(n, 1)) > np.cumsum(truth, axis=1)).sum(axis=1)
    labels = np.minimum(labels, m - 1)
    with np.errstate(divide="ignore"):
        predictions = softmax(0.3 * np.log(truth), axis=1)
    return truth, labels, predictions


def features(predictions: np.ndarray, theta: float) -> np.ndarray:
    """``phi_theta(p) = softmax(10/3 theta log p) - p`` (``E[e_Y - p | p]`` at theta 1)."""
    with np.errstate(divide="ignore"):
        return softmax(10.0 / 3.0 * theta * np.log(predictions), axis=1) - predictions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    risks = np.empty((args.repetitions, len(THETAS)))
    accuracy, estimate, truth_cce = [], [], []
    for rep in range(args.repetitions):
        truth, labels, predictions = simulate(rng)
        residuals = np.eye(truth.shape[1])[labels] - predictions
        for j, theta in enumerate(THETAS):
            risks[rep, j] = pairwise_risk(residuals, features(predictions, theta))
        accuracy.append(np.mean(predictions.argmax(axis=1) == labels))
        phi = features(predictions, 1.0)
        estimate.append(np.mean(np.sum(phi * phi, axis=1)))
        truth_cce.append(np.mean(np.sum((predictions - truth) ** 2, axis=1)))
    one = THETAS.index(1.0)
    excess = risks - risks[:, [one]]
    argmins = np.bincount(np.argmin(risks, axis=1), minlength=len(THETAS))
    print(f"# Gruber & Bach sec. 5.1: {args.repetitions} repetitions, n = 500, 5 classes, "
          f"Dir(0.04), seed {args.seed}")
    print(f"# mean accuracy of the predictions: {np.mean(accuracy):.3f}")
    print("# risk = eq. 20 of h_theta on the whole sample; excess = risk - risk(theta = 1)")
    print(f"{'theta':>6} {'mean risk':>12} {'sd risk':>10} {'mean excess':>13} "
          f"{'sd excess':>11} {'argmin share':>13}")
    for j, theta in enumerate(THETAS):
        print(f"{theta:6.2f} {risks[:, j].mean():12.6f} {risks[:, j].std(ddof=1):10.6f} "
              f"{excess[:, j].mean():13.3e} {excess[:, j].std(ddof=1):11.3e} "
              f"{argmins[j] / args.repetitions:13.2f}")
    best = THETAS[int(np.argmin(risks.mean(axis=0)))]
    print(f"# theta minimising the mean risk: {best}")
    near = sum(argmins[j] for j, t in enumerate(THETAS) if 0.9 <= t <= 1.1)
    print(f"# share of repetitions whose minimiser is theta = 1: "
          f"{argmins[one] / args.repetitions:.2f}; within [0.9, 1.1]: "
          f"{near / args.repetitions:.2f}")
    print(f"# mean excess > 0 at every theta != 1: "
          f"{bool(np.all(np.delete(excess.mean(axis=0), one) > 0))}")
    print(f"# CCE_2^2: true mean ||f - P||^2 = {np.mean(truth_cce):.5f}; "
          f"estimate mean h_1(f, f) = {np.mean(estimate):.5f} (identical functions: "
          f"max |difference| {np.max(np.abs(np.subtract(estimate, truth_cce))):.2e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
