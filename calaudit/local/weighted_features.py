"""The weighted local tests through random Fourier features (docs/weights.md), for the
rows whose exact path the ``method`` rule (:func:`calaudit.inference.method.choose_method`)
sends to the features.

With the weighted feature map ``phi~`` of :mod:`calaudit.inference.weighted_skce_features`
on the scaled rows ``z`` (:func:`calaudit.local.features.product_features`), the statistic
of :mod:`calaudit.local.weighted_klce` is

    ``KLCE^2_w = (|| sum_i R_i (x) phi~_i ||^2 - U) / (A^2 - S2)``

(Vashistha & Farahi, eq. 4, over pairs of distinct weighted units): the weighted
``SKCE_uq`` with the kernel ``phi~_i . phi~_j``; a binary model's vector residual has the
entries ``+-(y - p_1)``, so ``SKCE_uq = 2 KLCE^2_w`` (multi-class: equal).

``local_consistency``'s score members (information from
:func:`calaudit.local.weighted_local.null_variance`) use the same redraws:
:func:`level_sums_partial` redraws the counts of every row block from its stream and sums,
per covariate level, ``R_i = alpha_i (C_i - t_i q_i)`` of the observed column and of every
redraw.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from calaudit.inference.feature_passes import PARTS
from calaudit.inference.weighted_skce_features import (
    STREAM,
    exponent_groups,
    feature_values,
    gemm_pieces,
    group_exponents,
    label_counts,
    row_terms,
)
from calaudit.local.aggregate import AggregateResult, combine
from calaudit.local.aggregate_test import level_codes, member_values
from calaudit.local.resampling import NullResult
from calaudit.local.score_members import ScoreMembers
from calaudit.numerics.features import FourierFeatures, exact_parts, exact_products
from calaudit.numerics.resampling import monte_carlo_pvalue
from calaudit.scale import block_rng, blocks, map_sum, task_ranges


def klce_values(features: FourierFeatures, z: NDArray[np.float64], y_true: NDArray,
                y_proba: NDArray[np.float64], weights: Any, seed: int = 0,
                n_resamples: int = 0) -> NDArray[np.float64]:
    """``KLCE^2_w`` (module docstring) of the observed labels (entry 0) and of
    ``n_resamples`` redraws from the block streams ``(seed, STREAM, block)``: ``y_proba``
    the (n, m) probabilities, ``z`` the scaled rows of the product kernel."""
    _, unbiased = feature_values(features, np.ascontiguousarray(z, dtype=np.float64),
                                 np.asarray(y_true, dtype=np.int64),
                                 np.asarray(y_proba, dtype=np.float64), weights,
                                 int(seed), int(n_resamples))
    return unbiased * (0.5 if y_proba.shape[1] == 2 else 1.0)


def drawn_rows(y_proba: NDArray[np.float64], weights: Any, lowest: int
               ) -> tuple[NDArray[np.intp], NDArray, NDArray, NDArray]:
    """One row block's rows of positive weight in the order the feature pass draws them
    (:func:`~calaudit.inference.weighted_skce_features.block_sums`: by exponent group,
    then units) and their ``alpha``, null law ``q`` and units ``t``."""
    alpha, law, units, _ = row_terms(y_proba, weights)
    kept = np.flatnonzero(alpha > 0)
    exponent = group_exponents(alpha[kept], lowest)
    rows = kept[np.lexsort((units[kept], exponent))]
    return rows, alpha[rows], law[rows], units[rows]


def block_counts(y: NDArray, y_proba: NDArray[np.float64], weights: Any, lowest: int,
                 rng: np.random.Generator | None, n_resamples: int
                 ) -> tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.float64]]:
    """One block's :func:`drawn_rows`, their weighted residual sums ``R`` (rows, m, 1 + B;
    column 0 the observed labels, then the redraws of ``rng``) and their factors ``alpha``."""
    rows, alpha, law, t = drawn_rows(y_proba, weights, lowest)
    m = y_proba.shape[1]
    counts = np.empty((rows.size, m, 1 + n_resamples))
    for k, drawn in enumerate(label_counts(rng, y[rows], t.astype(np.int64), law,
                                           n_resamples), start=1):
        counts[:, k] = drawn
    counts[:, 0] = t[:, None] - counts[:, 1:].sum(axis=1)
    counts -= (t[:, None] * law)[:, :, None]
    counts *= alpha[:, None, None]
    return rows, counts, alpha


def row_weights(weights: Any, rows: slice | NDArray[np.intp]) -> Any:
    """The weights of ``rows`` (a slice or row indices)."""
    rate = None if weights.negative_rate is None else weights.negative_rate[rows]
    return dataclasses.replace(weights, design=weights.design[rows], negative_rate=rate)


def level_sums_partial(start: int, stop: int, *, y_true: NDArray, y_proba: NDArray,
                       weights: Any, lowest: int, codes: NDArray[np.int32], n_levels: int,
                       top: NDArray[np.intp] | None, seed: int, n_resamples: int,
                       alpha_bound: float = 1.0) -> dict[str, NDArray]:
    """Per covariate level the weighted residual sums of rows ``[start, stop)``:
    ``"sums"`` (L, classes, 1 + B) (binary: the positive class's ``R``), with ``top`` the
    sums of the top-label entries ``R_{i, argmax p_i}`` (``"top"`` (L, 1 + B)). Binary:
    ``sum alpha_i K_i`` per level by exact float32 GEMMs of the exact parts of ``alpha``
    (``alpha_bound`` their bound) against the counts, and ``sum alpha_i t_i q_i`` apart
    (``"expected"``)."""
    m = y_proba.shape[1]
    classes = 1 if m == 2 else m
    out = {"sums": np.zeros((n_levels, classes, 1 + n_resamples))}
    if top is not None:
        out["top"] = np.zeros((n_levels, 1 + n_resamples))
    if m == 2:
        out["expected"] = np.zeros(n_levels)
    for block, lo, hi in blocks(start, stop):
        rng = block_rng(seed, STREAM, block) if n_resamples else None
        here = row_weights(weights, slice(lo, hi))
        if m == 2:  # R = alpha (K - t q): float32 GEMMs of alpha's exact parts by level
            rows, alpha, law, t = drawn_rows(y_proba[lo:hi], here, lowest)
            parts = exact_parts(alpha, alpha_bound, PARTS)
            placed = np.zeros((rows.size, n_levels, PARTS), dtype=np.float32)
            level = codes[lo:hi][rows]
            for column in level.T:
                placed[np.arange(rows.size), column] = parts.T
                out["expected"] += np.bincount(column, alpha * t * law[:, 1],
                                               minlength=n_levels)
            placed = placed.reshape(rows.size, -1)
            units = t.astype(np.int64)
            drawn = next(label_counts(rng, y_true[lo:hi][rows], units, law, n_resamples))
            for first, last, _, total in gemm_pieces(np.zeros(rows.size, np.int64), units):
                product = exact_products(placed[first:last], drawn[first:last], total)
                out["sums"][:, 0] += product.reshape(n_levels, PARTS, -1).sum(axis=1)
            continue
        rows, residual, _ = block_counts(y_true[lo:hi], y_proba[lo:hi], here, lowest, rng,
                                         n_resamples)
        d = codes.shape[1]
        h_t = sparse.csr_matrix((np.ones(rows.size * d), (
            codes[lo:hi][rows].ravel(), np.repeat(np.arange(rows.size), d))),
            shape=(n_levels, rows.size))
        out["sums"] += np.asarray(h_t @ residual.reshape(rows.size, -1)).reshape(
            n_levels, classes, -1)
        if top is not None:
            chosen = residual[np.arange(rows.size), top[lo:hi][rows], :]
            out["top"] += np.asarray(h_t @ chosen)
    return out


def level_sums(y_true: NDArray, y_proba: NDArray[np.float64], weights: Any,
               codes: NDArray[np.int32], n_levels: int, seed: int, n_resamples: int,
               top: NDArray[np.intp] | None = None) -> dict[str, NDArray]:
    """:func:`level_sums_partial` over every row through :mod:`calaudit.scale`: the score
    members' sums of the observed labels and of the redraws of :func:`klce_values` with
    the same ``seed``. Binary ``"sums"`` (L, 1 + B); multi-class (L, m, 1 + B)."""
    y_proba = np.asarray(y_proba, dtype=np.float64)
    alpha = row_terms(y_proba, weights)[0]
    total = map_sum(level_sums_partial, task_ranges(y_proba.shape[0]), {
        "y_true": np.asarray(y_true, dtype=np.int64), "y_proba": y_proba,
        "weights": weights, "lowest": int(exponent_groups(alpha)[0]),
        "codes": np.asarray(codes, dtype=np.int32), "n_levels": int(n_levels), "top": top,
        "seed": int(seed), "n_resamples": int(n_resamples),
        "alpha_bound": float(np.max(alpha, initial=1.0))})
    if y_proba.shape[1] == 2:
        total["sums"] = total["sums"][:, 0, :] - total.pop("expected")[:, None]
    return total


def feature_resampled(features: FourierFeatures, z: NDArray[np.float64], y_true: NDArray,
                      y_proba: NDArray[np.float64], weights: Any, scores: ScoreMembers,
                      levels: Sequence[Any], seed: int, n_resamples: int
                      ) -> tuple[AggregateResult, NullResult]:
    """The aggregate test of ``KLCE^2_w`` of the observed labels (its null from
    ``n_resamples`` redraws, its Monte-Carlo p-value) and of the score members
    (``scores``, on the group table's ``levels``) on the same redraws."""
    weights = weights.in_grid_range()
    values = klce_values(features, z, y_true, y_proba, weights, seed, n_resamples)
    observed, null = float(values[0]), values[1:]
    p_value = monte_carlo_pvalue(observed, null)
    codes, n_levels = level_codes([lv.codes for lv in levels],
                                  [len(lv.labels) for lv in levels])
    found = level_sums(y_true, y_proba, weights, codes, n_levels, seed, n_resamples,
                       scores.top)
    members = member_values(scores, found["sums"], found.get("top"), values, p_value)
    return combine(members), NullResult(observed, null, p_value)
