"""The group table read from a row source: rows stay where they are, groups are reductions.

:class:`GroupRows` gives, for any range of rows, the columns the group table reduces:
``y`` (the outcome: binary ``1{y = 1}``, multi-class ``1{y = argmax p}``), ``p`` (the
prediction: ``p_1``, or ``max p``; :func:`calaudit.local.lcb.top_label_residual`) and one
column of codes per grouping (``g0``, ``g1``, ...): each covariate's level (a numeric
covariate's band from its level's ``edges``, :func:`calaudit.local.groups.band_codes`; a
categorical covariate's codes), then each pair's joint code ``a |B| + b``. Over a dataset
(a source whose tasks read their own rows) the task computes them from its range's
``y``, ``proba`` and covariates, row by row: the bits of the in-memory columns, so one
code path serves both.

What the client holds: the groups' moments (:mod:`calaudit.local.group_moments`, two
reductions) and, by one bounded gather (:func:`gather`, a reduction that concatenates in
range order), the ``y`` and ``p`` of the conclusive groups of fewer than
``NORMAL_MIN_ROWS`` rows, which their bootstrap interval, exact group test, the disparity's
resampling and the panels resample (at most ``NORMAL_MIN_ROWS`` rows, 16 bytes each, per
such group). Larger groups use their moments: the normal interval, the refined normal
approximation from the cumulant sums, the normal draws of the disparity. A panel of a
larger group is the one gather of its own rows (:func:`panel_values`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.local import groups as grp
from calaudit.local.group_moments import GroupMoments, source_moments
from calaudit.local.lcb import top_label_residual
from calaudit.local.levels import level_reads
from calaudit.scale import ArrayRows, task_ranges
from calaudit.scale.shards import BlockRows


@dataclass(frozen=True, eq=False)
class GroupRows:
    """The group table's columns of ``source`` (module docstring). ``raw``: ``source``
    gives ``y`` (class codes) and ``proba`` (else the outcome ``y`` and prediction ``p``
    already); ``columns``: each covariate's column of values or codes; ``edges``: a
    numeric covariate's band edges (None: the column holds the codes); ``sizes``: levels
    per covariate; ``pairs``: the intersections' covariates. Any other column (the row
    weight ``w`` of the weighted table) is read as ``source`` gives it."""

    source: Any
    raw: bool
    columns: tuple[str, ...]
    edges: tuple[NDArray[np.float64] | None, ...]
    sizes: tuple[int, ...]
    pairs: tuple[tuple[int, int], ...] = ()

    @property
    def n(self) -> int:
        return int(self.source.n)

    @property
    def reads_own_rows(self) -> bool:
        return bool(getattr(self.source, "reads_own_rows", False))

    def row_block(self, lo: int, hi: int) -> GroupRows:
        """Rows ``[lo, hi)`` of an in-memory source (on Dask its rows are placed as row
        blocks, one worker each, not broadcast: :mod:`calaudit.scale.shards`)."""
        return replace(self, source=ArrayRows({name: values[lo:hi] for name, values
                                               in self.source.columns.items()}))

    @property
    def nbytes(self) -> int:
        """Bytes of an in-memory source's columns (a placed block's size)."""
        return int(sum(values.nbytes for values in self.source.columns.values()))

    @staticmethod
    def joined(n: int, blocks: Sequence[Sequence[Any]]) -> GroupRows:
        """The rows of consecutive blocks ``[[lo, hi, GroupRows], ...]`` read by global
        row number."""
        return replace(blocks[0][2], source=BlockRows(n, [[lo, hi, block.source]
                                                          for lo, hi, block in blocks]))

    def groupings(self) -> list[tuple[str, int]]:
        """``(column, number of codes)`` of every grouping: the covariates, then the
        pairs."""
        return [(f"g{j}", size) for j, size in enumerate(
            [*self.sizes, *(self.sizes[a] * self.sizes[b] for a, b in self.pairs)])]

    def read(self, start: int, stop: int, names: Any) -> dict[str, NDArray]:
        names = list(names)
        needed = sorted({int(name[1:]) for name in names if name.startswith("g")})
        singles = sorted({j for j in needed if j < len(self.sizes)} | {
            c for j in needed if j >= len(self.sizes) for c in self.pairs[j - len(self.sizes)]})
        wanted = [self.columns[j] for j in singles]
        scores = (["y", "proba"] if self.raw else ["y", "p"]) if {"y", "p"} & set(names) else []
        kept = [name for name in names if name not in ("y", "p") and name[0] != "g"]
        part = self.source.read(start, stop, list(dict.fromkeys([*scores, *wanted, *kept])))
        out: dict[str, NDArray] = {name: part[name] for name in kept}
        if scores:
            out["y"], out["p"] = (top_label_residual(part["y"], part["proba"]) if self.raw
                                  else (part["y"], part["p"]))
        codes = {j: self._codes(j, part[self.columns[j]]) for j in singles}
        for j in needed:
            if j < len(self.sizes):
                out[f"g{j}"] = codes[j]
            else:
                a, b = self.pairs[j - len(self.sizes)]
                out[f"g{j}"] = codes[a].astype(np.int64) * self.sizes[b] + codes[b]
        return {name: out[name] for name in names}

    def _codes(self, j: int, values: NDArray) -> NDArray:
        edges = self.edges[j]
        return np.asarray(values) if edges is None else grp.band_codes(
            np.asarray(values, dtype=np.float64), edges)


def level_rows(data: Any, levels: Sequence[grp.Levels], intersections: bool,
               outcome: NDArray | None = None, prediction: NDArray | None = None,
               weight: NDArray | None = None) -> GroupRows:
    """The group table's rows of ``data`` on ``levels``: read by the tasks from the
    dataset's rows when ``data.rows`` reads its own rows, else the ``outcome``,
    ``prediction`` (with ``weight``: the rows' weights, column ``w``) and the levels'
    codes held here."""
    pairs = tuple(combinations(range(len(levels)), 2)) if intersections else ()
    sizes = tuple(len(lv.labels) for lv in levels)
    source = getattr(data, "rows", None)
    if getattr(source, "reads_own_rows", False):
        return GroupRows(source, True, *level_reads(data, levels), sizes, pairs)
    columns = {"y": outcome, "p": prediction, **({} if weight is None else {"w": weight}),
               **{f"c{j}": lv.codes for j, lv in enumerate(levels)}}
    return GroupRows(ArrayRows(columns), False, tuple(f"c{j}" for j in range(len(levels))),
                     (None,) * len(levels), sizes, pairs)


@dataclass(frozen=True)
class GroupValues:
    """What the group table learnt of each group (by name): its moments and, for a
    gathered group, its rows' ``(y, p)`` in row order; ``rows``: the source, for the
    panels of larger groups."""

    moments: dict[str, GroupMoments]
    gathered: dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]]
    keys: dict[str, tuple[int, int]]
    rows: Any

    def values(self, name: str) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
        return self.gathered.get(name)


def gather_partial(start: int, stop: int, *, rows: Any,
                   wanted: tuple[tuple[int, tuple[int, ...]], ...]) -> dict[str, Any]:
    """The ``y`` and ``p`` of rows ``[start, stop)`` in the groups ``wanted`` (per
    grouping ``j``, its codes), per ``(j, code)`` in row order."""
    part = rows.read(start, stop, ["y", "p", *(f"g{j}" for j, _ in wanted)])
    y, p = np.asarray(part["y"], np.float64), np.asarray(part["p"], np.float64)
    out: dict[str, Any] = {}
    for j, codes in wanted:
        code = part[f"g{j}"]
        for c in codes:
            mask = code == c
            if mask.any():
                out[f"{j}:{c}"] = (y[mask], p[mask])
    return out


def gather(rows: Any, keys: Sequence[tuple[int, int]]) -> dict[tuple[int, int],
                                                                 tuple[NDArray, NDArray]]:
    """The ``(y, p)`` of the groups ``keys`` (grouping, code), each in row order: one
    reduction whose partials are concatenated in range order (the client receives the
    groups' rows only)."""
    if not keys:
        return {}
    by_grouping: dict[int, list[int]] = {}
    for j, code in keys:
        by_grouping.setdefault(j, []).append(code)
    wanted = tuple((j, tuple(codes)) for j, codes in sorted(by_grouping.items()))

    def combine(parts: Iterator[dict[str, Any]]) -> dict[str, list[tuple[NDArray, NDArray]]]:
        pieces: dict[str, list[tuple[NDArray, NDArray]]] = {}
        for part in parts:
            for key, value in part.items():
                pieces.setdefault(key, []).append(value)
        return pieces

    with scale.resident(rows) as placed:
        pieces = scale.map_combine(gather_partial, task_ranges(rows.n),
                                   {"rows": placed, "wanted": wanted}, combine)
    out = {}
    for j, code in keys:
        found = pieces.get(f"{j}:{code}", [])
        out[(j, code)] = (np.concatenate([y for y, _ in found]) if found else np.zeros(0),
                          np.concatenate([p for _, p in found]) if found else np.zeros(0))
    return out


def needs_rows(moments: GroupMoments, settings: grp.GroupSettings) -> bool:
    """Whether a group's rows are gathered: conclusive (:func:`grp.group_row`'s rule) and
    fewer than ``NORMAL_MIN_ROWS`` rows (the bootstrap) or at most ``EXACT_MAX_ROWS``
    (the exact test)."""
    n, events = moments.n, int(moments.events)
    return (n >= settings.min_rows and min(events, n - events) >= settings.min_events
            and (n < grp.NORMAL_MIN_ROWS or n <= grp.EXACT_MAX_ROWS))


def table_of_rows(specs: Sequence[grp.GroupSpec], rows: Any,
                  moments: list[list[GroupMoments]], has_lcb: bool, rng: np.random.Generator,
                  settings: grp.GroupSettings) -> tuple[list[dict[str, Any]], GroupValues]:
    """Rows of ``groups`` (:func:`calaudit.local.groups.group_row`, graded together) from
    the groups' ``moments`` and the gathered rows of the small conclusive ones, with what
    the panels and the disparity need of them."""
    of = {s.name: moments[s.key[0]][s.key[1]] for s in specs}
    small = [s.key for s in specs if needs_rows(of[s.name], settings)]
    found = gather(rows, small)
    gathered = {s.name: found[s.key] for s in specs if s.key in found}
    weights = grp.group_weights(specs)
    table = [grp.group_row(s, of[s.name], gathered.get(s.name), has_lcb, rng, settings,
                           1.0 - (1.0 - settings.level) * float(w))
             for s, w in zip(specs, weights, strict=True)]
    keys = {s.name: s.key for s in specs}
    return grp.grade_groups(table, weights, settings), GroupValues(of, gathered, keys, rows)


def lcb_source(lcb: Any) -> Any:
    """The LCB values as a row source with column ``lcb``: a source as it is, an array in
    :class:`~calaudit.scale.ArrayRows` (None: no LCB)."""
    if lcb is None or hasattr(lcb, "read") or getattr(lcb, "reads_own_rows", False):
        return lcb
    return ArrayRows({"lcb": np.asarray(lcb, dtype=np.float64)})


def level_table(data: Any, levels: Sequence[grp.Levels], intersections: bool,
                outcome: NDArray | None, prediction: NDArray | None, lcb: Any,
                rng: np.random.Generator, settings: grp.GroupSettings
                ) -> tuple[list[grp.GroupSpec], list[dict[str, Any]], GroupValues]:
    """The group table of ``data`` on ``levels`` (:func:`level_rows`): its groups (without
    rows), rows and :class:`GroupValues`; ``lcb``: the LCB values (array or source)."""
    rows = level_rows(data, levels, intersections, outcome, prediction)
    moments = source_moments(rows, rows.groupings(), lcb_source(lcb))
    specs = grp.define_groups(levels, intersections, [[m.n for m in g] for g in moments])
    table, values = table_of_rows(specs, rows, moments, lcb is not None, rng, settings)
    return specs, table, values


def panel_values(values: GroupValues, names: Sequence[str]
                 ) -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """The ``(y, p)`` of the groups ``names`` in row order: the gathered ones as they are,
    the others (``NORMAL_MIN_ROWS``+ rows) by one more gather of their rows."""
    missing = [values.keys[name] for name in names if values.values(name) is None]
    found = gather(values.rows, missing)
    return {name: values.values(name) or found[values.keys[name]] for name in names}
