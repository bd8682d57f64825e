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
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.scale import ArrayRows, task_ranges


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


def _codes(part: dict[str, NDArray], groupings: Sequence[tuple[str, int]]) -> NDArray:
    """Every grouping's codes of the range, offset so the groupings share one bincount."""
    at, out = 0, []
    for column, size in groupings:
        out.append(np.asarray(part[column], dtype=np.intp) + at)
        at += size + 1  # code ``size``: rows in no group of the grouping
    return np.concatenate(out)


def moments_partial(start: int, stop: int, *, rows: Any, groupings: Sequence[tuple[str, int]],
                    lcb: Any = None, means: NDArray[np.float64] | None = None
                    ) -> dict[str, NDArray]:
    """Pass 1 (``means`` None): ``sums`` (bins, 7) of ``n, y, p, l, d, p(1-p),
    p(1-p)(1-2p)``; pass 2: ``sums`` (bins, 4) of ``p, l, d, dd`` about ``means`` (bins, 3:
    ``p``, ``l``, ``d``), for the rows ``[start, stop)`` of ``rows`` (``y``, ``p``, the
    groupings' codes) and of ``lcb`` (a source of the LCB values, column ``lcb``; None:
    none)."""
    part = rows.read(start, stop, ["y", "p", *(column for column, _ in groupings)])
    code = _codes(part, groupings)
    bins = sum(size + 1 for _, size in groupings)
    k = len(groupings)
    y = np.tile(np.asarray(part["y"], dtype=np.float64), k)
    p = np.tile(np.asarray(part["p"], dtype=np.float64), k)
    ell = (np.tile(np.asarray(lcb.read(start, stop, ("lcb",))["lcb"], dtype=np.float64), k)
           if lcb is not None else np.zeros_like(p))
    d = y - p
    if means is None:
        spread = p * (1.0 - p)
        weights = (None, y, p, ell, d, spread, spread * (1.0 - 2.0 * p))
    else:
        dev = d - means[code, 2]
        weights = (p - means[code, 0], ell - means[code, 1], dev, dev * dev)
    return {"sums": np.column_stack([np.bincount(code, weights=w, minlength=bins)
                                     for w in weights]).astype(np.float64)}


def group_moments(codes: Sequence[NDArray], sizes: Sequence[int], outcome: NDArray,
                  prediction: NDArray, lcb: NDArray | None
                  ) -> list[list[GroupMoments]]:
    """The moments of every group of every grouping (``codes[j]``: the per-row code of
    grouping ``j``, in ``[0, sizes[j]]``, ``sizes[j]`` for rows in none of its groups),
    ``[j][code]``; two reductions run through :mod:`calaudit.scale` (module docstring)."""
    columns = {"y": outcome, "p": prediction}
    columns.update({f"g{j}": values for j, values in enumerate(codes)})
    groupings = [(f"g{j}", int(size)) for j, size in enumerate(sizes)]
    return source_moments(ArrayRows(columns), groupings,
                          None if lcb is None else ArrayRows({"lcb": lcb}))


def source_moments(source: Any, groupings: Sequence[tuple[str, int]], lcb: Any = None
                   ) -> list[list[GroupMoments]]:
    """:func:`group_moments` of a row source (``y``, ``p`` and each grouping's column of
    codes in ``[0, size]``), the LCB values read from ``lcb`` (column ``lcb``; None: no
    LCB): a source whose tasks read their own rows stays where it is, one held here is
    placed once."""
    n = int(source.n)
    with scale.resident(source) as rows, _placed(lcb) as ell:
        shared = {"groupings": list(groupings), "lcb": ell, "rows": rows}
        first = scale.map_sum(moments_partial, task_ranges(n), shared)
        count = first["sums"][:, 0]
        with np.errstate(invalid="ignore", divide="ignore"):
            means = first["sums"][:, 2:5] / count[:, None]
        means = np.where(count[:, None] > 0, means, 0.0)
        second = scale.map_sum(moments_partial, task_ranges(n), {**shared, "means": means})
    return _split(first["sums"], second["sums"], groupings, lcb is not None)


@contextmanager
def _placed(lcb: Any) -> Iterator[Any]:
    """The LCB source as the tasks receive it (None stays None)."""
    if lcb is None:
        yield None
        return
    with scale.resident(lcb) as rows:
        yield rows


def _split(first: NDArray, second: NDArray, groupings: Sequence[tuple[str, int]],
           lcb: bool) -> list[list[GroupMoments]]:
    """The folded sums as :class:`GroupMoments` per grouping and code."""
    out, at = [], 0
    for _, size in groupings:
        out.append([_moments(first[at + code], second[at + code], lcb)
                    for code in range(size)])
        at += size + 1
    return out


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


def spec_codes(specs: Sequence[Any], n: int) -> tuple[list[NDArray], list[int],
                                                      list[tuple[int, int]]]:
    """Per-row codes of the groupings of ``specs`` (each spec's ``key``: grouping, code;
    a spec without one is a grouping of its own), their sizes and every spec's (grouping,
    code), int32."""
    keys: list[tuple[Any, int]] = []
    for index, spec in enumerate(specs):
        key = getattr(spec, "key", None)
        keys.append(key if key is not None else (("own", index), 0))
    groupings = list(dict.fromkeys(grouping for grouping, _ in keys))
    sizes = [1 + max(code for grouping, code in keys if grouping == g) for g in groupings]
    codes = [np.full(n, size, np.int32) for size in sizes]
    where = {g: j for j, g in enumerate(groupings)}
    for spec, (grouping, code) in zip(specs, keys, strict=True):
        codes[where[grouping]][spec.rows] = code
    return codes, sizes, [(where[g], code) for g, code in keys]
