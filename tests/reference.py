"""Slow, obvious reference implementations, written straight from the formulas with
Python loops. The fast code in ``calaudit`` is checked against these on small inputs."""

from __future__ import annotations

import math

import numpy as np


def bin_of(score, n_bins):
    """Right-closed equal-width bin, CalibrationErrors.jl's ``binindex``: 1-based
    ``ceil(B * s)`` with ``s = 0`` in bin 1; returned 0-based."""
    if score == 0:
        return 0
    return math.ceil(n_bins * score) - 1


def ece_mce_loops(scores, outcomes, n_bins):
    """``ECE = sum_b n_b/n |acc_b - conf_b|`` and ``MCE = max_b |acc_b - conf_b|``."""
    bins = {}
    for s, o in zip(scores, outcomes):
        bins.setdefault(bin_of(s, n_bins), []).append((s, o))
    n = len(scores)
    total, worst = 0.0, 0.0
    for members in bins.values():
        conf = sum(s for s, _ in members) / len(members)
        acc = sum(o for _, o in members) / len(members)
        total += len(members) / n * abs(acc - conf)
        worst = max(worst, abs(acc - conf))
    return total, worst


def top_label_loops(y_true, y_proba):
    """Confidence ``max_k p_ik`` and correctness ``argmax_k p_ik == y_i`` (first max wins)."""
    scores, outcomes = [], []
    for label, row in zip(y_true, y_proba):
        best = 0
        for k in range(len(row)):
            if row[k] > row[best]:
                best = k
        scores.append(row[best])
        outcomes.append(1.0 if best == label else 0.0)
    return scores, outcomes


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


def holm_loops(p_values):
    """Holm step-down adjusted p-values, by the textbook recursion."""
    k = len(p_values)
    order = sorted(range(k), key=lambda i: p_values[i])
    adjusted = [0.0] * k
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (k - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def design_matrix(terms, rows, override=None):
    """The recalibration GLM's design ``[1, 1{code of term t = level c} ...]`` for ``rows``,
    one dense column per used non-reference level of each term, by loops;
    ``override=(name, level)`` sets one covariate to a level on every row."""
    x = np.ones((len(rows), 1 + sum(len(t.columns) for t in terms)))
    for i, row in enumerate(rows):
        j = 1
        for t in terms:
            code = override[1] if override and override[0] == t.name else t.codes[row]
            for c in t.columns:
                x[i, j] = float(code == c)
                j += 1
    return x
