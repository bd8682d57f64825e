"""The group table's per-group moments on weighted rows, as reductions over the rows.

For every group (``w_i`` the row weight, docs/weights.md; ``e = y - p``):

* ``W = sum w``, ``sum w^2``, and per outcome class ``sum w``, ``sum w^2``;
* ``sum w y``, ``sum w p``, ``sum w e`` (``bias = sum w e / W``);
* ``M2 = sum w (e - bias)^2`` and ``L = sum w^2 (e - bias)^2``.

Two passes as :mod:`calaudit.local.group_moments` (Chan, Golub & LeVeque 1983, eq. 1.7):
with the first pass's means ``m``, ``sum w x = S + sum w (x - m)``,
``M2 = sum w (e - m)^2 - (sum w (e - m))^2 / W`` and
``L = sum w^2 (e - m)^2 - 2 c sum w^2 (e - m) + c^2 sum w^2`` with ``c = bias - m``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.local.group_moments import _codes
from calaudit.scale import ArrayRows, task_ranges


@dataclass(frozen=True)
class WeightedMoments:
    """One group's weighted sums (module docstring); ``rows``: its rows of positive
    weight."""

    rows: int
    weight: float
    weight_sq: float
    positive_weight: float
    positive_weight_sq: float
    events: float
    expected_events: float
    bias: float
    m2: float
    linearised: float

    @property
    def negative_weight(self) -> float:
        return self.weight - self.positive_weight

    @property
    def negative_weight_sq(self) -> float:
        return self.weight_sq - self.positive_weight_sq


def weighted_partial(start: int, stop: int, *, rows: Any,
                     groupings: Sequence[tuple[str, int]],
                     means: NDArray[np.float64] | None = None) -> dict[str, NDArray]:
    """Pass 1 (``means`` None): ``sums`` (bins, 7) of ``rows, w, wy, w2, w2y, wp, we``;
    pass 2: ``sums`` (bins, 5) of ``wp, we, wee, w2e, w2ee`` about ``means`` (bins, 2:
    ``p``, ``e``), for the rows ``[start, stop)`` of ``rows`` (``y``, ``p``, ``w``, the
    groupings' codes)."""
    part = rows.read(start, stop, ["y", "p", "w", *(column for column, _ in groupings)])
    code = _codes(part, groupings)
    bins = sum(size + 1 for _, size in groupings)
    k = len(groupings)
    y, p, w = (np.tile(np.asarray(part[c], dtype=np.float64), k) for c in ("y", "p", "w"))
    e = y - p
    w2 = w * w
    if means is None:
        weights = ((w > 0).astype(np.float64), w, w * y, w2, w2 * y, w * p, w * e)
    else:
        dp, de = p - means[code, 0], e - means[code, 1]
        weights = (w * dp, w * de, w * de * de, w2 * de, w2 * de * de)
    return {"sums": np.column_stack([np.bincount(code, weights=v, minlength=bins)
                                     for v in weights]).astype(np.float64)}


def weighted_group_moments(codes: Sequence[NDArray], sizes: Sequence[int],
                           outcome: NDArray, prediction: NDArray, weight: NDArray
                           ) -> list[list[WeightedMoments]]:
    """The weighted moments of every group of every grouping, ``[j][code]``
    (:func:`calaudit.local.group_moments.group_moments`'s layout); two reductions run
    through :mod:`calaudit.scale`."""
    columns = {"y": outcome, "p": prediction, "w": weight}
    columns.update({f"g{j}": values for j, values in enumerate(codes)})
    groupings = [(f"g{j}", int(size)) for j, size in enumerate(sizes)]
    n = int(np.shape(prediction)[0])
    with scale.resident(ArrayRows(columns)) as rows:
        first = scale.map_sum(weighted_partial, task_ranges(n),
                              {"groupings": groupings, "rows": rows})["sums"]
        total = first[:, 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            means = first[:, 5:7] / total[:, None]
        means = np.where(total[:, None] > 0, means, 0.0)
        second = scale.map_sum(weighted_partial, task_ranges(n),
                               {"groupings": groupings, "rows": rows,
                                "means": means})["sums"]
    out, at = [], 0
    for _, size in groupings:
        out.append([_moments(first[at + code], second[at + code]) for code in range(size)])
        at += size + 1
    return out


def _moments(first: NDArray, second: NDArray) -> WeightedMoments:
    """One group's moments from its two passes' sums (module docstring)."""
    total = float(first[1])
    if not total > 0:
        nan = float("nan")
        return WeightedMoments(int(first[0]), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, nan, nan, nan)
    e_sum = first[6] + second[1]
    shift = second[1] / total  # bias - m
    m2 = max(second[2] - second[1] * second[1] / total, 0.0)
    linearised = max(second[4] - 2.0 * shift * second[3] + shift * shift * first[3], 0.0)
    return WeightedMoments(
        rows=int(first[0]), weight=total, weight_sq=float(first[3]),
        positive_weight=float(first[2]), positive_weight_sq=float(first[4]),
        events=float(first[2]), expected_events=float(first[5] + second[0]),
        bias=float(e_sum / total), m2=float(m2), linearised=float(linearised))
