"""The group table's per-group moments as reductions over the fixed row ranges.

For every group ``g`` (``d = y - p``, ``l`` the LCB value): ``n_g``, ``sum y``, ``sum p``,
``sum l``, ``sum d`` and ``M2_g = sum (d - dbar_g)^2``. A grouping is a per-row code and its
sums are ``bincount`` s of the code, in two passes over the ranges of ``task_ranges(n)``
(:mod:`calaudit.scale`):

1. ``bincount`` of the codes with weights ``1``, ``y``, ``p``, ``l``, ``d`` (the first means
   ``m1 = S / n``) and ``p (1 - p)``, ``p (1 - p)(1 - 2 p)`` (the cumulants of the group
   test's refined normal approximation, :func:`calaudit.local.poisson_binomial.rna_cdf`);
2. ``bincount`` of the deviations ``x - m1[code]`` (``x`` = ``p``, ``l``, ``d``) and of
   ``(d - m1_d[code])^2``; the sums become ``S + sum (x - m1)`` and
   ``M2 = sum (d - m1)^2 - (sum (d - m1))^2 / n`` (the corrected two-pass algorithm,
   Chan, Golub & LeVeque 1983, eq. 1.7).

Weighted rows (``weighted``; ``w`` the row weight, docs/weights.md; ``e = y - p``), the
same two passes: ``W = sum w``, ``sum w^2``, ``sum w y``, ``sum w^2 y``, ``sum w p``,
``sum w e`` and the rows of positive weight; then, about the means ``m``,
``sum w (x - m)`` (``x`` = ``p``, ``e``), ``M2 = sum w (e - m)^2 - (sum w (e - m))^2 / W``
and ``L = sum w^2 (e - m)^2 - 2 c sum w^2 (e - m) + c^2 sum w^2`` with ``c = bias - m``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.scale import task_ranges


@dataclass(frozen=True)
class GroupMoments:
    """One group's moments (module docstring); ``mean_lcb`` NaN without LCB values."""

    n: int
    events: float
    observed_rate: float
    expected_events: float
    mean_prediction: float
    mean_lcb: float
    bias: float
    sd: float  # sd(d), n - 1 in the denominator; NaN for one row
    #: ``sum p``, ``sum p (1 - p)``, ``sum p (1 - p)(1 - 2 p)`` (pass 1, range by range).
    cumulants: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class WeightedMoments:
    """One group's weighted sums (module docstring); ``rows``: its rows of positive
    weight; ``bias = sum w e / W``, ``m2 = M2``, ``linearised = L``."""

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


def _codes(part: dict[str, NDArray], groupings: Sequence[tuple[str, int]]) -> NDArray:
    """Every grouping's codes of the range, offset so the groupings share one bincount."""
    at, out = 0, []
    for column, size in groupings:
        out.append(np.asarray(part[column], dtype=np.intp) + at)
        at += size + 1  # code ``size``: rows in no group of the grouping
    return np.concatenate(out)


def moments_partial(start: int, stop: int, *, rows: Any, groupings: Sequence[tuple[str, int]],
                    lcb: Any = None, means: NDArray[np.float64] | None = None,
                    weighted: bool = False) -> dict[str, NDArray]:
    """Pass 1 (``means`` None): ``sums`` (bins, 7) of ``n, y, p, l, d, p(1-p),
    p(1-p)(1-2p)``; pass 2: ``sums`` (bins, 4) of ``p, l, d, dd`` about ``means`` (bins, 3:
    ``p``, ``l``, ``d``), for the rows ``[start, stop)`` of ``rows`` (``y``, ``p``, the
    groupings' codes) and of ``lcb`` (a source of the LCB values, column ``lcb``; None:
    none). ``weighted`` (column ``w`` too): :func:`weighted_sums`."""
    names = ["y", "p", *(["w"] if weighted else []), *(column for column, _ in groupings)]
    part = rows.read(start, stop, names)
    code = _codes(part, groupings)
    bins = sum(size + 1 for _, size in groupings)
    k = len(groupings)
    y = np.tile(np.asarray(part["y"], dtype=np.float64), k)
    p = np.tile(np.asarray(part["p"], dtype=np.float64), k)
    if weighted:
        weights = weighted_sums(y, p, np.tile(np.asarray(part["w"], dtype=np.float64), k),
                                code, means)
    else:
        ell = (np.tile(np.asarray(lcb.read(start, stop, ("lcb",))["lcb"], dtype=np.float64),
                       k) if lcb is not None else np.zeros_like(p))
        d = y - p
        if means is None:
            spread = p * (1.0 - p)
            weights = (None, y, p, ell, d, spread, spread * (1.0 - 2.0 * p))
        else:
            dev = d - means[code, 2]
            weights = (p - means[code, 0], ell - means[code, 1], dev, dev * dev)
    return {"sums": np.column_stack([np.bincount(code, weights=w, minlength=bins)
                                     for w in weights]).astype(np.float64)}


def weighted_sums(y: NDArray, p: NDArray, w: NDArray, code: NDArray,
                  means: NDArray[np.float64] | None) -> tuple[NDArray, ...]:
    """The per-row terms of the weighted passes: pass 1 (``means`` None) ``rows, w, wy,
    w2, w2y, wp, we``; pass 2 ``wp, we, wee, w2e, w2ee`` about ``means`` (bins, 2: ``p``,
    ``e``)."""
    e = y - p
    w2 = w * w
    if means is None:
        return ((w > 0).astype(np.float64), w, w * y, w2, w2 * y, w * p, w * e)
    dp, de = p - means[code, 0], e - means[code, 1]
    return (w * dp, w * de, w * de * de, w2 * de, w2 * de * de)


def source_moments(source: Any, groupings: Sequence[tuple[str, int]], lcb: Any = None,
                   weighted: bool = False) -> list[list[Any]]:
    """The moments of every group of every grouping, ``[j][code]``, of a row source
    (``y``, ``p``, with ``weighted`` the weight ``w``, and each grouping's column of codes
    in ``[0, size]``, ``size`` for rows in none of its groups): :class:`GroupMoments`, the
    LCB values read from ``lcb`` (column ``lcb``; None: no LCB), or with ``weighted``
    :class:`WeightedMoments`. Two reductions through :mod:`calaudit.scale`: a source whose
    tasks read their own rows stays where it is, one held here is placed once."""
    n = int(source.n)
    with scale.resident(source) as rows, _placed(lcb) as ell:
        shared = {"groupings": list(groupings), "lcb": ell, "rows": rows,
                  "weighted": weighted}
        first = scale.map_sum(moments_partial, task_ranges(n), shared)["sums"]
        count, sums = (first[:, 1], first[:, 5:7]) if weighted else (first[:, 0],
                                                                     first[:, 2:5])
        with np.errstate(invalid="ignore", divide="ignore"):
            means = sums / count[:, None]
        means = np.where(count[:, None] > 0, means, 0.0)
        second = scale.map_sum(moments_partial, task_ranges(n),
                               {**shared, "means": means})["sums"]
    out, at = [], 0
    for _, size in groupings:
        out.append([_weighted(first[at + code], second[at + code]) if weighted else
                    _moments(first[at + code], second[at + code], lcb is not None)
                    for code in range(size)])
        at += size + 1
    return out


@contextmanager
def _placed(lcb: Any) -> Iterator[Any]:
    """The LCB source as the tasks receive it (None stays None)."""
    if lcb is None:
        yield None
        return
    with scale.resident(lcb) as rows:
        yield rows


def _moments(first: NDArray, second: NDArray, lcb: bool) -> GroupMoments:
    """One group's moments from its two passes' sums (module docstring)."""
    n = int(first[0])
    if n == 0:
        nan = float("nan")
        return GroupMoments(0, 0.0, nan, 0.0, nan, nan, nan, nan)
    p_sum, l_sum, d_sum = (first[2] + second[0], first[3] + second[1], first[4] + second[2])
    m2 = max(second[3] - second[2] * second[2] / n, 0.0)
    return GroupMoments(
        n=n, events=float(first[1]), observed_rate=float(first[1] / n),
        expected_events=float(p_sum), mean_prediction=float(p_sum / n),
        mean_lcb=float(l_sum / n) if lcb else float("nan"), bias=float(d_sum / n),
        sd=float(np.sqrt(m2 / (n - 1))) if n > 1 else float("nan"),
        cumulants=(float(first[2]), float(first[5]), float(first[6])))


def _weighted(first: NDArray, second: NDArray) -> WeightedMoments:
    """One group's weighted moments from its two passes' sums (module docstring)."""
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
