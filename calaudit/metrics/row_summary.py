"""Binned sums of a row source (``rows.read(start, stop, ["y", "proba"])``): one
reduction (:func:`summary_partial` over :func:`calaudit.scale.task_ranges`, added in range
order by :func:`binned_summary`) gives the sums of every binned statistic.

*Panels* (:func:`panel_columns`): panel 0 the notion's (binary: ``p_1`` against
``1{y = 1}``; top-label: ``max_k p_k`` against ``1{argmax p = y}``), then the one-vs-rest
views (``p_k`` against ``1{y = k}``; two classes: class 0 only). Per panel and bin
(:class:`Binning`): count, ``sum s``, ``sum o``, ``sum s^2``, ``sum o s``; besides, the
sums of the Brier scores and the log loss (and its clipped rows), a 50-bin score histogram
and the canonical grid cells (a sparse table). A source with a column ``w`` (row weights,
docs/weights.md) gives the weighted sums: every row counted ``w_i`` times (the histogram
still counts rows). These range-by-range sums differ from whole-array sums in the last
bits (about 1e-15 relative).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.metrics.binned import BinSums
from calaudit.metrics.ece import scores_and_outcomes
from calaudit.numerics.binning import (
    assign_bins,
    bin_edges,
    grid_cells,
    inner_levels,
    quantile_edges,
    uniform_bin_index,
)
from calaudit.numerics.order_statistics import column_quantiles

#: Equal-width bins of the score histogram on [0, 1] (the diagrams').
HISTOGRAM_BINS = 50
#: Columns of a panel's per-bin table: count, ``sum s``, ``sum o``, ``sum s^2``, ``sum o s``.
COUNT, SCORE, EVENT, SQUARES, PRODUCTS = range(5)
#: ``log(clip(p_y, EPS, 1))``'s clip (:data:`calaudit.metrics.log_loss.EPS`).
EPS = float(np.finfo(np.float64).eps)


def panel_columns(y: NDArray[np.int64], proba: NDArray[np.float64]
                  ) -> list[tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """``(scores, outcomes)`` of every panel of the rows (module docstring)."""
    m = proba.shape[1]
    notion = "binary" if m == 2 else "top-label"
    panels = [scores_and_outcomes(y, proba, notion)]
    for k in range(1 if m == 2 else m):
        panels.append((proba[:, k], (y == k).astype(np.float64)))
    return panels


def class_panels(m: int) -> tuple[int, ...]:
    """The panel of each class's one-vs-rest view, in class order."""
    return (1, 0) if m == 2 else tuple(range(1, m + 1))


@dataclass(frozen=True)
class Binning:
    """``n_bins`` equal-width bins (``edges`` None: :func:`uniform_bin_index`) or, per
    panel, the quantile edges of its scores (:func:`assign_bins`)."""

    n_bins: int
    edges: tuple[NDArray[np.float64], ...] | None = None

    @classmethod
    def build(cls, rows: Any, n_bins: int, strategy: str) -> Binning:
        """The binning of ``strategy``; quantile edges from the rows in memory (an
        :class:`~calaudit.scale.ArrayRows`), or of a source whose tasks read their own
        rows from exact order-statistics reductions (:func:`quantile_bin_edges`)."""
        if strategy == "uniform":
            return cls(int(n_bins))
        if getattr(rows, "reads_own_rows", False):
            return cls(int(n_bins), shared_result("edges", rows, (int(n_bins),),
                                                  lambda: quantile_bin_edges(rows, n_bins)))
        columns = rows.read(0, rows.n, ["y", "proba"])
        return cls(int(n_bins), tuple(bin_edges(scores, n_bins, "quantile")
                                      for scores, _ in panel_columns(columns["y"],
                                                                     columns["proba"])))

    @property
    def strategy(self) -> str:
        return "uniform" if self.edges is None else "quantile"

    def index(self, panel: int, scores: NDArray[np.float64]) -> NDArray[np.intp]:
        if self.edges is None:
            return uniform_bin_index(scores, self.n_bins)
        return assign_bins(scores, self.edges[panel])

    def panel_edges(self, panel: int) -> NDArray[np.float64]:
        if self.edges is None:
            return np.linspace(0.0, 1.0, self.n_bins + 1)
        return self.edges[panel]

    def cells(self, panel: int) -> int:
        return self.panel_edges(panel).size - 1


@dataclass(frozen=True)
class PanelScores:
    """The panels' scores and outcomes of the row source ``rows`` (``y``, ``proba``;
    ``class_names``) as columns ``panel:k`` and ``outcome:k`` (:func:`panel_columns`),
    computed in the task that reads them."""

    rows: Any

    reads_own_rows = True

    @property
    def n(self) -> int:
        return int(self.rows.n)

    def read(self, start: int, stop: int, names: Any) -> dict[str, NDArray]:
        part = self.rows.read(start, stop, ["y", "proba"])
        panels = panel_columns(np.asarray(part["y"]),
                               np.ascontiguousarray(part["proba"], dtype=np.float64))
        return {name: panels[int(name.split(":")[1])][name.startswith("outcome:")]
                for name in names}


def quantile_bin_edges(rows: Any, n_bins: int) -> tuple[NDArray[np.float64], ...]:
    """Every panel's quantile bin edges (``bin_edges(scores, n_bins, "quantile")``'s
    bytes) of a source whose tasks read their own rows, from one set of exact
    order-statistics reductions (:func:`calaudit.numerics.order_statistics.
    column_quantiles`) over :class:`PanelScores` (``rows.scores``: the prediction columns,
    one for a binary model's positive class or one per class)."""
    m = max(len(rows.scores), 2)
    names = [f"panel:{k}" for k in range(1 + (1 if m == 2 else m))]
    found = column_quantiles(PanelScores(rows), dict.fromkeys(names, inner_levels(n_bins)))
    return tuple(quantile_edges(found[name]) for name in names)


def row_source(data: Any, strategy: str = "uniform") -> Any:
    """The rows of ``data`` as a row source: its own (a dataset whose tasks read their own
    rows), else its arrays (``strategy``: the binning, whose quantile edges a source
    reading its own rows finds by reductions); with row weights the arrays and the column
    ``w``."""
    rows = getattr(data, "rows", None)
    if rows is not None:
        return rows
    weights = getattr(data, "sample_weight", None)
    return scale.ArrayRows({"y": data.y_true, "proba": data.y_proba,
                            **({} if weights is None else {"w": weights})})


@contextlib.contextmanager
def where_rows_are(rows: Any) -> Iterator[None]:
    """Reductions on the executor in force for a source whose tasks read their own rows,
    on threads here for rows already in this process."""
    if getattr(rows, "reads_own_rows", False):
        yield
        return
    with scale.using(scale.ThreadExecutor()):
        yield


_SHARED: dict[tuple, Any] = {}


def shared_result(kind: str, rows: Any, key: tuple, compute: Any) -> Any:
    """``compute()`` once per (source whose tasks read their own rows, ``key``), kept while
    the source lives, so stages share one pass over its files."""
    if not getattr(rows, "reads_own_rows", False):
        return compute()
    full = (kind, id(rows), key)
    if full not in _SHARED:
        _SHARED[full] = compute()
        weakref.finalize(rows, _SHARED.pop, full, None)
    return _SHARED[full]


def weighted_source(rows: Any) -> bool:
    """Whether a row source carries row weights (an in-memory column ``w``)."""
    return isinstance(rows, scale.ArrayRows) and "w" in rows.columns


def row_terms(y: NDArray[np.intp], proba: NDArray[np.float64]
              ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Each row's terms of the Brier scores and the log loss: the residuals ``p - e_y``
    (n, m), ``p_1 - 1{y = 1}`` (zeros unless binary) and ``-log(clip(p_y))``."""
    rows_at = np.arange(y.size)
    residual = np.array(proba)
    residual[rows_at, y] -= 1.0
    diff = proba[:, 1] - (y == 1) if proba.shape[1] == 2 else np.zeros(y.size)
    return residual, diff, -np.log(np.clip(proba[rows_at, y], EPS, 1.0))


def summary_partial(start: int, stop: int, *, rows: Any, binning: Binning,
                    grid_bins: int, weighted: bool = False) -> dict[str, NDArray]:
    """The sums of the rows ``[start, stop)``: ``table`` (panels, 5, n_bins), ``brier``,
    ``log_loss`` (and rows clipped), ``histogram`` and the sparse canonical ``cells`` /
    ``canonical`` (count, ``sum p_k``, ``sum 1{y = k}``); ``weighted``: each row counted
    ``w`` times (unit weights give the unweighted sums' bits: ``1 x`` is ``x``)."""
    part = rows.read(start, stop, ["y", "proba"] + (["w"] if weighted else []))
    y, proba = np.asarray(part["y"]), np.ascontiguousarray(part["proba"], dtype=np.float64)
    w = np.asarray(part["w"], dtype=np.float64) if weighted else None

    def times_w(values: Any) -> Any:
        return values if w is None else w * values

    panels = panel_columns(y, proba)
    nb = binning.n_bins
    table = np.zeros((len(panels), 5, nb))
    for k, (s, o) in enumerate(panels):
        index = binning.index(k, s)
        table[k, COUNT] = np.bincount(index, w, nb)
        for column, values in ((SCORE, s), (EVENT, o), (SQUARES, s * s), (PRODUCTS, o * s)):
            table[k, column] = np.bincount(index, times_w(values), nb)
    residual, diff, losses = row_terms(y, proba)
    if weighted:
        brier = [(residual * residual).sum(axis=1) @ w, (diff * diff) @ w]
        loss = losses @ w
    else:
        brier, loss = [np.einsum("ij,ij->", residual, residual), np.dot(diff, diff)], losses.sum()
    histogram = np.bincount(uniform_bin_index(panels[0][0], HISTOGRAM_BINS),
                            minlength=HISTOGRAM_BINS)
    cells, inverse = grid_cells(proba, grid_bins)
    canonical = np.column_stack(
        [np.bincount(inverse, w, cells.shape[0])]
        + [np.bincount(inverse, times_w(proba[:, k]), cells.shape[0])
           for k in range(proba.shape[1])]
        + [np.bincount(inverse, times_w((y == k).astype(np.float64)), cells.shape[0])
           for k in range(proba.shape[1])]).astype(np.float64)
    return {"table": table, "brier": np.array(brier),
            "log_loss": np.array([loss, np.count_nonzero(
                proba[np.arange(y.size), y] < EPS)]),
            "histogram": histogram, "cells": cells, "canonical": canonical}


class _Cells:
    """The canonical cells seen so far and their sums, merged range by range: a cell's
    sums are added in range order, as a dense table's would be."""

    def __init__(self) -> None:
        self.cells: NDArray[np.int64] | None = None
        self.sums: NDArray[np.float64] | None = None

    def take(self, part: dict[str, NDArray]) -> dict[str, NDArray]:
        """``part`` without its cells (merged here)."""
        part = dict(part)
        cells, sums = part.pop("cells"), part.pop("canonical")
        if self.cells is None:
            self.cells, self.sums = cells, np.array(sums, dtype=np.float64)
            return part
        merged, inverse = np.unique(np.concatenate([self.cells, cells]), axis=0,
                                    return_inverse=True)
        inverse = inverse.reshape(-1)
        total = np.zeros((merged.shape[0], *sums.shape[1:]))
        total[inverse[:self.cells.shape[0]]] = self.sums
        total[inverse[self.cells.shape[0]:]] += sums
        self.cells, self.sums = merged, total
        return part


def merge_cells(parts: Iterator[dict[str, NDArray]]) -> dict[str, NDArray]:
    """The fold of partials with sparse ``cells`` / ``canonical`` sums (cells first), the
    cells merged (:class:`_Cells`)."""
    cells = _Cells()
    total = scale.fold(cells.take(part) for part in parts)
    return {**total, "canonical": cells.sums}


@dataclass(frozen=True)
class BinnedSummary:
    """The summed partials of :func:`summary_partial` and the statistics' inputs (``n``
    the rows' total weight: their number when unweighted)."""

    n: float
    m: int
    binning: Binning
    table: NDArray[np.float64]
    brier_sums: NDArray[np.float64]
    log_loss_sums: NDArray[np.float64]
    histogram: NDArray[np.float64]
    canonical: NDArray[np.float64]

    def sums(self, panel: int) -> BinSums:
        """The panel's per-bin count, score and event sums (its bins only)."""
        cells = self.binning.cells(panel)
        part = self.table[panel, :, :cells]
        return BinSums(part[COUNT].copy(), part[SCORE].copy(), part[EVENT].copy())

    def moments(self, panel: int) -> tuple[NDArray[np.float64], ...]:
        """Per bin: count, ``sum s``, ``sum o``, ``sum s^2``, ``sum o s``."""
        cells = self.binning.cells(panel)
        return tuple(self.table[panel, j, :cells].copy() for j in range(5))

    @property
    def brier(self) -> float:
        """``(1/n) sum_i |p_i - e_{y_i}|^2``."""
        return float(self.brier_sums[0] / self.n)

    @property
    def brier_binary(self) -> float:
        """``(1/n) sum_i (p_i1 - y_i)^2`` (two classes)."""
        return float(self.brier_sums[1] / self.n)

    @property
    def log_loss(self) -> float:
        return float(self.log_loss_sums[0] / self.n)

    @property
    def clipped_rows(self) -> int:
        return int(self.log_loss_sums[1])

    def canonical_sums(self) -> tuple[NDArray[np.float64], ...]:
        """Per non-empty grid cell: count, ``sum p_k`` (cells, m), ``sum 1{y = k}``."""
        m = self.m
        return (self.canonical[:, 0], self.canonical[:, 1:1 + m],
                self.canonical[:, 1 + m:1 + 2 * m])


def binned_summary(rows: Any, binning: Binning, grid_bins: int | None = None
                   ) -> BinnedSummary:
    """The :class:`BinnedSummary` of ``rows`` (canonical cells of ``grid_bins`` bins per
    class, default ``binning.n_bins``)."""
    grid_bins = binning.n_bins if grid_bins is None else int(grid_bins)

    def compute() -> dict[str, NDArray]:
        with where_rows_are(rows):
            return scale.map_combine(summary_partial, scale.task_ranges(rows.n), {
                "rows": rows, "binning": binning, "grid_bins": grid_bins,
                "weighted": weighted_source(rows)}, merge_cells)

    total = shared_result("summary", rows, (binning.n_bins, binning.edges is None,
                                            grid_bins), compute)
    m = (total["canonical"].shape[1] - 1) // 2
    n = float(total["table"][0, COUNT].sum()) if weighted_source(rows) else int(rows.n)
    return BinnedSummary(n, m, binning, total["table"], total["brier"],
                         total["log_loss"], total["histogram"], total["canonical"])
