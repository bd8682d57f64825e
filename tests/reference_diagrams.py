"""Slow references for the diagrams stage: the consistency band with loops, and the exact
distribution of a bin's observed rate under calibration (Poisson-binomial by convolution)."""

from __future__ import annotations

import math

import numpy as np


def band_loops(scores, n_bins, n_resamples, level, rng):
    """Consistency band, one resample and one bin at a time, from each bin's exact
    Poisson-binomial law (repeated convolution) by inverse-CDF draws.

    Uses the same uniforms as the fast code: one (non-empty bins, B) matrix, bins in
    increasing order; draw ``k`` is the smallest ``k`` with ``F(k) > u F(n)``.
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
    present = sorted(set(bins))
    uniforms = rng.random((len(present), n_resamples))
    tail = (1 - level) / 2
    low, high = [], []
    for row, b in enumerate(present):
        members = [scores[i] for i in range(n) if bins[i] == b]
        cdf = np.cumsum(poisson_binomial_pmf(members))
        rates = []
        for j in range(n_resamples):
            target = uniforms[row, j] * cdf[-1]
            k = next(k for k in range(len(cdf)) if cdf[k] > target or k == len(cdf) - 1)
            rates.append(k / len(members))
        low.append(float(np.quantile(rates, tail)))
        high.append(float(np.quantile(rates, 1 - tail)))
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
