"""Tests of "the model is calibrated" on weighted rows (docs/weights.md).

A sampled label's null law is ``q_i = p_i``, or ``q_i = p_i / (p_i + r_i (1 - p_i))`` when
negatives were kept at rate ``r_i``; each test redraws labels from ``q`` and recomputes the
weighted statistic, the weights following the redrawn label (``d_i``, times ``1 / r_i``
for a negative).

* ``ece_consistency`` (:func:`calaudit.inference.consistency.ece_consistency_of_rows`
  with weights, its sums from :func:`null_sums`): the weighted binned ECE against
  redraws, Monte-Carlo p-value
  ``(1 + #{T* >= T}) / (1 + B)``. Frequency weights redraw every unit (the null of the
  repeated rows); design weights one draw per row. Label-independent weights: the
  Poisson-binomial event counts per bin (or (bin, weight value) cell, at most
  :data:`MAX_LEVELS` values) are drawn directly; otherwise every row is redrawn.
* ``spiegelhalter`` (:func:`calaudit.inference.classical.spiegelhalter` with weights):
  ``T = sum_i w_i (y_i - p_i)(1 - 2 p_i)``, null mean 0, variance ``V = sum_i a_i (1 -
  2 p_i)^2 [q_i (1 - p_i)^2 + (1 - q_i) p_i^2 / r_i^2]`` with ``a = d`` for frequency
  weights and ``a = d^2`` otherwise; ``z = T / sqrt(V)``, two-sided.
* ``hosmer_lemeshow`` (not for frequency weights alone, :mod:`calaudit.inference.classical`):
  ``X = sum_g (O_g - E_g)^2 / V_g`` against redraws (:func:`weighted_hosmer_lemeshow`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import registry, scale
from calaudit.data.weights import SampleWeights
from calaudit.inference import applicability as rules
from calaudit.metrics.binned import BinnedOutcomes, BinSums
from calaudit.numerics.binning import weighted_quantiles
from calaudit.numerics.block_draws import binary_labels_into, label_thresholds
from calaudit.numerics.features import exact_parts, exact_products
from calaudit.numerics.poisson_binomial import cell_counts, unit_cell_counts
from calaudit.numerics.tabulate import Cells, distinct
from calaudit.results import Status, TestResult
from calaudit.scale import ROW_BLOCK, ArrayRows, blocks, task_ranges

STREAM = "ece_consistency_weighted"
#: Most distinct weight values for which the counts of (bin, weight value) cells are drawn.
MAX_LEVELS = 64
#: Most units (sum of frequency weights) whose counts are drawn per bin.
MAX_UNITS = 50_000_000
#: Grid parts of each coefficient of the redraws' sums (:func:`ece_null_partial`).
PARTS = 4


def take(weights: SampleWeights, rows: Any) -> SampleWeights:
    """The weights of ``rows`` (indices or a slice)."""
    rate = weights.negative_rate
    return dataclasses.replace(weights, design=weights.design[rows],
                               negative_rate=None if rate is None else rate[rows])


def null_columns(weights: SampleWeights, scores: NDArray[np.float64], binary: bool
                 ) -> dict[str, NDArray[np.float64]]:
    """Per-row columns of the null: ``q``, ``d`` and ``r`` (1 without sampling)."""
    rate = weights.negative_rate if binary and weights.negative_rate is not None else None
    q = weights.null_positive_rate(scores) if rate is not None else scores
    return {"q": np.asarray(q, dtype=np.float64), "d": weights.design,
            "r": np.ones(scores.size) if rate is None else rate}


def ece_null_partial(start: int, stop: int, *, rows: Any, seed: int, n_cells: int,
                     n_resamples: int, units: bool, bounds: tuple[float, float, float]
                     ) -> dict[str, NDArray]:
    """Per-cell weighted sums of ``n_resamples`` redraws from ``q`` of the rows ``[start,
    stop)`` (block streams).

    ``units`` (frequency weights): row ``i`` holds ``t_i = d_i`` units, redrawn events
    ``K ~ Binomial(t_i, q_i)`` weighing 1 and negatives ``1 / r_i``; otherwise one unit of
    weight ``f_i = d_i`` (times ``1 / r_i`` when negative), ``K = 1{u < T}``. A cell's
    weight is ``sum f t / r + sum K f (1 - 1/r)``, its score sum the same with ``s``
    inside, its event weight ``sum K f``. Each block's rows are taken in cell order and a
    cell's ``K`` terms are one exact float32 product of the coefficients' grid parts
    (``bounds`` their largest sizes) with its (rows, B) draws."""
    read = rows.read(start, stop, ["index", "score", "q", "d", "r"])
    total = np.zeros((3 * n_cells, n_resamples))
    fixed = np.zeros((3 * n_cells, 1))
    labels = np.empty((min(ROW_BLOCK, stop - start), n_resamples), dtype=np.float32)
    for block, lo, hi in blocks(start, stop):
        order = np.argsort(read["index"][lo - start:hi - start], kind="stable") + lo - start
        index, s, d, r, q = (read[k][order] for k in ("index", "score", "d", "r", "q"))
        trials, factor = (d, np.ones(hi - lo)) if units else (np.ones(hi - lo), d)
        slope = factor * (1.0 - 1.0 / r)
        if units and (trials != 1).any():
            draw = scale.block_rng(seed, STREAM, block)
            events = draw.binomial(trials.astype(np.int64)[:, None], q[:, None],
                                   size=(hi - lo, n_resamples)).astype(np.float64)
        else:
            events = labels[:hi - lo]
            binary_labels_into(scale.block_rng(seed, STREAM, block), label_thresholds(q),
                               events)
        parts = np.vstack([exact_parts(c, bound, PARTS) for c, bound in
                           zip((slope, slope * s, factor), bounds)]).T
        cuts = np.searchsorted(index, np.arange(n_cells + 1))
        for cell in np.flatnonzero(np.diff(cuts)):
            a, b = cuts[cell], cuts[cell + 1]
            sums = exact_products(parts[a:b], events[a:b], float(trials[a:b].sum()))
            total[cell::n_cells] += sums.reshape(3, PARTS, n_resamples).sum(axis=1)
        base = factor * trials / r
        fixed[:n_cells, 0] += np.bincount(index, base, minlength=n_cells)
        fixed[n_cells:2 * n_cells, 0] += np.bincount(index, base * s, minlength=n_cells)
    total += fixed
    return {"count": total[:n_cells], "score": total[n_cells:2 * n_cells],
            "event": total[2 * n_cells:]}


def observed_sums(binned: Any, weights: SampleWeights, binary: bool) -> BinSums:
    """Per-bin weight, weighted score and event weight of the observed outcomes ((bins,
    1)): row ``i`` weighs ``d_i``, times ``1 / r_i`` when negative (``binary``)."""
    rated = weights if binary else dataclasses.replace(weights, negative_rate=None)
    w, index, n = rated.of_labels(binned.outcomes > 0), binned.cells.index, binned.cells.n_cells
    return BinSums(*(np.bincount(index, v, minlength=n)[:, None] for v in (
        w, w * binned.scores, np.where(binned.outcomes > 0, w, 0.0))))


def null_sums(binned: Any, weights: SampleWeights, binary: bool, n_resamples: int,
              rng: np.random.Generator, scores: bool = True
              ) -> tuple[BinSums, BinSums | None]:
    """Per-bin weighted sums of the observed outcomes ((bins, 1)) and of ``n_resamples``
    redraws ((bins, B); None for 0): Poisson-binomial cell counts where they apply
    (:func:`cell_draws`; :func:`label_cell_draws` when the score sums are not needed,
    ``scores=False``), else every row redrawn (:func:`ece_null_partial`)."""
    if not n_resamples:
        drawn = None
    elif weights.label_dependent:
        drawn = None if scores or not binary else label_cell_draws(binned, weights,
                                                                   n_resamples, rng)
    else:
        drawn = cell_draws(binned, weights, n_resamples, rng)
    if drawn is not None:
        return drawn
    if not n_resamples:
        return observed_sums(binned, weights, binary), None
    source = ArrayRows({"index": binned.cells.index, "score": binned.scores,
                        **null_columns(weights, binned.scores, binary)})
    n = binned.scores.size
    with scale.resident(source) as rows:
        units = weights.kind == "frequency"
        factor = np.ones(n) if units else source.columns["d"]
        slope = np.abs(factor * (1.0 - 1.0 / source.columns["r"]))
        sums = scale.map_sum(ece_null_partial, task_ranges(n), {
            "rows": rows, "seed": scale.stream_seed(rng), "n_cells": binned.cells.n_cells,
            "n_resamples": n_resamples, "units": units,
            "bounds": tuple(max(float(np.max(v, initial=0.0)), 2.0**-900)
                            for v in (slope, slope * binned.scores, factor))})
    return (observed_sums(binned, weights, binary),
            BinSums(sums["count"], sums["score"], sums["event"]))


def cell_draws(binned: Any, weights: SampleWeights, n_resamples: int,
               rng: np.random.Generator) -> tuple[BinSums, BinSums] | None:
    """Per-bin sums of the observed outcomes and of redraws from Poisson-binomial cell
    counts, for label-independent weights: frequency weights of at most :data:`MAX_UNITS`
    units as units (the repeated rows' draws), design weights with at most
    :data:`MAX_LEVELS` values as (bin, weight value) cells. None when neither applies."""
    design, cells = weights.design, binned.cells
    few = distinct(design).size <= MAX_LEVELS
    if weights.kind == "frequency":
        if design.sum() > MAX_UNITS:  # rows redrawn as Binomial(d_i, q_i): O(rows)
            return None
        repeat = design.astype(np.int64)
        levels = np.ones(1)
        refined, scores = ((cells.index, binned.scores) if few else
                           (np.repeat(cells.index, repeat), np.repeat(binned.scores, repeat)))
    else:
        levels = distinct(design)
        if levels.size > MAX_LEVELS:
            return None
        refined = cells.index * levels.size + np.searchsorted(levels, design)
        scores = binned.scores

    def events(counts: NDArray) -> NDArray[np.float64]:
        per_level = np.asarray(counts, dtype=np.float64).reshape(cells.n_cells, levels.size, -1)
        return np.einsum("cld,l->cd", per_level, levels)

    seen = observed_sums(binned, weights, False)
    if weights.kind != "frequency":  # the event weights per weight value, as the redraws'
        seen = dataclasses.replace(seen, event=events(np.bincount(
            refined, binned.outcomes, minlength=cells.n_cells * levels.size)[:, None]))
    drawn = (unit_cell_counts(scores, design, refined, cells.n_cells, n_resamples, rng)
             if weights.kind == "frequency" and few else
             cell_counts(scores, refined, cells.n_cells * levels.size, n_resamples, rng))
    return seen, BinSums(np.repeat(seen.count, n_resamples, axis=1),
                         np.repeat(seen.score, n_resamples, axis=1), events(drawn))


def label_cell_draws(binned: Any, weights: SampleWeights, n_resamples: int,
                     rng: np.random.Generator) -> tuple[BinSums, BinSums] | None:
    """Per-bin weights and event weights of the observed outcomes and of redraws under
    label-dependent sampling (binary; the redraws' score sums NaN): with ``K_cl`` events
    among the ``n_cl`` units of bin ``c`` and weight level ``l = (f, r)``, the bin's weight
    is ``sum_l f_l (n_cl / r_l + K_cl (1 - 1 / r_l))`` and its event weight ``sum_l f_l
    K_cl``, ``K_cl`` Poisson-binomial. None with more than :data:`MAX_LEVELS` levels."""
    design, cells, rate = weights.design, binned.cells, weights.negative_rate
    frequency = weights.kind == "frequency"
    if frequency and distinct(design).size > MAX_LEVELS:
        return None
    units, factor = weights.unit_split()
    factors, factor_code = np.unique(factor, return_inverse=True)
    rates, rate_code = np.unique(rate, return_inverse=True)
    used, level = np.unique(factor_code * rates.size + rate_code, return_inverse=True)
    if used.size > MAX_LEVELS:
        return None
    pairs = np.column_stack([factors[used // rates.size], rates[used % rates.size]])
    refined = cells.index * pairs.shape[0] + level.ravel()
    q = weights.null_positive_rate(binned.scores)
    n_fine = cells.n_cells * pairs.shape[0]
    size = np.bincount(refined, units, minlength=n_fine).reshape(cells.n_cells, -1, 1)
    f, r = pairs[:, 0][None, :, None], pairs[:, 1][None, :, None]
    drawn = (unit_cell_counts(q, units, refined, n_fine, n_resamples, rng)
             if (units != 1).any() else cell_counts(q, refined, n_fine, n_resamples, rng))
    drawn = drawn.astype(np.float64).reshape(cells.n_cells, pairs.shape[0], n_resamples)
    count = (f * (size / r + drawn * (1.0 - 1.0 / r))).sum(axis=1)
    return observed_sums(binned, weights, True), BinSums(count, np.full(count.shape, np.nan),
                                                         (f * drawn).sum(axis=1))


def weighted_hosmer_lemeshow(y_true: NDArray[np.int64], p: NDArray[np.float64],
                             weights: SampleWeights, *, groups: int = 10,
                             n_resamples: int = 1000, alpha: float = 0.05,
                             rng: np.random.Generator | None) -> TestResult:
    """``hosmer_lemeshow`` on design weights or label-dependent sampling: groups between
    the distinct weighted quantiles ``0, 1/g, .., 1`` of ``p`` (weights ``d``, fixed under
    the redraws), ``O_g = sum w y``, ``E_g = sum w p``, ``V_g = sum a [q (1 - p)^2 + (1 - q)
    p^2 / r^2]`` (``a = d`` for frequency weights, ``d^2`` otherwise), ``X = sum_g (O_g -
    E_g)^2 / V_g`` over groups with ``V_g > 0`` against redraws (:func:`null_sums`).
    Unweighted: the Pearson form of Hosmer & Lemeshow (1980)."""
    y = np.asarray(y_true, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    d = np.asarray(weights.design, dtype=np.float64)
    frequency = weights.kind == "frequency"
    kept = d > 0
    breaks = np.unique(weighted_quantiles(p[kept], d[kept], np.linspace(0.0, 1.0, groups + 1),
                                          frequency))
    size = max(breaks.size - 1, 1)
    index = np.searchsorted(breaks[1:-1], p, side="left")
    binned = BinnedOutcomes(p, y, Cells(index, size), breaks)
    null = null_columns(weights, p, True)
    q, r = null["q"], null["r"]
    a = d if frequency else d * d
    variance = np.bincount(index, a * (q * (1.0 - p) ** 2 + (1.0 - q) * p * p / (r * r)),
                           minlength=size)
    used = variance > 0
    reason = (rules.too_few_rows(y.size) or rules.resampling_cannot_reject(n_resamples, alpha)
              or (None if used.any() else "zero null variance in every group"))
    seen, drawn = null_sums(binned, weights, True, 0 if reason else n_resamples, rng)

    def statistic(sums: BinSums) -> NDArray[np.float64]:
        residual = (sums.event - sums.score)[used]
        return np.sum(residual * residual / variance[used][:, None], axis=0)

    observed = float(statistic(seen)[0])
    params = {"groups_requested": groups, "groups": int(used.sum()),
              "weights": weights.kind, "label_dependent": weights.label_dependent,
              "observed": seen.event[used, 0].tolist(),
              "expected": seen.score[used, 0].tolist(), "variance": variance[used].tolist(),
              "caveat": "depends on the grouping; low power; see documentation"}
    method = ("Hosmer-Lemeshow on weighted rows: weighted groups, Monte-Carlo p-value from "
              "labels redrawn from their law in the sample")
    title = registry.title("hosmer_lemeshow")
    return rules.monte_carlo_result("hosmer_lemeshow", observed,
                              None if reason else statistic(drawn), reason, method, params,
                              title)


def not_weighted(test_id: str, reason: str, notion: str = "binary") -> TestResult:
    """A test with no weighted version: SKIPPED with the reason."""
    return TestResult(test_id, math.nan, math.nan, math.nan, "not run on weighted rows",
                      status=Status.SKIPPED, message=reason,
                      title=registry.title(test_id, notion))
