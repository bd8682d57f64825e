"""The SKCE of weighted rows through random Fourier features (docs/weights.md), for the
rows the exact weighted path (:mod:`calaudit.inference.weighted_skce_test`) does not
take: above ``skce.max_quadratic_n`` rows, or above
:data:`~calaudit.metrics.weighted_skce.MAX_MEDIAN_ROWS` rows without a bandwidth.

With the feature map ``phi`` of the unweighted feature path (Rahimi & Recht 2007; the
quantised map of :class:`calaudit.numerics.features.FourierFeatures`, binary models on
``p_1``) the kernel is ``k_ij = phi(p_i) . phi(p_j)`` and, in the unit counts of
:mod:`calaudit.inference.weighted_skce_test` (``R_i``, ``A``, ``S2``):

* ``SKCE_b = || sum_i R_i (x) phi(p_i) ||^2 / A^2`` (Widmann et al. 2019, sec. 3, the
  V-statistic of the weighted empirical law),
* ``SKCE_uq = (|| sum_i R_i (x) phi(p_i) ||^2 - U) / (A^2 - S2)`` with
  ``U = sum_units a_u^2 h_uu``, ``h_uu = |phi(p)|^2 ||e_y - p||^2`` computed per row
  (the pair of a unit with itself under the same kernel): the weighted U-statistic over
  pairs of distinct units of the kernel ``k``.

Both are exact functions of ``Phi^T R`` (D x m per column), summed over the row blocks of
:mod:`calaudit.scale`. The consistency test redraws every unit's label from the sampled
labels' null law with the exact test's helpers (the weights follow the redrawn labels;
Binomial / multinomial counts per row for frequency weights), block by block from the
stream ``(seed, "weighted_skce_consistency", block)``, and gets every redrawn statistic
from one GEMM ``Phi^T [R*_1 ... R*_B]`` per block; Monte-Carlo p-value
``(1 + #{T* >= T}) / (1 + B)``.

Default bandwidth: the weighted median heuristic (:func:`calaudit.metrics.weighted_skce.
weighted_kernel`) of all rows up to ``MAX_MEDIAN_ROWS``, above of a seeded subsample of
:data:`MEDIAN_SUBSAMPLE` rows drawn uniformly without replacement, each keeping its weight
(frequency weights counted as units).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numpy.typing import NDArray

from calaudit import registry
from calaudit.data.weights import SampleWeights
from calaudit.inference.feature_tests import SkceFeatures
from calaudit.metrics.skce import KERNEL_DISTANCES, KernelChoice
from calaudit.metrics.weighted_skce import MAX_MEDIAN_ROWS, weighted_kernel
from calaudit.inference.feature_passes import PARTS
from calaudit.numerics.features import FourierFeatures, default_n_features, exact_parts
from calaudit.numerics.resampling import monte_carlo_pvalue
from calaudit.results import MetricResult, Status, TestResult
from calaudit.scale import block_rng, blocks, map_sum, task_ranges
from calaudit.inference.weighted_skce_test import (
    consistency_reason,
    null_law,
    observed_counts,
    redrawn_counts,
    unit_weights,
)

#: Rows of the subsample of the weighted median heuristic (its exact weighted median
#: sorts the subsample's pairs: about 0.2 s).
MEDIAN_SUBSAMPLE = 1000
#: Block stream of the consistency redraws.
STREAM = "weighted_skce_consistency"
METHOD = ("consistency resampling, weighted, random features: unit labels redrawn from "
          "their law in the sample, weighted SKCE_uq of the feature kernel")


def feature_kernel(y_proba: NDArray[np.float64], sample_weight: NDArray[np.float64],
                   name: str, bandwidth: float | None, frequency: bool,
                   rng: np.random.Generator) -> KernelChoice:
    """The kernel: the bandwidth given or the weighted median heuristic (module
    docstring), on a subsample drawn with ``rng`` above ``MAX_MEDIAN_ROWS`` rows."""
    n = y_proba.shape[0]
    if bandwidth is not None or n <= MAX_MEDIAN_ROWS:
        return weighted_kernel(y_proba, sample_weight, name, bandwidth, frequency)
    pick = np.sort(rng.choice(n, MEDIAN_SUBSAMPLE, replace=False))
    choice = weighted_kernel(y_proba[pick], sample_weight[pick], name, None, frequency)
    source = choice.source + ("_subsample" if choice.source.startswith("weighted") else "")
    return KernelChoice(name, choice.bandwidth, source)


def feature_map(choice: KernelChoice, y_proba: NDArray[np.float64], n_features: int,
                seed: int) -> tuple[FourierFeatures, NDArray[np.float64]]:
    """The unweighted feature path's map (:meth:`SkceFeatures.build`) and its inputs."""
    distance, factor, x = KERNEL_DISTANCES[choice.name], 1.0, y_proba
    if y_proba.shape[1] == 2:
        (distance, factor), x = SkceFeatures.BINARY[distance], y_proba[:, 1:2]
    return FourierFeatures.draw(distance, factor * choice.gamma, x.shape[1], n_features,
                                int(seed)), np.ascontiguousarray(x, dtype=np.float64)


def _rows(weights: SampleWeights, lo: int, hi: int) -> SampleWeights:
    rate = None if weights.negative_rate is None else weights.negative_rate[lo:hi]
    return dataclasses.replace(weights, design=weights.design[lo:hi], negative_rate=rate)


def residual_bound(weights: SampleWeights, m: int) -> float:
    """A bound on every ``|R_ik|``, observed or redrawn: ``f_i t_i max_k a_ik``."""
    factor, per_class = unit_weights(weights, m)
    top = factor * weights.unit_split()[0] * per_class.max(axis=1)
    return float(max(np.max(top, initial=0.0), 1e-300))


def block_sums(phi: NDArray[np.float64], y_proba: NDArray[np.float64],
               counts: NDArray[np.float64], weights: SampleWeights, bound: float
               ) -> dict[str, NDArray]:
    """``G = Phi^T R`` (parts, D, m', q) (binary: class 1 only, ``R_i0 = -R_i1``), ``U``,
    ``A`` and ``S2`` (q,) of the rows of ``phi`` (rows, D, the quantised map) with unit
    counts ``counts`` (rows, m, q).

    ``R`` is split into :data:`PARTS` grid values of at most 11 bits
    (:func:`calaudit.numerics.features.exact_parts` below ``bound``), so the float64
    GEMM of the 11-bit feature grid with them (products of 22 bits, sums of at most
    :data:`~calaudit.scale.ROW_BLOCK` rows) never rounds: the sums do not depend on the
    BLAS, its threads or the executor; the parts are added at :func:`statistics`."""
    rows, m, q = counts.shape
    factor, per_class = unit_weights(weights, m)
    weighted = counts * per_class[:, :, None]
    mass = weighted.sum(axis=1)
    residual = factor[:, None, None] * (weighted - mass[:, None, :] * y_proba[:, :, None])
    used = (residual[:, 1:, :] if m == 2 else residual).reshape(rows, -1)
    parts = exact_parts(used.ravel(), bound, PARTS).reshape(PARTS, rows, -1)
    gram = phi.T @ parts.transpose(1, 0, 2).reshape(rows, -1).astype(np.float64)  # one GEMM
    norm = np.einsum("ij,ij->i", phi, phi)                              # |phi_i|^2
    squares = factor[:, None, None] ** 2 * counts * per_class[:, :, None] ** 2
    own = 1.0 - 2.0 * y_proba + (y_proba * y_proba).sum(axis=1, keepdims=True)
    return {"G": gram.reshape(phi.shape[1], PARTS, -1, q),
            "U": np.einsum("i,ikq->q", norm, squares * own[:, :, None]),
            "A": (factor[:, None] * mass).sum(axis=0), "S2": squares.sum(axis=(0, 1))}


def feature_partial(start: int, stop: int, *, features: FourierFeatures,
                    x: NDArray[np.float64], y_true: NDArray[np.int64],
                    y_proba: NDArray[np.float64], weights: SampleWeights, bound: float,
                    seed: int, n_resamples: int) -> dict[str, NDArray]:
    """:func:`block_sums` of the rows ``[start, stop)``: column 0 the observed labels,
    then ``n_resamples`` redraws from the block streams."""
    out: dict[str, NDArray] = {}
    for block, lo, hi in blocks(start, stop):
        part, p = _rows(weights, lo, hi), y_proba[lo:hi]
        counts = observed_counts(y_true[lo:hi], part, p.shape[1])
        if n_resamples:
            drawn = redrawn_counts(block_rng(seed, STREAM, block), null_law(part, p), part,
                                   n_resamples)
            counts = np.concatenate([counts, drawn], axis=2)
        phi = features.quantised(x[lo:hi]).astype(np.float64)
        for key, value in block_sums(phi, p, counts, part, bound).items():
            out[key] = out[key] + value if key in out else value
    return out


def statistics(total: dict[str, NDArray], binary: bool) -> tuple[NDArray, NDArray]:
    """``(SKCE_b, SKCE_uq)`` of every column of the summed :func:`block_sums`."""
    gram = total["G"].sum(axis=1)
    full = (2.0 if binary else 1.0) * np.einsum("dkq,dkq->q", gram, gram)
    a = total["A"]
    with np.errstate(invalid="ignore", divide="ignore"):
        return full / a ** 2, (full - total["U"]) / (a ** 2 - total["S2"])


def feature_values(features: FourierFeatures, x: NDArray[np.float64],
                   y_true: NDArray[np.int64], y_proba: NDArray[np.float64],
                   weights: SampleWeights, seed: int = 0, n_resamples: int = 0
                   ) -> tuple[NDArray, NDArray]:
    """:func:`statistics` of the observed rows (column 0) and ``n_resamples`` redraws."""
    total = map_sum(feature_partial, task_ranges(y_true.size), {
        "features": features, "x": x, "y_true": y_true, "y_proba": y_proba,
        "weights": weights, "bound": residual_bound(weights, y_proba.shape[1]),
        "seed": int(seed), "n_resamples": int(n_resamples)})
    return statistics(total, y_proba.shape[1] == 2)


def weighted_feature_skce(y_true: NDArray[np.int64], y_proba: NDArray[np.float64],
                          weights: SampleWeights, sample_weight: NDArray[np.float64], *,
                          kernel: str, bandwidth: float | None, n_features: int | None,
                          consistency: bool, n_resamples: int, alpha: float,
                          reason: str, rng: np.random.Generator
                          ) -> tuple[tuple[MetricResult, ...], TestResult | None]:
    """``skce_b``, ``skce_uq`` and (``consistency``) ``skce_consistency`` of weighted rows
    on the feature path (module docstring); ``reason`` says why it was taken."""
    median_rng, feature_rng, draw_rng = rng.spawn(3)
    choice = feature_kernel(y_proba, sample_weight, kernel, bandwidth,
                            weights.kind == "frequency", median_rng)
    resamples = n_resamples if consistency else 0
    columns = (1 if y_proba.shape[1] == 2 else y_proba.shape[1]) * max(resamples, 1)
    d = int(n_features) if n_features else default_n_features(y_true.size, columns)
    d += d % 2
    frequency_seed, seed = int(feature_rng.integers(0, 2**62)), int(draw_rng.integers(0, 2**62))
    features, x = feature_map(choice, y_proba, d, frequency_seed)
    biased, unbiased = feature_values(features, x, y_true, y_proba, weights, seed, resamples)
    params = {**choice.to_params(), "weights": weights.kind, "computation": {
        "method": "features", "reason": reason, "n_features": d,
        "frequency_seed": frequency_seed, "n_features_rule": "given" if n_features
        else "default"}}
    metrics = tuple(MetricResult(key, float(value[0]), dict(params), title=registry.title(key))
                    for key, value in (("skce_b", biased), ("skce_uq", unbiased)))
    if not consistency:
        return metrics, None
    observed, title = float(unbiased[0]), registry.title("skce_consistency")
    why = consistency_reason(y_true.size, weights, observed, n_resamples, alpha)
    if why:
        return metrics, TestResult("skce_consistency", math.nan, observed, math.nan, METHOD,
                                   params=params, status=Status.INCONCLUSIVE, message=why,
                                   title=title)
    null = unbiased[1:]
    return metrics, TestResult("skce_consistency", observed, observed,
                               monte_carlo_pvalue(observed, null), METHOD,
                               n_resamples=n_resamples, params=params,
                               null_distribution=null, title=title)
