"""Slow references for the diagrams stage: the consistency band with loops, and the exact
distribution of a bin's observed rate under calibration (Poisson-binomial by convolution)."""

from __future__ import annotations

import math

import numpy as np


def band_loops(scores, n_bins, n_resamples, level, rng, chunk):
    """Consistency band, one resample and one bin at a time.

    Uses the same uniforms as the fast code: per chunk of ``chunk`` resamples one
    (n, width) matrix, rows in the order of the rows sorted (stably) by bin.
    """
    n = len(scores)
    bins = []
    for s in scores:
        b = 0
        for k in range(n_bins):
            if (k == 0 and 0 <= s <= 1 / n_bins) or (k / n_bins < s <= (k + 1) / n_bins):
                b = k
                break
        bins.append(b)
    order = sorted(range(n), key=lambda i: bins[i])
    members = {}
    for position, i in enumerate(order):
        members.setdefault(bins[i], []).append(position)
    sorted_scores = [scores[i] for i in order]
    rates = {b: [] for b in members}
    done = 0
    while done < n_resamples:
        width = min(chunk, n_resamples - done)
        uniforms = rng.random((n, width))
        for j in range(width):
            for b, positions in members.items():
                events = sum(1 for p in positions if uniforms[p, j] < sorted_scores[p])
                rates[b].append(events / len(positions))
        done += width
    tail = (1 - level) / 2
    low = [float(np.quantile(rates[b], tail)) for b in sorted(members)]
    high = [float(np.quantile(rates[b], 1 - tail)) for b in sorted(members)]
    return low, high


def poisson_binomial_pmf(probabilities):
    """P(sum of independent Bernoulli(p_i) = k), k = 0..n, by repeated convolution."""
    pmf = np.array([1.0])
    for p in probabilities:
        pmf = np.convolve(pmf, [1 - p, p])
    return pmf


def exact_rate_quantile(probabilities, q):
    """Smallest k / n with P(rate <= k / n) >= q (the q-quantile of the exact law)."""
    cdf = np.cumsum(poisson_binomial_pmf(probabilities))
    k = int(np.searchsorted(cdf, q - 1e-12))
    return k / len(probabilities)


def histogram_loops(scores, n_bins):
    counts = [0] * n_bins
    for s in scores:
        k = 0 if s == 0 else min(n_bins - 1, math.ceil(s * n_bins) - 1)
        if k / n_bins >= s and s > 0:  # guard edges against rounding
            k -= 1
        counts[max(k, 0)] += 1
    return counts
