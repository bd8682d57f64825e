"""Poisson-binomial laws of the events per bin, from a row source read range by range:
each task gives the exact law of its rows in every bin of the panels asked for, cut to its
Bernstein window (:func:`~calaudit.numerics.poisson_binomial.piece`), and the client
multiplies the pieces in range order (:class:`~calaudit.numerics.poisson_binomial.
RunningLaw`), cutting the running law to its window (at most ``2^-79`` of mass left out
per product).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.metrics.row_summary import (
    Binning,
    panel_columns,
    shared_result,
    where_rows_are,
)
from calaudit.numerics.poisson_binomial import RunningLaw, piece, sample

#: A cell's law: ``(offset, P(S = offset + k))``.
Law = tuple[int, NDArray[np.float64]]


def laws_partial(start: int, stop: int, *, rows: Any, binning: Binning,
                 panels: tuple[int, ...]) -> dict[str, NDArray]:
    """The law pieces of the rows ``[start, stop)`` per (panel, bin): ``offset``,
    ``mean``, ``variance``, ``rows`` and ``size`` (length of the piece; 0: no row) of
    shape (panels, n_bins), the pieces concatenated in ``law`` (panel, then bin order)."""
    part = rows.read(start, stop, ["y", "proba"])
    columns = panel_columns(np.asarray(part["y"]),
                            np.ascontiguousarray(part["proba"], dtype=np.float64))
    out = law_arrays((len(panels), binning.n_bins))
    laws: list[NDArray[np.float64]] = []
    for j, panel in enumerate(panels):
        scores = columns[panel][0]
        add_pieces(out, j, scores, binning.index(panel, scores), laws)
    out["law"] = np.concatenate(laws) if laws else np.zeros(0)
    return out


def law_arrays(shape: tuple[int, int]) -> dict[str, NDArray]:
    """Zeroed per-cell fields of the law pieces (``offset``, ``mean``, ``variance``,
    ``rows``, ``size``), of shape (panels, bins)."""
    return {name: np.zeros(shape) for name in ("offset", "mean", "variance", "rows", "size")}


def add_pieces(out: dict[str, NDArray], j: int, scores: NDArray[np.float64],
               index: NDArray[np.intp], laws: list[NDArray[np.float64]]) -> None:
    """Row ``j`` of :func:`law_arrays` ``out`` from the rows' ``scores`` in bins ``index``:
    each non-empty bin's piece (bin order) written to its cell and appended to ``laws``."""
    order = np.argsort(index, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(index,
                                                        minlength=out["size"].shape[1]))])
    ordered = scores[order]
    for cell in np.flatnonzero(np.diff(bounds)):
        offset, law, mean, variance, size = piece(ordered[bounds[cell]:bounds[cell + 1]])
        for name, value in (("offset", offset), ("mean", mean), ("variance", variance),
                            ("rows", size), ("size", law.size)):
            out[name][j, cell] = value
        laws.append(law)


def multiply_pieces(parts: Iterator[dict[str, NDArray]]) -> list[list[RunningLaw | None]]:
    """Every cell's running law, the pieces multiplied in range order."""
    running: list[list[RunningLaw | None]] | None = None
    for part in parts:
        sizes = part["size"].astype(np.int64)
        if running is None:
            running = [[None] * sizes.shape[1] for _ in range(sizes.shape[0])]
        at = 0
        for j, cell in zip(*np.nonzero(sizes)):
            law = part["law"][at:at + sizes[j, cell]]
            at += sizes[j, cell]
            if running[j][cell] is None:
                running[j][cell] = RunningLaw()
            running[j][cell].times(int(part["offset"][j, cell]), law,
                                   float(part["mean"][j, cell]),
                                   float(part["variance"][j, cell]),
                                   int(part["rows"][j, cell]))
    return running or []


def cell_laws(rows: Any, binning: Binning, panels: Sequence[int]) -> list[list[Law | None]]:
    """Per panel and bin the law of its events under redrawn outcomes (``None``: empty)."""
    def compute() -> list[list[Law | None]]:
        with where_rows_are(rows):
            running = scale.map_combine(laws_partial, scale.task_ranges(rows.n), {
                "rows": rows, "binning": binning, "panels": tuple(panels)}, multiply_pieces)
        return [[None if law is None else law.result() for law in cells]
                for cells in running]

    return shared_result("laws", rows, (binning.n_bins, binning.edges is None,
                                        tuple(panels)), compute)


def draw_events(laws: Sequence[Law | None], u: NDArray[np.float64]) -> NDArray[np.int64]:
    """(cells, B) inverse-CDF draws of each cell's events (``None``: 0) from ``u``."""
    out = np.zeros(u.shape, dtype=np.int64)
    for c, law in enumerate(laws):
        if law is not None:
            out[c] = sample(law[1], u[c], law[0])
    return out
