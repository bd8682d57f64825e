"""Slow, obvious references for local calibration, written straight from the formulas
(Vashistha & Farahi, eq. 4, eq. 7, Algorithm 1; KiTE ``ELCE2``) with Python loops.
The fast code in ``calaudit.local`` is checked against these on small inputs."""

from __future__ import annotations

import itertools
import math

import numpy as np


def gaussian(a, b, gamma):
    """``exp(-gamma |a - b|^2)`` for two vectors (or scalars)."""
    d = np.atleast_1d(np.asarray(a, float)) - np.atleast_1d(np.asarray(b, float))
    return math.exp(-gamma * float(d @ d))


def product_kernel_matrix(prob, cov, gamma_p, gamma_x):
    """``K_ij = exp(-gamma_p |p_i - p_j|^2) * exp(-gamma_x |x_i - x_j|^2)`` by loops."""
    n = len(prob)
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = gaussian(prob[i], prob[j], gamma_p) * gaussian(cov[i], cov[j], gamma_x)
    return out


def klce2_loops(prob, residual, cov, gamma_p, gamma_x):
    """eq. 4: ``1 / (n (n-1)) sum_{i != j} <r_i, r_j> k(p_i, p_j) l(x_i, x_j)``."""
    n = len(prob)
    total = 0.0
    for i in range(n):
        for j in range(n):
            if i != j:
                inner = float(np.dot(np.atleast_1d(residual[i]), np.atleast_1d(residual[j])))
                total += inner * gaussian(prob[i], prob[j], gamma_p) * gaussian(
                    cov[i], cov[j], gamma_x)
    return total / (n * (n - 1))


def kite_elce2_loops(x, y, p, width, gamma):
    """KiTE ``ELCE2`` statistic: ``sum_{i != j} e_i K_ij e_j / ((n-1)/n sum_{i,j} K_ij)``
    with ``K = exp(-(p_i - p_j)^2 / width^2) exp(-gamma |x_i - x_j|^2)``."""
    n = len(p)
    e = [yi - pi for yi, pi in zip(y, p, strict=True)]
    s = 0.0
    k_sum = 0.0
    for i in range(n):
        for j in range(n):
            k = math.exp(-((p[i] - p[j]) ** 2) / width ** 2) * gaussian(x[i], x[j], gamma)
            k_sum += k
            if i != j:
                s += e[i] * k * e[j]
    return s / ((n - 1) / n * k_sum)


def lcb_loops(prob, residual, cov, gamma_p, gamma_x):
    """eq. 7 at every observation ``j``: ``sum_i r_i K_ij / sum_i K_ij`` (i = j included)."""
    n = len(prob)
    out = np.empty(n)
    for j in range(n):
        num = den = 0.0
        for i in range(n):
            k = gaussian(prob[i], prob[j], gamma_p) * gaussian(cov[i], cov[j], gamma_x)
            num += residual[i] * k
            den += k
        out[j] = num / den
    return out


def algorithm1_null(kernel, residual, indices):
    """Algorithm 1, lines 8-12, one resample per row of ``indices``: ``e_b = e[idx]``,
    ``(sum K_b - sum diag K_b) / (n (n - 1))`` with ``K_b = e_b^T K e_b`` element-wise."""
    n = kernel.shape[0]
    out = []
    for idx in indices:
        e_b = residual[idx]
        total = 0.0
        for i in range(n):
            for j in range(n):
                if i != j:
                    total += e_b[i] * kernel[i, j] * e_b[j]
        out.append(total / (n * (n - 1)))
    return np.array(out)


def median_heuristic_loops(x):
    """Median of the non-zero squared distances over pairs i < j."""
    x = np.asarray(x, float).reshape(len(x), -1)
    values = []
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            d = float(((x[i] - x[j]) ** 2).sum())
            if d > 0:
                values.append(d)
    return float(np.median(values)) if values else 0.0


def poisson_binomial_enumeration(p):
    """``P(S = k)`` by summing over all ``2^n`` outcomes."""
    n = len(p)
    pmf = np.zeros(n + 1)
    for outcome in itertools.product((0, 1), repeat=n):
        prob = 1.0
        for yi, pi in zip(outcome, p, strict=True):
            prob *= pi if yi else 1.0 - pi
        pmf[sum(outcome)] += prob
    return pmf


def hoeffding_thresholds(n, alpha, bound):
    """Corollary 3.7 as printed, and with ``floor(n/2)`` pairs (Hoeffding 1963)."""
    paper = bound / math.sqrt(n) * math.sqrt(math.log(alpha ** -2))
    pairs = bound * math.sqrt(2 * math.log(1 / alpha) / (n // 2))
    return paper, pairs


def curve_weights(x, points):
    """The curve's grid and bandwidth (``calaudit.local.lcb_curves.curve_grid``) and the
    row-normalised Gaussian weights ``w_j(t) = exp(-((t - x_j) / h)^2 / 2) / sum_j (...)``
    as one dense (points, len(x)) array."""
    from calaudit.local.lcb_curves import curve_grid

    grid, h = curve_grid(x, points)
    w = np.exp(-0.5 * ((grid[:, None] - x[None, :]) / h) ** 2)
    w /= np.maximum(w.sum(axis=1, keepdims=True), np.finfo(float).tiny)
    return grid, w, h
