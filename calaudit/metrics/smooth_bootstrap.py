"""Bootstrap replicates of the smooth ECE of a row source (``y``, ``proba``, optionally
the row weights ``w``): each resample's smECE at its own fixed-point bandwidth
(:class:`~calaudit.metrics.smooth_ece.Smoother` with the resamples as weight columns), the
rows counted by the block-factorised bootstrap counts of
:class:`~calaudit.metrics.row_bootstrap.Draws` (drawn by the task that reads a block).

The fixed-point searches of all resamples go step by step together; before each step one
reduction over the rows spreads, onto each grid the step asks for, only the resamples
evaluated on it (:func:`spread_count_partial`): about a dozen passes over the rows in all.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.metrics.row_bootstrap import Draws
from calaudit.metrics.row_summary import panel_columns, weighted_source, where_rows_are
from calaudit.metrics.smooth_ece import Smoother, grid_size, spread_block
from calaudit.numerics.block_draws import totals_table
from calaudit.scale import blocks, task_ranges

#: The grid of every bandwidth of at least 0.01 (:func:`grid_size`).
WIDE = grid_size(1.0)


def spread_count_partial(start: int, stop: int, *, rows: Any, draws: Draws, totals: Any,
                         grids: tuple[tuple[int, tuple[int, ...]], ...]
                         ) -> dict[str, NDArray]:
    """Per ``(size, columns)`` of ``grids``: :func:`spread_block` onto ``size`` points of
    the notion's scores and outcomes of the rows ``[start, stop)``, weighted by the chosen
    resamples' counts (times ``w``, if the source has it) ((size, 2k) for ``k`` columns)."""
    weighted = weighted_source(rows)
    part = rows.read(start, stop, ["y", "proba"] + (["w"] if weighted else []))
    scores, outcomes = panel_columns(np.asarray(part["y"]),
                                     np.ascontiguousarray(part["proba"], dtype=np.float64))[0]
    scores = np.asarray(scores, np.float64)
    w = np.asarray(part["w"], dtype=np.float64) if weighted else None
    out = {str(size): np.zeros((size, 2 * len(columns))) for size, columns in grids}
    for block, lo, hi in blocks(start, stop):
        at = slice(lo - start, hi - start)
        counts = draws.counts(totals, block, hi - lo)
        if w is not None:
            counts *= w[at, None]
        for size, columns in grids:
            out[str(size)] += spread_block(scores[at], outcomes[at],
                                           counts[:, list(columns)], size)
    return out


class CountSmoother(Smoother):
    """The :class:`Smoother` of a row source whose weight columns are the bootstrap
    counts of ``draws`` (module docstring): grids made per step for the columns asked
    for (:meth:`prepare`), kept until the next step."""

    def __init__(self, rows: Any, draws: Draws) -> None:
        super().__init__(None, None, rows=rows)
        self.draws = draws
        self._chosen: dict[int, tuple[NDArray[np.intp], NDArray[np.float64]]] = {}

    @property
    def q(self) -> int:
        return self.draws.n_resamples

    def prepare(self, sigmas: NDArray[np.float64], columns: NDArray[np.intp]) -> None:
        wanted: dict[int, set[int]] = {}
        for sigma, column in zip(sigmas.tolist(), np.asarray(columns).tolist()):
            wanted.setdefault(grid_size(sigma), set()).add(int(column))
        # the wide bandwidths' grid (every sigma >= 0.01) is kept for later steps (the
        # search's first step asks for it with every column)
        kept = {WIDE: self._chosen[WIDE]} if WIDE in self._chosen else {}
        if WIDE in kept and wanted.get(WIDE, set()) <= set(kept[WIDE][0].tolist()):
            wanted.pop(WIDE, None)
        else:
            kept = {}
        self._chosen = kept
        grids = tuple((size, tuple(sorted(cols))) for size, cols in sorted(wanted.items()))
        if not grids:
            return
        rows, draws = self.rows, self.draws
        with where_rows_are(rows), scale.made(totals_table, draws.seed, draws.stream,
                                              int(rows.n), draws.n_resamples) as totals:
            spread = scale.map_sum(spread_count_partial, task_ranges(rows.n), {
                "rows": rows, "draws": draws, "totals": totals, "grids": grids})
        self._chosen.update({size: (np.asarray(cols), spread[str(size)].T)
                             for size, cols in grids})

    def chosen_grid(self, size: int, chosen: NDArray[np.intp]) -> NDArray[np.float64]:
        columns, grid = self._chosen[size]
        at = np.searchsorted(columns, chosen)
        return np.vstack([grid[at], grid[columns.size + at]])


def smooth_ece_of_counts(rows: Any, draws: Draws) -> NDArray[np.float64]:
    """smECE of each bootstrap resample of ``draws`` of the rows (the replicates)."""
    return CountSmoother(rows, draws).at_fixed_points()[1]
