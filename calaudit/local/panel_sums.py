"""The reliability panels of large groups as one reduction over the rows.

For each group ``g`` asked for and each equal-width bin ``b`` of its predictions
(:func:`calaudit.numerics.binning.uniform_bin_index`): the sums ``n_gb``, ``sum p`` and
``sum y`` (a ``bincount`` per range, added in range order) and the Poisson-binomial law
of the bin's events under ``y*_i ~ Bernoulli(p_i)`` (Bröcker & Smith 2007): each range
gives the exact law of its rows in the bin cut to its Bernstein window
(:func:`calaudit.numerics.poisson_binomial.piece`) and the client multiplies the pieces in
range order (:class:`~calaudit.numerics.poisson_binomial.RunningLaw`), as the global
diagram's bands (:mod:`calaudit.metrics.row_laws`). The client holds ``groups x bins``
sums and laws, never the rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.metrics.binned import BinSums
from calaudit.metrics.row_laws import Law, add_pieces, law_arrays, multiply_pieces
from calaudit.numerics.binning import uniform_bin_index
from calaudit.numerics.poisson_binomial import RunningLaw

#: Rows per task of the panels' reduction: a multiple of ``TASK_ROWS``, so each task's
#: bins hold enough rows that their exact laws cost little more than the rows' FFTs.
PANEL_ROWS = 4 * scale.TASK_ROWS


def panel_partial(start: int, stop: int, *, rows: Any, groups: tuple[tuple[int, int], ...],
                  n_bins: int, laws: bool) -> dict[str, NDArray]:
    """Rows ``[start, stop)``: ``sums`` (groups, 3, bins) of ``1``, ``p``, ``y`` per group
    and bin; with ``laws``, the law pieces per (group, bin) (``offset``, ``mean``,
    ``variance``, ``rows``, ``size``; the pieces concatenated in ``law``)."""
    names = sorted({f"g{j}" for j, _ in groups})
    part = rows.read(start, stop, ["y", "p", *names])
    y, p = np.asarray(part["y"], np.float64), np.asarray(part["p"], np.float64)
    sums = np.zeros((len(groups), 3, n_bins))
    out = law_arrays((len(groups), n_bins))
    pieces: list[NDArray[np.float64]] = []
    for g, (j, code) in enumerate(groups):
        mask = part[f"g{j}"] == code
        scores, observed = p[mask], y[mask]
        index = uniform_bin_index(scores, n_bins)
        for k, weights in enumerate((None, scores, observed)):
            sums[g, k] = np.bincount(index, weights=weights, minlength=n_bins)
        if laws:
            add_pieces(out, g, scores, index, pieces)
    out["law"] = np.concatenate(pieces) if pieces else np.zeros(0)
    out["sums"] = sums
    return out


def _combine(parts: Iterator[dict[str, NDArray]]
             ) -> tuple[NDArray | None, list[list[RunningLaw | None]]]:
    """The sums added and every bin's running law multiplied
    (:func:`~calaudit.metrics.row_laws.multiply_pieces`), in range order."""
    total = None

    def summed() -> Iterator[dict[str, NDArray]]:
        nonlocal total
        for part in parts:
            total = part["sums"].copy() if total is None else total + part["sums"]
            yield part

    running = multiply_pieces(summed())
    return total, running


def reduced_panels(values: Any, names: Sequence[str], n_bins: int, laws: bool
                   ) -> dict[str, tuple[BinSums, list[Law | None]]]:
    """Per group of ``names`` not gathered by the group table
    (:class:`calaudit.local.group_sources.GroupValues`): its bins' sums and laws (empty
    lists without ``laws``), from one reduction over the table's rows."""
    large = [name for name in names if values.values(name) is None]
    if not large:
        return {}
    groups = tuple(values.keys[name] for name in large)
    with scale.resident(values.rows) as rows:
        total, running = scale.map_combine(
            panel_partial, scale.task_ranges(values.rows.n, PANEL_ROWS),
            {"rows": rows, "groups": groups, "n_bins": int(n_bins), "laws": bool(laws)},
            _combine)
    out = {}
    for g, name in enumerate(large):
        sums = BinSums(total[g, 0], total[g, 1], total[g, 2])
        cells = [None if law is None else law.result() for law in running[g]] if laws else []
        out[name] = (sums, cells)
    return out
