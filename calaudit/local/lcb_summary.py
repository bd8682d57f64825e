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
- The minimum, the maximum and the quantiles (numpy's ``linear`` method) from exact order
  statistics found by reductions (:mod:`calaudit.numerics.order_statistics`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.numerics.order_statistics import (
    interpolate,
    order_statistics,
    quantile_positions,
)
from calaudit.numerics.pairwise_sums import SUMMARY_ROWS, pairwise_sums


def kept_summary(rows: Any, n: int, quantiles: Sequence[float], column: str = "lcb",
                 task_rows: int = SUMMARY_ROWS) -> dict[str, Any]:
    """:func:`calaudit.local.lcb.summarize` of the column ``column`` of ``rows``
    (``n`` values), the same floats, computed where the rows are (module docstring)."""
    total, absolute = pairwise_sums(rows, column, n, task_rows=task_rows)
    mean = total / n
    squares = pairwise_sums(rows, column, n, centre=float(mean), task_rows=task_rows)[0]
    previous, following, gamma = quantile_positions(n, quantiles)
    wanted = np.unique(np.concatenate([[0, n - 1], previous % n, following % n]))
    found = order_statistics(rows, {column: wanted})[column]

    def at(ranks: NDArray[np.intp]) -> NDArray[np.float64]:
        return found[np.searchsorted(wanted, ranks % n)]
    values = interpolate(at(previous), at(following), gamma)
    low, high = at(np.array([0, n - 1]))
    return {
        "mean": float(mean),
        "mean_abs": float(absolute / n),
        "sd": float(np.sqrt(squares / n)),
        "min": float(low),
        "max": float(high),
        "quantiles": {str(p): float(v) for p, v in zip(quantiles, values, strict=True)},
    }
