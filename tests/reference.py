"""Slow, obvious reference implementations, written straight from the formulas with
Python loops. The fast code in ``calaudit`` is checked against these on small inputs."""

from __future__ import annotations

import math

import numpy as np


def ece_loops(scores, outcomes, n_bins):
    """ECE with right-closed equal-width bins ``((b-1)/B, b/B]``, 0 in the first bin."""
    bins = {}
    for s, o in zip(scores, outcomes):
        b = 0 if s == 0 else max(0, math.ceil(s * n_bins - 1e-12) - 1)
        # guard: a score exactly on an edge k/B belongs to bin k-1
        for k in range(n_bins):
            if (k == 0 and 0 <= s <= 1 / n_bins) or (k / n_bins < s <= (k + 1) / n_bins):
                b = k
                break
        bins.setdefault(b, []).append((s, o))
    n = len(scores)
    total, worst = 0.0, 0.0
    for members in bins.values():
        conf = sum(s for s, _ in members) / len(members)
        acc = sum(o for _, o in members) / len(members)
        total += len(members) / n * abs(acc - conf)
        worst = max(worst, abs(acc - conf))
    return total, worst


def brier_loops(y_true, y_proba):
    """``(1/n) sum_i sum_k (p_ik - 1{y_i = k})^2``."""
    n, m = len(y_true), len(y_proba[0])
    total = 0.0
    for i in range(n):
        for k in range(m):
            target = 1.0 if y_true[i] == k else 0.0
            total += (y_proba[i][k] - target) ** 2
    return total / n


def kernel_matrix_loops(kernel_fn, features):
    """``K_ij = kernel_fn(x_i, x_j)`` by a double loop."""
    n = len(features)
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = kernel_fn(features[i], features[j])
    return out


def tv(p, q):
    """Total variation distance ``0.5 * sum_k |p_k - q_k|``."""
    return 0.5 * sum(abs(a - b) for a, b in zip(p, q))
