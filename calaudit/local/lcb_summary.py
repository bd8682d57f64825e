"""``local.lcb.summary`` of values kept where they were computed (a row source, e.g. the
LCB rows of :func:`calaudit.local.lcb_rows.kept_lcb`), the bits of
:func:`calaudit.local.lcb.summarize` on the whole array without fetching it.

- Sums (the mean, the mean absolute value, the sd's sum of squared deviations) follow
  numpy's pairwise summation of a contiguous array: a node of ``m > 128`` values is the
  sum of its first ``m2 = floor(m / 2)`` rounded down to a multiple of 8 and of the rest;
  a node of at most 128 values is numpy's own sum of them. The nodes inside one task range
  are summed by that task (``np.add.reduce`` of its slice: the same tree), the at most one
  leaf across each range boundary from the values the two tasks return, the nodes above
  here: O(log n) numbers per task.
- Quantiles (numpy's ``linear`` method: ``(n - 1) q``, its neighbouring order statistics
  and numpy's interpolation) from exact order statistics: a radix selection on the values'
  64-bit keys (ordered as the floats), 8 bits per pass (256 counts per wanted rank).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib import _function_base_impl as _quantiles
from numpy.typing import NDArray

from calaudit import scale
from calaudit.scale import TASK_ROWS, task_ranges

#: Values summed directly by numpy's pairwise summation (``PW_BLOCKSIZE``).
LEAF = 128
#: Bits of the key chosen per pass of the selection.
DIGIT = 8
#: Rows per task of the summary's reductions: a few of the kept blocks per task (each
#: task costs the client a few milliseconds whatever its rows).
SUMMARY_ROWS = 8 * TASK_ROWS


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
    return [total(0, n, j) for j in range(1 if centre is not None else 2)]


def _keys(values: NDArray[np.float64]) -> NDArray[np.uint64]:
    """64-bit keys ordered as the floats (sign bit flipped, negatives complemented)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    return np.where(bits >> np.uint64(63), ~bits, bits | np.uint64(1 << 63))


def _value(key: int) -> float:
    bits = key & ~(1 << 63) if key >> 63 else ~key & (2**64 - 1)
    return float(np.array([bits], dtype=np.uint64).view(np.float64)[0])


def digits_partial(start: int, stop: int, *, rows: Any, column: str,
                   prefixes: NDArray[np.uint64], shift: int) -> dict[str, NDArray[np.int64]]:
    """Per wanted rank: the counts of the next digit (bits ``shift`` to ``shift + 8``)
    among the range's keys whose higher bits are the rank's prefix."""
    keys = _keys(rows.read(start, stop, [column])[column])
    high = keys >> np.uint64(shift + DIGIT) if shift + DIGIT < 64 else np.zeros_like(keys)
    digit = ((keys >> np.uint64(shift)) & np.uint64(2**DIGIT - 1)).astype(np.intp)
    counts = np.zeros((prefixes.size, 2**DIGIT), np.int64)
    for t, prefix in enumerate(prefixes):
        wanted = prefix >> np.uint64(shift + DIGIT) if shift + DIGIT < 64 else np.uint64(0)
        counts[t] = np.bincount(digit[high == wanted], minlength=2**DIGIT)
    return {"counts": counts}


def order_statistics(rows: Any, column: str, n: int, ranks: Sequence[int],
                     task_rows: int = SUMMARY_ROWS) -> NDArray[np.float64]:
    """The values of the given 0-based ``ranks`` in sorted order, exactly (radix
    selection, :data:`DIGIT` bits per reduction of integer counts)."""
    ranks = np.asarray(ranks, dtype=np.int64)
    prefixes = np.zeros(ranks.size, np.uint64)
    left = ranks.copy()
    for shift in range(64 - DIGIT, -1, -DIGIT):
        counts = scale.map_sum(digits_partial, task_ranges(n, task_rows), {
            "rows": rows, "column": column, "prefixes": prefixes, "shift": shift})["counts"]
        for t in range(ranks.size):
            below = np.cumsum(counts[t])
            digit = int(np.searchsorted(below, left[t], side="right"))
            left[t] -= below[digit - 1] if digit else 0
            prefixes[t] |= np.uint64(digit << shift)
    return np.array([_value(int(key)) for key in prefixes])


def kept_summary(rows: Any, n: int, quantiles: Sequence[float], column: str = "lcb",
                 task_rows: int = SUMMARY_ROWS) -> dict[str, Any]:
    """:func:`calaudit.local.lcb.summarize` of the column ``column`` of ``rows``
    (``n`` values), the same floats, computed where the rows are (module docstring)."""
    total, absolute = pairwise_sums(rows, column, n, task_rows=task_rows)
    mean = total / n
    squares = pairwise_sums(rows, column, n, centre=float(mean), task_rows=task_rows)[0]
    q = np.asanyarray(quantiles)
    method = _quantiles._QuantileMethods["linear"]
    virtual = np.asanyarray(method["get_virtual_index"](n, q))
    previous, following = _quantiles._get_indexes(np.empty(0), virtual, n)
    gamma = _quantiles._get_gamma(virtual, previous, method)
    previous, following = previous % n, following % n  # -1: the last value
    wanted = np.unique(np.concatenate([[0, n - 1], previous, following]))
    found = dict(zip(wanted.tolist(), order_statistics(rows, column, n, wanted, task_rows),
                     strict=True))
    values = _quantiles._lerp(np.array([found[k] for k in previous.tolist()]),
                              np.array([found[k] for k in following.tolist()]), gamma)
    return {
        "mean": float(mean),
        "mean_abs": float(absolute / n),
        "sd": float(np.sqrt(squares / n)),
        "min": float(found[0]),
        "max": float(found[n - 1]),
        "quantiles": {str(p): float(v) for p, v in zip(quantiles, values, strict=True)},
    }
