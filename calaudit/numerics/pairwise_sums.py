"""Sums over a row source with numpy's bits: numpy's pairwise summation of a contiguous
array cut at the task ranges. A node of ``m > 128`` values is the sum of its first
``m2 = floor(m / 2)`` rounded down to a multiple of 8 and of the rest; a node of at most
128 values is numpy's own sum of them. The nodes inside one task range are summed by that
task (``np.add.reduce`` of its slice: the same tree), the at most one leaf across each
range boundary from the values the two tasks return, the nodes above here: O(log n)
numbers per task. So ``x.sum()``, ``x.mean()`` and ``x.std()`` of a column never held in
one process.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.scale import TASK_ROWS, task_ranges

#: Rows per task of the summary's reductions: a few of the kept blocks per task (each
#: task costs the client a few milliseconds whatever its rows).
SUMMARY_ROWS = 8 * TASK_ROWS
#: Values summed directly by numpy's pairwise summation (``PW_BLOCKSIZE``).
LEAF = 128
def _half(m: int) -> int:
    half = m // 2
    return half - half % 8


def sum_plan(n: int, ranges: Sequence[tuple[int, int]]
             ) -> tuple[dict[int, list[tuple[int, int]]], list[tuple[int, int]]]:
    """The pairwise tree of ``n`` values cut at the task ranges: per range start the
    largest nodes ``(first, size)`` inside it, and the leaves that cross a boundary."""
    stops = np.array([stop for _, stop in ranges])
    inside: dict[int, list[tuple[int, int]]] = {start: [] for start, _ in ranges}
    crossing: list[tuple[int, int]] = []

    def walk(first: int, size: int) -> None:
        k = int(np.searchsorted(stops, first, side="right"))
        if first + size <= stops[k]:
            inside[ranges[k][0]].append((first, size))
        elif size <= LEAF:
            crossing.append((first, size))
        else:
            walk(first, _half(size))
            walk(first + _half(size), size - _half(size))
    walk(0, n)
    return inside, crossing


def _terms(values: NDArray[np.float64], centre: float | None) -> NDArray[np.float64]:
    """The summed columns: the values and their absolute values, or the squared
    deviations from ``centre`` (numpy's ``_var``: ``x = a - mean; x * x``)."""
    if centre is None:
        return np.stack([values, np.abs(values)])
    deviation = values - np.array([centre])
    return np.multiply(deviation, deviation, out=deviation)[None, :]


def sums_partial(start: int, stop: int, *, rows: Any, column: str,
                 inside: dict[int, list[tuple[int, int]]], crossing: list[tuple[int, int]],
                 centre: float | None) -> dict[str, Any]:
    """The range's nodes summed (``np.add.reduce`` of each node's slice) and its parts of
    the crossing leaves."""
    terms = _terms(rows.read(start, stop, [column])[column], centre)
    nodes = {node: [np.add.reduce(t[node[0] - start:node[0] + node[1] - start])
                    for t in terms] for node in inside[start]}
    parts = {leaf: terms[:, max(leaf[0], start) - start:min(leaf[0] + leaf[1], stop) - start]
             for leaf in crossing if leaf[0] < stop and start < leaf[0] + leaf[1]}
    return {"nodes": nodes, "parts": parts}


def pairwise_sums(rows: Any, column: str, n: int, centre: float | None = None,
                  task_rows: int = SUMMARY_ROWS) -> list[np.float64]:
    """numpy's sums (module docstring) of the values and their absolute values (or of
    the squared deviations from ``centre``), from one reduction over ranges of
    ``task_rows``."""
    ranges = task_ranges(n, task_rows)
    inside, crossing = sum_plan(n, ranges)
    found = scale.map_combine(sums_partial, ranges, {
        "rows": rows, "column": column, "inside": inside, "crossing": crossing,
        "centre": centre}, list)
    return tree_sums(found, n, 1 if centre is not None else 2)


def tree_sums(found: Sequence[dict[str, Any]], n: int, width: int) -> list[np.float64]:
    """The ``width`` sums of ``n`` values from :func:`sums_partial`'s results (in range
    order): the nodes above the ranges added as numpy's tree adds them."""
    nodes: dict[tuple[int, int], list[np.float64]] = {}
    parts: dict[tuple[int, int], list[NDArray[np.float64]]] = {}
    for part in found:  # in range order
        nodes.update(part["nodes"])
        for leaf, piece in part["parts"].items():
            parts.setdefault(leaf, []).append(piece)

    def total(first: int, size: int, j: int) -> np.float64:
        if (first, size) in nodes:
            return nodes[(first, size)][j]
        if (first, size) in parts:
            return np.add.reduce(np.concatenate([p[j] for p in parts[(first, size)]]))
        half = _half(size)
        return total(first, half, j) + total(first + half, size - half, j)
    return [total(0, n, j) for j in range(width)]
