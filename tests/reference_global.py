"""Slow, obvious references for the global battery, written from the formulas
with Python loops. Only for small inputs."""

from __future__ import annotations

import math

import numpy as np


def tv(p, q):
    return 0.5 * sum(abs(a - b) for a, b in zip(p, q, strict=True))


def l1(p, q):
    return sum(abs(a - b) for a, b in zip(p, q, strict=True))


def sqeuclidean(p, q):
    return sum((a - b) ** 2 for a, b in zip(p, q, strict=True))


DISTANCES = {"tv": tv, "l1": l1, "sqeuclidean": sqeuclidean}


def h_matrix(probs, labels, gamma, distance="tv"):
    """``h_ij = exp(-gamma d(p_i, p_j)) <e_{y_i} - p_i, e_{y_j} - p_j>`` by loops."""
    n, m = len(probs), len(probs[0])
    d = DISTANCES[distance]
    res = [[(1.0 if labels[i] == k else 0.0) - probs[i][k] for k in range(m)]
           for i in range(n)]
    h = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            kij = math.exp(-gamma * d(probs[i], probs[j]))
            h[i][j] = kij * sum(res[i][k] * res[j][k] for k in range(m))
    return h


def skce_b(h):
    n = len(h)
    return sum(h[i][j] for i in range(n) for j in range(n)) / n ** 2


def skce_uq(h):
    n = len(h)
    return sum(h[i][j] for i in range(n) for j in range(n) if i != j) / (n * (n - 1))


def skce_ul(h):
    n = len(h)
    return sum(h[2 * i][2 * i + 1] for i in range(n // 2)) / (n // 2)


def skce_block(h, b):
    n = len(h)
    values = []
    for s in range(0, (n // b) * b, b):
        total = sum(h[i][j] for i in range(s, s + b) for j in range(s, s + b) if i != j)
        values.append(total / (b * (b - 1)))
    return sum(values) / len(values)


def median_full_matrix(probs, distance="tv"):
    """Median of all n^2 distances, diagonal included (sorting a Python list)."""
    d = DISTANCES[distance]
    values = sorted(d(p, q) for p in probs for q in probs)
    k = len(values)
    return values[k // 2] if k % 2 else (values[k // 2 - 1] + values[k // 2]) / 2


def arcones_gine_replicate(h, draws):
    """CalibrationTests.jl ``bootstrap_ccdf`` for one resample given the drawn indices:
    mean over pairs of draws (j < i) of h, minus twice the mean of h(draw_i, k) over all k."""
    n = len(h)
    pairs = [h[draws[i]][draws[j]] for i in range(n) for j in range(i)]
    cross = [h[draws[i]][k] for i in range(n) for k in range(n)]
    return sum(pairs) / len(pairs) - 2 * sum(cross) / len(cross)


def calibrationtests_statistic(h):
    """``n/(n-1) SKCE_uq - SKCE_b``."""
    n = len(h)
    return n / (n - 1) * skce_uq(h) - skce_b(h)


def binned_ece_loops(scores, outcomes, edges, power=1, debias=False):
    """Right-closed bins (0 in the first); count-weighted |acc - conf|^power."""
    bins = {}
    for s, o in zip(scores, outcomes, strict=True):
        b = 0
        while b < len(edges) - 2 and s > edges[b + 1]:
            b += 1
        bins.setdefault(b, []).append((s, o))
    n = len(scores)
    total = 0.0
    for members in bins.values():
        conf = sum(s for s, _ in members) / len(members)
        acc = sum(o for _, o in members) / len(members)
        term = abs(acc - conf) ** power
        if debias:
            if len(members) < 2:
                continue
            term -= acc * (1 - acc) / (len(members) - 1)
        total += len(members) / n * term
    return total


def canonical_ece_loops(probs, labels, k, distance="tv"):
    n, m = len(probs), len(probs[0])
    cells = {}
    for i in range(n):
        key = tuple(1 if p == 0 else math.ceil(k * p) for p in probs[i])
        cells.setdefault(key, []).append(i)
    total = 0.0
    for rows in cells.values():
        mean_p = [sum(probs[i][c] for i in rows) / len(rows) for c in range(m)]
        mean_y = [sum(1.0 for i in rows if labels[i] == c) / len(rows) for c in range(m)]
        if distance == "l2":
            d = math.sqrt(sqeuclidean(mean_p, mean_y))
        else:
            d = DISTANCES[distance](mean_p, mean_y)
        total += len(rows) / n * d
    return total


def logistic_newton(x_cols, offset, y, iterations=60):
    """Plain Newton-Raphson for logistic regression, loops over rows."""
    k = len(x_cols)
    n = len(y)
    beta = [0.0] * k
    for _ in range(iterations):
        grad = [0.0] * k
        info = [[0.0] * k for _ in range(k)]
        for i in range(n):
            eta = offset[i] + sum(beta[a] * x_cols[a][i] for a in range(k))
            pi = 1 / (1 + math.exp(-eta))
            for a in range(k):
                grad[a] += (y[i] - pi) * x_cols[a][i]
                for b in range(k):
                    info[a][b] += pi * (1 - pi) * x_cols[a][i] * x_cols[b][i]
        step = np.linalg.solve(np.array(info), np.array(grad))
        beta = [beta[a] + step[a] for a in range(k)]
    return beta, np.linalg.inv(np.array(info))


def spiegelhalter_loops(y, p):
    num = sum((yi - pi) * (1 - 2 * pi) for yi, pi in zip(y, p, strict=True))
    var = sum((1 - 2 * pi) ** 2 * pi * (1 - pi) for pi in p)
    return num / math.sqrt(var)


def hosmer_lemeshow_loops(y, p, g):
    """R ResourceSelection::hoslem.test (0.3-6 or later: df = the groups formed - 2), by
    loops (quantile type 7 via numpy)."""
    breaks = sorted(set(np.quantile(p, [i / g for i in range(g + 1)]).tolist()))
    groups = {}
    for yi, pi in zip(y, p, strict=True):
        j = 0
        while j < len(breaks) - 2 and pi > breaks[j + 1]:
            j += 1
        groups.setdefault(j, []).append((yi, pi))
    chisq = 0.0
    for members in groups.values():
        o1 = sum(yi for yi, _ in members)
        e1 = sum(pi for _, pi in members)
        o0, e0 = len(members) - o1, len(members) - e1
        chisq += (o1 - e1) ** 2 / e1 + (o0 - e0) ** 2 / e0
    return chisq, len(groups) - 2
