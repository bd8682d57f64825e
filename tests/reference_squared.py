"""Slow references for the squared calibration errors (Gruber & Bach), written straight
from the paper's formulas with Python loops and dense linear algebra. Only for small
inputs: the Kronecker reference of eq. 28 inverts an n^2 x n^2 matrix."""

from __future__ import annotations

import math

import numpy as np

from tests.reference import bin_of, top_label_loops  # noqa: F401  (shared loop references)


def dot(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))


def risk_loops(residuals, h):
    """Eq. 20: ``(n(n-1))^-1 sum_{i != j} (<r_i, r_j> - H_ij)^2`` by a double loop."""
    n = len(residuals)
    total = 0.0
    for i in range(n):
        for j in range(n):
            if i != j:
                total += (dot(residuals[i], residuals[j]) - h[i][j]) ** 2
    return total / (n * (n - 1))


def bin_phi_loops(train_x, train_r, eval_x, n_bins, canonical):
    """``phi(x)`` of eq. 23: mean training residual of the bin (cell) of ``x``; the
    overall mean residual for a bin without training rows."""
    q = len(train_r[0])
    cells = {}
    for x, r in zip(train_x, train_r, strict=True):
        key = tuple(bin_of(v, n_bins) for v in x) if canonical else bin_of(x[0], n_bins)
        cells.setdefault(key, []).append(r)
    overall = [sum(r[k] for r in train_r) / len(train_r) for k in range(q)]
    out = []
    for x in eval_x:
        key = tuple(bin_of(v, n_bins) for v in x) if canonical else bin_of(x[0], n_bins)
        members = cells.get(key)
        out.append([sum(r[k] for r in members) / len(members) for k in range(q)]
                   if members else overall)
    return out


def dirichlet_logpdf(x, alpha):
    """``log Dir(x; alpha)`` from the formula (``0 * log 0 = 0``)."""
    log_norm = sum(math.lgamma(a) for a in alpha) - math.lgamma(sum(alpha))
    total = -log_norm
    for xk, ak in zip(x, alpha, strict=True):
        if ak != 1.0:
            total += (ak - 1.0) * (math.log(xk) if xk > 0 else -math.inf)
    return total


def kde_phi_loops(train_z, train_o, eval_z, eval_x, bandwidth):
    """``phi(x) = sum_j k(x; z_j) o_j / sum_j k(x; z_j) - x`` (eq. 25) with
    ``k(x; z_j) = Dir(x; z_j / b + 1)``, accumulated with a running log-sum-exp."""
    out = []
    for z, x in zip(eval_z, eval_x, strict=True):
        logs = [dirichlet_logpdf(z, [v / bandwidth + 1.0 for v in zj]) for zj in train_z]
        top = max(logs)
        weights = [math.exp(v - top) for v in logs]
        total = sum(weights)
        out.append([sum(w * o[k] for w, o in zip(weights, train_o, strict=True)) / total - x[k]
                    for k in range(len(x))])
    return out


def gaussian_gram(a, b, gamma):
    """``exp(-gamma ||a_i - b_j||^2)`` by loops."""
    return np.array([[math.exp(-gamma * sum((u - v) ** 2 for u, v in zip(ai, bj, strict=True)))
                      for bj in b] for ai in a])


def kkr_kronecker(train_x, train_r, eval_x, gamma, ridge):
    """Eq. 28 literally: ``vec(D^T D)^T (K (x) K + c I)^-1 (k(p) (x) k(p'))`` for every
    pair of evaluation rows, ``c = lambda n^2`` given as ``ridge``."""
    k_train = gaussian_gram(train_x, train_x, gamma)
    k_eval = gaussian_gram(train_x, eval_x, gamma)
    r = np.asarray(train_r, dtype=float)
    n = len(train_x)
    system = np.kron(k_train, k_train) + ridge * np.eye(n * n)
    coef = np.linalg.solve(system, (r @ r.T).reshape(-1))
    m = len(eval_x)
    h = np.empty((m, m))
    for i in range(m):
        for j in range(m):
            h[i, j] = coef @ np.kron(k_eval[:, i], k_eval[:, j])
    return h


def kkr_eigen(train_x, train_r, eval_x, gamma, ridge):
    """Eq. 31: ``K_e^T Q (L ⊙ Q^T D^T D Q) Q^T K_e`` with ``L_ij = 1/(l_i l_j + c)``."""
    k_train = gaussian_gram(train_x, train_x, gamma)
    k_eval = gaussian_gram(train_x, eval_x, gamma)
    values, q = np.linalg.eigh(k_train)
    values = np.maximum(values, 0.0)
    r = np.asarray(train_r, dtype=float)
    inner = (1.0 / (np.outer(values, values) + ridge)) * (q.T @ r @ r.T @ q)
    return k_eval.T @ q @ inner @ q.T @ k_eval


def ukkr_direct(train_x, train_r, eval_x, gamma, ridge):
    """Eq. 32: ``k(p)^T (K + c I)^-1 D^T D (K + c I)^-T k(p')``, ``c = lambda n``."""
    k_train = gaussian_gram(train_x, train_x, gamma)
    k_eval = gaussian_gram(train_x, eval_x, gamma)
    r = np.asarray(train_r, dtype=float)
    inverse = np.linalg.inv(k_train + ridge * np.eye(len(train_x)))
    return k_eval.T @ inverse @ r @ r.T @ inverse.T @ k_eval


def weighted_risk_units(residuals, h, units, unit_weights):
    """The weighted risk by a loop over pairs of distinct units: row ``i`` stands for
    ``units[i]`` (an integer) units of weight ``unit_weights[i]`` each; pair ``(u, v)``,
    ``u != v``, counts ``a_u a_v``."""
    members = [(i, a) for i, (t, a) in enumerate(zip(units, unit_weights, strict=True))
               for _ in range(int(t))]
    total = pairs = 0.0
    for u, (i, a) in enumerate(members):
        for v, (j, b) in enumerate(members):
            if u != v:
                total += a * b * (dot(residuals[i], residuals[j]) - h[i][j]) ** 2
                pairs += a * b
    return total / pairs


def weighted_bin_phi_loops(train_x, train_r, train_w, eval_x, n_bins, canonical):
    """Weighted eq. 23: the weighted mean training residual of the bin (cell) of ``x``;
    the weighted overall mean for a bin without training weight."""
    q = len(train_r[0])
    cells = {}
    for x, r, w in zip(train_x, train_r, train_w, strict=True):
        key = tuple(bin_of(v, n_bins) for v in x) if canonical else bin_of(x[0], n_bins)
        cells.setdefault(key, []).append((r, w))
    total = sum(train_w)
    overall = [sum(r[k] * w for r, w in zip(train_r, train_w, strict=True)) / total
               for k in range(q)]
    out = []
    for x in eval_x:
        key = tuple(bin_of(v, n_bins) for v in x) if canonical else bin_of(x[0], n_bins)
        members = cells.get(key, [])
        mass = sum(w for _, w in members)
        out.append([sum(r[k] * w for r, w in members) / mass for k in range(q)]
                   if mass > 0 else overall)
    return out


def weighted_kde_phi_loops(train_z, train_o, train_w, eval_z, eval_x, bandwidth):
    """Weighted eq. 25: ``sum_j w_j k(x; z_j) o_j / sum_j w_j k(x; z_j) - x``."""
    out = []
    for z, x in zip(eval_z, eval_x, strict=True):
        logs = [dirichlet_logpdf(z, [v / bandwidth + 1.0 for v in zj]) for zj in train_z]
        top = max(logs)
        kernel = [w * math.exp(v - top) for v, w in zip(logs, train_w, strict=True)]
        total = sum(kernel)
        out.append([sum(k * o[c] for k, o in zip(kernel, train_o, strict=True)) / total - x[c]
                    for c in range(len(x))])
    return out


def weighted_ukkr_direct(train_x, train_r, train_w, eval_x, gamma, ridge):
    """Weighted kernel ridge regression ``beta = (W K + c I)^-1 W R`` (the minimiser of
    ``sum_j w_j ||r_j - f(x_j)||^2 + c ||f||^2``), ``phi(x) = beta^T k(x)``; returns
    ``H = Phi Phi^T`` on the evaluation rows."""
    k_train = gaussian_gram(train_x, train_x, gamma)
    k_eval = gaussian_gram(train_x, eval_x, gamma)
    w = np.diag(np.asarray(train_w, dtype=float))
    beta = np.linalg.solve(w @ k_train + ridge * np.eye(len(train_x)),
                           w @ np.asarray(train_r, dtype=float))
    phi = k_eval.T @ beta
    return phi @ phi.T


def weighted_kkr_kronecker(train_x, train_r, train_w, eval_x, gamma, ridge):
    """Weighted eq. 28: pair ``(k, l)`` weighted ``w_k w_l``, ``alpha = (Omega (K (x) K)
    + c I)^-1 Omega vec(R R^T)`` with ``Omega = diag(w (x) w)``; ``h(x, x') = alpha^T
    (k(x) (x) k(x'))`` for every pair of evaluation rows."""
    k_train = gaussian_gram(train_x, train_x, gamma)
    k_eval = gaussian_gram(train_x, eval_x, gamma)
    r = np.asarray(train_r, dtype=float)
    n = len(train_x)
    omega = np.diag(np.kron(np.asarray(train_w, float), np.asarray(train_w, float)))
    coef = np.linalg.solve(omega @ np.kron(k_train, k_train) + ridge * np.eye(n * n),
                           omega @ (r @ r.T).reshape(-1))
    m = len(eval_x)
    h = np.empty((m, m))
    for i in range(m):
        for j in range(m):
            h[i, j] = coef @ np.kron(k_eval[:, i], k_eval[:, j])
    return h
