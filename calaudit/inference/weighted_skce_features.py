"""The SKCE of weighted rows through random Fourier features (docs/weights.md), above
``skce.max_quadratic_n`` rows or :data:`~calaudit.metrics.skce.MAX_MEDIAN_ROWS`
rows without a bandwidth (else :mod:`calaudit.inference.weighted_skce_test`).

With the weighted map ``phi~_i`` (the quantised ``phi`` of :class:`calaudit.numerics.
features.FourierFeatures` times the row's factor on its group's grid, divided back), kernel
``k_ij = phi~_i . phi~_j`` and the unit counts ``R_i``, ``A``, ``S2`` of
:mod:`calaudit.inference.weighted_skce_test` (Widmann et al. 2019, sec. 3):
``SKCE_b = || sum_i R_i (x) phi~_i ||^2 / A^2`` and ``SKCE_uq = (|| sum_i R_i (x) phi~_i
||^2 - U) / (A^2 - S2)``, ``U = sum_units a_u^2 |phi~_i|^2 ||e_y - p||^2``.

``R_ik = alpha_i (C_ik - t_i q_ik)`` (``C_ik`` the row's units of label ``k``, ``t_i`` in
all, ``q`` the null law, ``alpha_i = f_i``, or ``f_i ((1 - p_i) + p_i / r_i)`` when
negatives were kept at rate ``r_i``), so per label ``k >= 1`` (``G_0 = -sum_{k>=1} G_k``)
the statistics need ``G_k = Psi^T C_k - Psi^T (t q_k)``, ``Psi = diag(alpha) Phi``; ``U``,
``A`` and ``S2`` are linear in the counts. ``Psi_i`` is rounded to the grid ``2^(e_i - s)``
of its exponent group (``e_i = ceil(log2 alpha_i)``, at most :data:`SPAN` below the top),
so ``Psi^T C`` is one exact float32 GEMM per group, label and piece of at most
:data:`~calaudit.numerics.features.EXACT_WEIGHT` units.

Redraws: each unit's label from ``q``, from the stream ``(seed,
"weighted_skce_consistency", block)``; Monte-Carlo p-value ``(1 + #{T* >= T}) / (1 + B)``.
Default bandwidth: the weighted median heuristic, above ``MAX_MEDIAN_ROWS`` rows on a
seeded subsample of :data:`MEDIAN_SUBSAMPLE` rows.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from calaudit import registry
from calaudit.data.weights import SampleWeights
from calaudit.inference.applicability import monte_carlo_result
from calaudit.inference.feature_passes import PARTS
from calaudit.inference.feature_tests import feature_map
from calaudit.inference.weighted_skce_test import (
    consistency_reason,
    exact_null,
    null_law,
    unit_weights,
    weighted_skce_values,
)
from calaudit.inference.weighted_tests import not_weighted, take
from calaudit.metrics.skce import MAX_MEDIAN_ROWS, KernelChoice, weighted_kernel
from calaudit.numerics.block_draws import binomial_counts_into, categorical_counts
from calaudit.numerics.features import (
    EXACT_WEIGHT,
    PART_BITS,
    FourierFeatures,
    default_n_features,
    exact_parts,
    exact_products,
)
from calaudit.results import MetricResult, TestResult
from calaudit.scale import block_rng, blocks, map_sum, task_ranges

#: Rows of the subsample of the weighted median heuristic (its exact weighted median
#: sorts the subsample's pairs: about 0.2 s).
MEDIAN_SUBSAMPLE = 1000
#: Exponent groups: a row whose factor ``alpha`` is below ``2^-SPAN`` of the largest
#: shares the lowest group's grid.
SPAN = 30
#: Block stream of the consistency redraws.
STREAM = "weighted_skce_consistency"
METHOD = ("consistency resampling, weighted, random features: unit labels redrawn from "
          "their law in the sample, weighted SKCE_uq of the feature kernel")
EXACT_METHOD = ("consistency resampling, weighted: unit labels redrawn from their law in the "
                "sample, weighted SKCE_uq")
#: Why the other kernel tests are not weighted.
KERNEL_REASON = ("no weighted version of this SKCE test: on weighted rows skce_consistency "
                 "tests the weighted skce_uq")
#: Why the weighted SKCE took the random-feature path.
FEATURE_REASON = ("weighted rows above skce.max_quadratic_n, or above the exact weighted "
                  "median's rows without --bandwidth: random features")


def kernel_choice(y_proba: NDArray[np.float64], sample_weight: NDArray[np.float64],
                  name: str, bandwidth: float | None, frequency: bool,
                  rng: np.random.Generator | None) -> KernelChoice:
    """The kernel of both paths: the bandwidth given or the weighted median heuristic (on a
    subsample drawn with ``rng`` above ``MAX_MEDIAN_ROWS`` rows)."""
    n = y_proba.shape[0]
    if bandwidth is not None or n <= MAX_MEDIAN_ROWS:
        return weighted_kernel(y_proba, sample_weight, name, bandwidth, frequency)
    pick = np.sort(rng.choice(n, MEDIAN_SUBSAMPLE, replace=False))
    choice = weighted_kernel(y_proba[pick], sample_weight[pick], name, None, frequency)
    source = choice.source + ("_subsample" if choice.source.startswith("weighted") else "")
    return KernelChoice(name, choice.bandwidth, source)


def row_terms(y_proba: NDArray[np.float64], weights: SampleWeights
              ) -> tuple[NDArray, NDArray, NDArray, NDArray]:
    """``(alpha, q, t, w)`` of every row: the factor ``alpha_i`` (0 on rows of no unit),
    the null law ``q`` (n, m), the units ``t`` and the unit weights ``w_ik = f_i a_ik``."""
    m = y_proba.shape[1]
    factor, per_class = unit_weights(weights, m)
    w = factor[:, None] * per_class
    units = weights.unit_split()[0]
    alpha = factor if weights.negative_rate is None else (
        w[:, 1] * y_proba[:, 0] + w[:, 0] * y_proba[:, 1])
    return np.where(units > 0, alpha, 0.0), null_law(weights, y_proba), units, w


def group_exponents(alpha: NDArray[np.float64], lowest: int) -> NDArray[np.int64]:
    """``e_i = max(ceil(log2 alpha_i), lowest)`` (``alpha_i > 0``)."""
    mantissa, exponent = np.frexp(alpha)
    return np.maximum(exponent.astype(np.int64) - (mantissa == 0.5), lowest)


def exponent_groups(alpha: NDArray[np.float64]) -> NDArray[np.int64]:
    """The exponent groups of the rows of positive ``alpha`` (at most :data:`SPAN` low)."""
    kept = alpha[alpha > 0]
    if not kept.size:
        return np.zeros(1, dtype=np.int64)
    top = int(group_exponents(kept, -(2**31)).max())
    return np.unique(group_exponents(kept, top - SPAN))


def exponent_bands(exponents: NDArray[np.int64], units: float) -> NDArray[np.int64]:
    """The lowest exponent of the band of every group: groups within ``W = 42 -
    ceil(log2 units)`` exponents of a band's lowest share its sums of ``Psi^T C`` (integers
    below ``2^(11 + W + log2 units) <= 2^53`` on that grid: exact)."""
    width = max(1, 42 - math.ceil(math.log2(max(units, 1.0))))
    bases: list[int] = []
    for e in exponents.tolist():
        bases.append(e if not bases or e - bases[-1] >= width else bases[-1])
    return np.array(bases, dtype=np.int64)


def weighted_map(features: FourierFeatures, x: NDArray[np.float64],
                 alpha: NDArray[np.float64], exponent: NDArray[np.int64]
                 ) -> NDArray[np.float32]:
    """``rint(phi_i 2^s (alpha_i 2^-e_i))`` (rows, D): ``Psi`` in units of its group's grid
    ``2^(e_i - s)`` (``2^-s`` the grid of the quantised ``phi``), at most 11 bits."""
    psi = features.quantised(x)
    psi *= np.float32(2.0 ** features.grid)  # integers, exactly
    ratio = np.ldexp(alpha, -exponent)
    if np.any(ratio != 1.0):
        psi *= ratio.astype(np.float32)[:, None]
        np.rint(psi, out=psi)
    return psi


def unit_terms(y_proba: NDArray[np.float64], w: NDArray[np.float64],
               norm: NDArray[np.float64]) -> NDArray[np.float64]:
    """(rows, 3, m): for a unit of label ``k``, its terms of ``U``, ``A`` and ``S2``:
    ``w_k^2 |phi~|^2 ||e_k - p||^2``, ``w_k``, ``w_k^2``."""
    own = 1.0 - 2.0 * y_proba + (y_proba * y_proba).sum(axis=1, keepdims=True)
    return np.stack([w * w * own * norm[:, None], w, w * w], axis=1)


def norm_bound(features: FourierFeatures) -> float:
    """A bound on ``|phi~_i|^2``: every entry is at most ``2 max|phi| + 2^-s``."""
    top = 2.0 * math.sqrt(1.0 / (features.n_features // 2)) * (1 + 1e-6)
    return features.n_features * (top + 2.0 ** -features.grid) ** 2 * (1 + 1e-6)


def bounds_of(y_proba: NDArray[np.float64], terms: tuple, features: FourierFeatures
              ) -> dict[str, NDArray[np.float64]]:
    """The bounds of the exact parts of the slopes and constants of ``U, A, S2`` and of
    ``t q`` over all rows, and the parts of ``t q`` (one more per 12 bits of the largest
    ``t``, so that ``q`` keeps 47 bits)."""
    _, law, units, w = terms
    h = unit_terms(y_proba, w, np.full(units.size, norm_bound(features)))
    slope = np.max(np.abs(h[:, :, 1:] - h[:, :, :1]), axis=(0, 2), initial=0.0)
    constant = np.max(np.abs(units[:, None] * h[:, :, 0]), axis=0, initial=0.0)
    tq = np.max(units[:, None] * law[:, 1:], initial=0.0)
    out = {key: np.maximum(value * (1 + 1e-9), 1e-300) for key, value in (
        ("slope", slope), ("constant", constant), ("tq", np.array([tq])))}
    top = float(np.max(units, initial=1.0))
    return {**out, "tq_parts": PARTS + math.ceil(math.log2(max(top, 1.0)) / PART_BITS)}


def gemm_pieces(exponent: NDArray[np.int64], units: NDArray[np.int64]):
    """``(first, last, e, unit total)`` of the GEMMs of one block's sorted rows: runs of
    one exponent group of at most :data:`EXACT_WEIGHT` units (a row with more is alone)."""
    edges = [0, *(np.flatnonzero(np.diff(exponent)) + 1).tolist(), exponent.size]
    for first, last in zip(edges[:-1], edges[1:]):
        cumulative, start, done = np.cumsum(units[first:last]), first, 0
        while start < last:
            stop = first + int(np.searchsorted(cumulative, done + EXACT_WEIGHT, "right"))
            stop = max(stop, start + 1)
            yield start, stop, int(exponent[first]), int(cumulative[stop - first - 1] - done)
            start, done = stop, int(cumulative[stop - first - 1])


def _parts(values: NDArray[np.float64], bounds: NDArray[np.float64], parts: int = PARTS
           ) -> NDArray[np.float32]:
    """(rows, columns * parts) exact parts of the columns of ``values`` (rows, columns)."""
    return np.concatenate([exact_parts(values[:, j], float(bounds[j]), parts).T
                           for j in range(values.shape[1])], axis=1)


def label_counts(rng: np.random.Generator | None, y: NDArray[np.int64], units, law,
                 n_resamples: int):
    """(rows, 1 + B) counts of each label ``k >= 1`` in turn: observed, then redrawn."""
    m = law.shape[1]  # float32 holds every count up to 2^24 exactly
    out = np.empty((y.size, 1 + n_resamples),
                   dtype=np.float32 if np.max(units, initial=0) <= 2**24 else np.float64)
    drawn = None
    if rng is not None and m > 2:
        drawn = categorical_counts(rng, units, law, n_resamples)
        next(drawn)  # label 0: its counts are t minus the others'
    for k in range(1, m):
        out[:, 0] = units * (y == k)
        if rng is not None and m == 2:
            binomial_counts_into(rng, units, law[:, 1], out[:, 1:])
        elif drawn is not None:
            out[:, 1:] = next(drawn)
        yield out


def block_sums(out: dict[str, NDArray], features: FourierFeatures, x: NDArray[np.float64],
               y: NDArray[np.int64], y_proba: NDArray[np.float64], weights: SampleWeights,
               exponents: NDArray[np.int64], bases: NDArray[np.int64], bounds: dict,
               rng: np.random.Generator | None, n_resamples: int) -> None:
    """Add one row block's exact sums to ``out``: rows of positive weight sorted by group
    and units, one GEMM ``[Psi | slope parts]^T Y`` per label ``k >= 1`` and piece."""
    alpha, law, units, w = row_terms(y_proba, weights)
    kept = np.flatnonzero(alpha > 0)
    exponent = group_exponents(alpha[kept], int(exponents[0]))
    order = np.lexsort((units[kept], exponent))
    rows, exponent = kept[order], exponent[order]
    alpha, law, w, y, p = alpha[rows], law[rows], w[rows], y[rows], y_proba[rows]
    units = units[rows].astype(np.int64)
    psi = weighted_map(features, x[rows], alpha, exponent)
    wide, ratio = psi.astype(np.float64), np.ldexp(alpha, -exponent)
    norm = np.einsum("ij,ij->i", wide, wide) * 4.0 ** -features.grid  # |phi~|^2 below
    squared = ratio * ratio  # 0 where alpha is so far below the top that Psi rounds to 0
    h = unit_terms(p, w, np.divide(norm, squared, out=np.zeros_like(norm), where=squared > 0))
    quantities = out["x"].shape[1] // PARTS
    slopes = h[:, :quantities, 1:] - h[:, :quantities, :1]
    out["c"] += _parts(units[:, None] * h[:, :, 0], bounds["constant"]).reshape(
        -1, 3, PARTS).astype(np.float64).sum(axis=0)
    tq = _parts(units[:, None] * law[:, 1:], np.repeat(bounds["tq"], law.shape[1] - 1),
                bounds["tq_parts"])
    pieces = list(gemm_pieces(exponent, units))
    for e in np.unique(exponent).tolist():
        at = np.flatnonzero(exponent == e)
        group = int(np.searchsorted(exponents, e))
        out["v"][group] += (wide[at].T @ tq[at].astype(np.float64)).reshape(
            -1, law.shape[1] - 1, bounds["tq_parts"]).transpose(1, 0, 2)
    d, bands = features.n_features, np.unique(bases)
    for k, counts in enumerate(label_counts(rng, y, units, law, n_resamples)):
        left = np.hstack([psi, _parts(slopes[:, :, k], bounds["slope"][:quantities])])
        for first, last, e, total in pieces:
            product = exact_products(left[first:last], counts[first:last], total)
            base = int(bases[np.searchsorted(exponents, e)])
            out["G"][int(np.searchsorted(bands, base)), k] += np.ldexp(product[:d], e - base)
            out["x"][k] += product[d:]


def feature_partial(start: int, stop: int, *, features: FourierFeatures,
                    x: NDArray[np.float64], y_true: NDArray[np.int64],
                    y_proba: NDArray[np.float64], weights: SampleWeights,
                    exponents: NDArray[np.int64], bases: NDArray[np.int64], bounds: dict,
                    seed: int, n_resamples: int) -> dict[str, NDArray]:
    """:func:`block_sums` of the rows ``[start, stop)``: ``G`` (bands, m - 1, D, 1 + B),
    ``v`` (groups, m - 1, D, parts) of ``Psi^T (t q)``, ``x`` (m - 1, parts of U[, A,
    S2], 1 + B) and ``c`` (3, parts) the constants."""
    m, columns = y_proba.shape[1], 1 + n_resamples
    d, groups = features.n_features, len(exponents)
    quantities = 3 if weights.label_dependent else 1
    out = {"G": np.zeros((np.unique(bases).size, m - 1, d, columns)),
           "v": np.zeros((groups, m - 1, d, bounds["tq_parts"])),
           "x": np.zeros((m - 1, quantities * PARTS, columns)), "c": np.zeros((3, PARTS))}
    for block, lo, hi in blocks(start, stop):
        rng = block_rng(seed, STREAM, block) if n_resamples else None
        block_sums(out, features, x[lo:hi], y_true[lo:hi], y_proba[lo:hi],
                   take(weights, slice(lo, hi)), exponents, bases, bounds, rng, n_resamples)
    return out


def statistics(total: dict[str, NDArray], exponents: NDArray[np.int64],
               bases: NDArray[np.int64], grid: int) -> tuple[NDArray, NDArray]:
    """``(SKCE_b, SKCE_uq)`` of every column of the summed :func:`feature_partial`."""
    gram = np.einsum("b,bkdc->kdc", np.ldexp(1.0, np.unique(bases) - grid), total["G"])
    gram -= np.einsum("g,gkd->kd", np.ldexp(1.0, np.asarray(exponents) - grid),
                      total["v"].sum(axis=3))[..., None]
    first = gram.sum(axis=0)
    full = np.einsum("kdc,kdc->c", gram, gram) + np.einsum("dc,dc->c", first, first)
    extra = total["x"].sum(axis=0).reshape(-1, PARTS, gram.shape[2]).sum(axis=1)
    constant = total["c"].sum(axis=1)
    u, a, s2 = (constant[j] + (extra[j] if j < extra.shape[0] else 0.0) for j in range(3))
    with np.errstate(invalid="ignore", divide="ignore"):
        return full / a ** 2, (full - u) / (a ** 2 - s2)


def feature_values(features: FourierFeatures, x: NDArray[np.float64],
                   y_true: NDArray[np.int64], y_proba: NDArray[np.float64],
                   weights: SampleWeights, seed: int = 0, n_resamples: int = 0
                   ) -> tuple[NDArray, NDArray]:
    """:func:`statistics` of the observed rows (column 0) and ``n_resamples`` redraws."""
    weights = weights.in_grid_range()
    terms = row_terms(y_proba, weights)
    exponents = exponent_groups(terms[0])
    bases = exponent_bands(exponents, float(terms[2][terms[0] > 0].sum()))
    total = map_sum(feature_partial, task_ranges(y_true.size), {
        "features": features, "x": x, "y_true": y_true, "y_proba": y_proba,
        "weights": weights, "exponents": exponents, "bases": bases,
        "bounds": bounds_of(y_proba, terms, features), "seed": int(seed),
        "n_resamples": int(n_resamples)})
    return statistics(total, exponents, bases, features.grid)


def feature_skce(y_true: NDArray[np.int64], y_proba: NDArray[np.float64],
                 weights: SampleWeights, sample_weight: NDArray[np.float64], *, kernel: str,
                 bandwidth: float | None, n_features: int | None, n_resamples: int,
                 rng: np.random.Generator) -> tuple[dict, NDArray, NDArray]:
    """``(params, SKCE_b, SKCE_uq)`` of weighted rows on the feature path: column 0 of
    the observed rows, then ``n_resamples`` redraws."""
    median_rng, feature_rng, draw_rng = rng.spawn(3)
    choice = kernel_choice(y_proba, sample_weight, kernel, bandwidth,
                           weights.kind == "frequency", median_rng)
    columns = (1 if y_proba.shape[1] == 2 else y_proba.shape[1]) * max(n_resamples, 1)
    d = int(n_features) if n_features else default_n_features(y_true.size, columns)
    d += d % 2
    frequency_seed, seed = int(feature_rng.integers(0, 2**62)), int(draw_rng.integers(0, 2**62))
    features, x = feature_map(choice, y_proba, d, frequency_seed)
    biased, unbiased = feature_values(features, x, y_true, y_proba, weights, seed, n_resamples)
    return {**choice.to_params(), "weights": weights.kind, "computation": {
        "method": "features", "reason": FEATURE_REASON, "n_features": d,
        "frequency_seed": frequency_seed, "n_features_rule": "given" if n_features
        else "default"}}, biased, unbiased


def weighted_skce(y_true: NDArray[np.int64], y_proba: NDArray[np.float64],
                  weights: SampleWeights, sample_weight: NDArray[np.float64], *, kernel: str,
                  bandwidth: float | None, max_quadratic_n: int, n_features: int | None,
                  tests: tuple[str, ...], n_resamples: int, alpha: float,
                  rng: np.random.Generator
                  ) -> tuple[tuple[MetricResult, ...], tuple[TestResult, ...]]:
    """``skce_b``, ``skce_uq`` and the ``tests`` of weighted rows: on the exact kernel up
    to ``max_quadratic_n`` rows (and ``MAX_MEDIAN_ROWS`` without ``bandwidth``;
    :mod:`calaudit.inference.weighted_skce_test`, redraws drawn with ``rng``), else on
    random features (``rng`` spawned); ``skce_consistency`` tests the weighted ``SKCE_uq``,
    every other test is SKIPPED (:data:`KERNEL_REASON`)."""
    consistency = "skce_consistency" in tests
    if y_true.size <= max_quadratic_n and (bandwidth is not None
                                          or y_true.size <= MAX_MEDIAN_ROWS):
        choice = kernel_choice(y_proba, sample_weight, kernel, bandwidth,
                               weights.kind == "frequency", None)
        params, gram = {**choice.to_params(), "weights": weights.kind}, choice.kernel.on(y_proba)
        biased, unbiased = (np.array([value]) for value in
                            weighted_skce_values(gram, y_true, y_proba, weights))
        method = EXACT_METHOD

        def null() -> NDArray[np.float64]:
            return exact_null(gram, y_proba, weights, n_resamples, rng)
    else:
        params, biased, unbiased = feature_skce(
            y_true, y_proba, weights, sample_weight, kernel=kernel, bandwidth=bandwidth,
            n_features=n_features, n_resamples=n_resamples if consistency else 0, rng=rng)
        method = METHOD

        def null() -> NDArray[np.float64]:
            return unbiased[1:]
    metrics = tuple(MetricResult(key, float(value[0]), dict(params), title=registry.title(key))
                    for key, value in (("skce_b", biased), ("skce_uq", unbiased)))
    notion = "binary" if y_proba.shape[1] == 2 else "top-label"
    out = []
    for test_id in tests:
        if test_id != "skce_consistency":
            out.append(not_weighted(test_id, KERNEL_REASON, notion))
            continue
        observed = float(unbiased[0])
        why = consistency_reason(y_true.size, weights, observed, n_resamples, alpha)
        out.append(monte_carlo_result("skce_consistency", observed, None if why else null(),
                                      why, method, params, registry.title("skce_consistency")))
    return metrics, tuple(out)
