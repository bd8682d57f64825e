"""The binned statistics' per-bin sums as a reduction over a row source (issue 14).

:class:`ScoreRows` turns a row source of labels and probabilities (class indices in
``label``; the probability columns in class order, or one column holding the positive
class's probability of a binary model) into the columns ``score`` and ``outcome`` of a
calibration notion (:func:`calaudit.metrics.ece.scores_and_outcomes`). :func:`bin_sums`
then reduces it with ``executor.map_sum`` over ``task_ranges(n)``:

* quantile edges: :func:`calaudit.numerics.order_statistics.quantiles` (exact, the bytes
  of ``np.quantile``) on the ``score`` column, outer edges 0 and 1, repeats merged
  (:func:`calaudit.numerics.binning.bin_edges`);
* per bin ``b``: ``count``, ``score`` and ``event`` sums (:func:`bin_sums_partial`, one
  ``bincount`` per range, added in range order).

These are the partials of the in-memory path (:class:`calaudit.metrics.binned.
BinnedOutcomes` with :func:`calaudit.numerics.tabulate.range_bincount`), on the same rows
in the same ranges, so ``ece_from_sums(bin_sums(...))`` is the same float as
:func:`calaudit.metrics.ece.expected_calibration_error` on the loaded arrays, whether the
tasks run here or on Dask workers that read their own rows
(:class:`calaudit.data.row_source.ParquetRows`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.metrics.binned import BinSums
from calaudit.metrics.ece import Notion, scores_and_outcomes
from calaudit.numerics.binning import (
    Strategy,
    assign_bins,
    inner_levels,
    quantile_edges,
    uniform_bin_index,
)
from calaudit.numerics.order_statistics import quantiles
from calaudit.numerics.row_blocks import SerialExecutor, task_ranges
from calaudit.numerics.row_sources import resident


class ScoreRows:
    """Row source of ``score`` and ``outcome`` (0/1) under ``notion``, computed from
    ``base``'s ``label`` and ``probs`` columns range by range."""

    def __init__(self, base: Any, label: str, probs: Sequence[str], notion: Notion) -> None:
        self.base, self.label, self.probs, self.notion = base, label, tuple(probs), notion
        self.n = int(base.n)

    def read(self, start: int, stop: int, names: Iterable[str]) -> dict[str, NDArray]:
        part = self.base.read(start, stop, (self.label, *self.probs))
        proba = np.column_stack([np.asarray(part[c], dtype=np.float64) for c in self.probs])
        if proba.shape[1] == 1:  # a binary model's positive-class probability
            proba = np.column_stack([1.0 - proba[:, 0], proba[:, 0]])
        score, outcome = scores_and_outcomes(np.asarray(part[self.label], dtype=np.int64),
                                             proba, self.notion)
        columns = {"score": score, "outcome": outcome}
        return {name: columns[name] for name in names}


def bin_sums_partial(start: int, stop: int, *, rows: Any, n_bins: int,
                     edges: NDArray[np.float64] | None) -> dict[str, NDArray]:
    """Rows ``[start, stop)``: per-bin ``count``, ``score`` and ``event`` sums (bins
    ``ceil(n_bins s)`` when ``edges`` is None, else right-closed on ``edges``)."""
    part = rows.read(start, stop, ("score", "outcome"))
    score, outcome = part["score"], part["outcome"]
    if edges is None:
        index, bins = uniform_bin_index(score, n_bins), n_bins
    else:
        index, bins = assign_bins(score, edges), edges.size - 1
    return {"count": np.bincount(index, minlength=bins),
            "score": np.bincount(index, weights=score, minlength=bins),
            "event": np.bincount(index, weights=outcome, minlength=bins)}


def bin_sums(source: ScoreRows, *, n_bins: int = 15, strategy: Strategy = "uniform",
             executor: Any = None) -> tuple[BinSums, NDArray[np.float64]]:
    """Per-bin sums and edges of ``source`` (see the module docstring)."""
    executor = executor or SerialExecutor()
    with resident(executor, source) as rows:
        if strategy == "uniform":
            edges, used = np.linspace(0.0, 1.0, n_bins + 1), None
        elif strategy == "quantile":
            inner = quantiles(source, "score", inner_levels(n_bins),  # places the source
                              executor=executor)
            edges = used = quantile_edges(inner)
        else:
            raise ValueError(f"unknown binning strategy {strategy!r}")
        out = executor.map_sum(bin_sums_partial, task_ranges(source.n),
                               {"rows": rows, "n_bins": n_bins, "edges": used})
    return BinSums(out["count"], out["score"], out["event"]), edges

