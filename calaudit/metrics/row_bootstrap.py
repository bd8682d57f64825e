"""Bootstrap replicates of the binned sums of a row source (``y``, ``proba``, optionally
the row weights ``w``), as one reduction over the source's rows.

Resample ``b`` counts row ``i`` ``C[i, b]`` times (Efron & Tibshirani 1993, ch. 6: a
statistic of a resample is the count-weighted statistic of the data), ``C`` the multinomial
``(n; 1/n, ..., 1/n)`` factorised over the fixed row blocks
(:mod:`calaudit.numerics.block_draws`): per-block totals drawn once from the stream
``(seed, stream + ":totals", 0)``, each block's counts from ``(seed, stream, block)``. So a
block's counts depend only on ``(seed, stream, block)`` and the task that reads a block
draws them: the replicates are the same whether the rows are in memory or read by tasks on
workers, and whatever the executor.

:func:`replicate_partial` adds, per resample, the sums :func:`calaudit.metrics.row_summary.
summary_partial` adds once (rows counted ``C[i, b]`` times, ``C[i, b] w_i`` with row
weights): per panel and bin count, ``sum s``, ``sum o``, ``sum s^2``, ``sum o s``; the
Brier sums, the log-loss sum and the canonical grid cells' count, ``sum p_k``, ``sum 1{y =
k}``. The bins are the full data's (:class:`~calaudit.metrics.row_summary.Binning`). Sums
over a block's rows accumulate row by row (``np.add.reduceat`` of rows sorted by bin), so
their bits depend on the rows only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.metrics.binned import BinSums
from calaudit.metrics.row_summary import (
    COUNT,
    Binning,
    merge_cells,
    panel_columns,
    row_terms,
    shared_result,
    weighted_source,
    where_rows_are,
)
from calaudit.numerics.binning import grid_cells
from calaudit.numerics.block_draws import block_counts, totals_table
from calaudit.scale import block_rng, blocks


@dataclass(frozen=True)
class Draws:
    """The bootstrap counts of a row source's blocks: ``n_resamples`` resamples from the
    stream ``stream`` of the block seed ``seed``
    (:func:`calaudit.scale.stream_seed` of a stage generator)."""

    seed: int
    stream: str
    n_resamples: int

    def counts(self, totals: Any, block: int, rows: int) -> NDArray[np.float64]:
        """(rows, B) counts of block ``block`` (``totals``: the per-block totals table)."""
        drawn = block_counts(block_rng(self.seed, self.stream, block), rows, totals[block])
        return np.ascontiguousarray(drawn.T, dtype=np.float64)


class Segments:
    """Rows grouped by an index (rows,) in ``[0, size)``: sorted by it (stable), so each
    group's sum (:meth:`sums`) accumulates its rows in row order."""

    def __init__(self, index: NDArray[np.intp], size: int) -> None:
        self.order = np.argsort(index, kind="stable")
        ordered = index[self.order]
        self.starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if (
            index.size) else np.zeros(0, dtype=np.intp)
        self.targets, self.size = ordered[self.starts], int(size)

    def sums(self, values: NDArray[np.float64], weights: NDArray[np.float64]
             ) -> NDArray[np.float64]:
        """(size, B) sums of ``values_i * weights[i, b]`` by group (``weights`` already in
        sorted order: ``weights[order]``)."""
        out = np.zeros((self.size, weights.shape[1]))
        if self.starts.size:
            out[self.targets] = np.add.reduceat(values[self.order, None] * weights,
                                                self.starts, axis=0)
        return out


def replicate_partial(start: int, stop: int, *, rows: Any, binning: Binning,
                      grid_bins: int, draws: Draws, totals: Any, weighted: bool = False
                      ) -> dict[str, NDArray]:
    """The replicates' sums of the rows ``[start, stop)`` (module docstring): ``table``
    (panels, 5, n_bins, B), ``brier`` (2, B), ``log_loss`` (B,) and the sparse canonical
    ``cells`` / ``canonical`` (cells, 1 + 2m, B)."""
    part = rows.read(start, stop, ["y", "proba"] + (["w"] if weighted else []))
    y, proba = np.asarray(part["y"]), np.ascontiguousarray(part["proba"], dtype=np.float64)
    w = np.asarray(part["w"], dtype=np.float64) if weighted else None
    m, nb, q = proba.shape[1], binning.n_bins, draws.n_resamples
    panels = panel_columns(y, proba)
    residual, diff, losses = row_terms(y, proba)
    squares = ((residual * residual).sum(axis=1), diff * diff)
    cells, inverse = grid_cells(proba, grid_bins)
    inverse = np.asarray(inverse).reshape(-1)
    cell_values = [np.ones(y.size), *proba.T, *((y == k).astype(np.float64) for k in range(m))]
    out = {"table": np.zeros((len(panels), 5, nb, q)), "brier": np.zeros((2, q)),
           "log_loss": np.zeros(q), "canonical": np.zeros((cells.shape[0], 1 + 2 * m, q))}
    for block, lo, hi in blocks(start, stop):
        at = slice(lo - start, hi - start)
        weights = draws.counts(totals, block, hi - lo)
        if w is not None:
            weights *= w[at, None]
        for k, (s, o) in enumerate(panels):
            s, o = s[at], o[at]
            groups = Segments(binning.index(k, s), nb)
            ordered = weights[groups.order]
            for j, values in enumerate((np.ones(hi - lo), s, o, s * s, o * s)):
                out["table"][k, j] += groups.sums(values, ordered)
        for j, values in enumerate(squares):
            out["brier"][j] += np.add.reduce(values[at, None] * weights, axis=0)
        out["log_loss"] += np.add.reduce(losses[at, None] * weights, axis=0)
        groups = Segments(inverse[at], cells.shape[0])
        ordered = weights[groups.order]
        for j, values in enumerate(cell_values):
            out["canonical"][:, j] += groups.sums(values[at], ordered)
    return {**out, "cells": cells}


@dataclass(frozen=True)
class ReplicateSums:
    """The summed :func:`replicate_partial` of every range: the per-resample inputs of the
    binned statistics (``total`` (B,): each resample's total weight)."""

    m: int
    binning: Binning
    table: NDArray[np.float64]
    brier_sums: NDArray[np.float64]
    log_loss_sums: NDArray[np.float64]
    canonical: NDArray[np.float64]

    @property
    def total(self) -> NDArray[np.float64]:
        return self.table[0, COUNT].sum(axis=0)

    def sums(self, panel: int) -> BinSums:
        """The panel's per-bin (bins, B) count, score and event sums (its bins only)."""
        part = self.table[panel, :, :self.binning.cells(panel)]
        return BinSums(part[0], part[1], part[2])

    def moments(self, panel: int) -> tuple[NDArray[np.float64], ...]:
        """Per bin and resample: count, ``sum s``, ``sum o``, ``sum s^2``, ``sum o s``."""
        cells = self.binning.cells(panel)
        return tuple(self.table[panel, j, :cells] for j in range(5))

    def canonical_sums(self) -> tuple[NDArray[np.float64], ...]:
        """Per non-empty grid cell: count (cells, B), ``sum p_k``, ``sum 1{y = k}``
        (cells, m, B)."""
        m = self.m
        return (self.canonical[:, 0], self.canonical[:, 1:1 + m],
                self.canonical[:, 1 + m:1 + 2 * m])


def replicate_sums(rows: Any, binning: Binning, draws: Draws,
                   grid_bins: int | None = None) -> ReplicateSums:
    """The :class:`ReplicateSums` of ``rows`` for the resamples of ``draws`` (the totals
    table made where the partials run: :func:`calaudit.scale.made`)."""
    grid_bins = binning.n_bins if grid_bins is None else int(grid_bins)

    def compute() -> dict[str, NDArray]:
        with where_rows_are(rows), scale.made(totals_table, draws.seed, draws.stream,
                                              int(rows.n), draws.n_resamples) as totals:
            return scale.map_combine(replicate_partial, scale.task_ranges(rows.n), {
                "rows": rows, "binning": binning, "grid_bins": grid_bins, "draws": draws,
                "totals": totals, "weighted": weighted_source(rows)}, merge_cells)

    total = shared_result("replicates", rows, (binning.n_bins, binning.edges is None,
                                               grid_bins, draws), compute)
    m = (total["canonical"].shape[1] - 1) // 2
    return ReplicateSums(m, binning, total["table"], total["brier"], total["log_loss"],
                         total["canonical"])
