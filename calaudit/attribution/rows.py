"""The recalibration model's rows read by the tasks that reduce them.

For a dataset whose tasks read their own rows (``data.rows`` with ``reads_own_rows``),
:class:`LevelRows` gives a range's scalar view (``outcome``, ``prediction``: binary
``(y == 1, p_1)``, multi-class top-label ``(y == argmax p, max p)``,
:func:`calaudit.local.lcb.top_label_residual`) and each covariate's level codes
(``code:k``: a numeric covariate's bands from the level's ``edges``,
:func:`calaudit.local.groups.band_codes`; a categorical covariate's codes), computed in
the task row by row, so the values are the in-memory arrays' bits. :func:`task_model`
builds the model's terms and rows from reductions over it:

1. per level of every covariate, its rows and events (integer counts, exact);
2. the levels large enough (``min_rows``, ``min_events``) give the rows kept; per level
   its kept rows (the reference: the largest), the cells present among the kept rows
   (mixed-radix keys of the level codes, counted) and the kept predictions' sum;
3. the fits read :class:`KeptRows`: a range's kept ``y``, ``offset = logit(clip(p))`` and
   ``cell`` (the rank of the row's key among the present keys), as
   :class:`calaudit.attribution.model.ModelRows` holds them in memory, over the same
   ranges of the data's rows.

The explained-group check reads the same rows (:mod:`.group_check`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.attribution.design import Cells, Term
from calaudit.attribution.irls import PART_ROWS, part_ranges
from calaudit.attribution.model import ModelRows, logit_offset
from calaudit.local.groups import band_codes
from calaudit.local.lcb import top_label_residual
from calaudit.local.levels import level_reads
from calaudit.scale import DerivedRows


@dataclass(frozen=True)
class LevelRows(DerivedRows):
    """``outcome``, ``prediction`` (and its ``offset``, ``logit(clip(p))``) and ``code:k``
    of a range, computed in the task from
    the source's ``y``, ``proba`` and covariate ``columns`` (module docstring); ``edges``:
    each covariate's band edges (None: categorical)."""

    source: Any
    columns: tuple[str, ...]
    edges: tuple[NDArray[np.float64] | None, ...]

    def read(self, start: int, stop: int, names: Any) -> dict[str, NDArray]:
        part = self.source.read(start, stop, ["y", "proba", *self.columns])
        outcome, prediction = top_label_residual(part["y"], part["proba"])
        out = {"outcome": outcome, "prediction": prediction}
        if "offset" in names:
            out["offset"] = logit_offset(prediction)
        for k, (column, edges) in enumerate(zip(self.columns, self.edges, strict=True)):
            x = part[column]
            out[f"code:{k}"] = (np.asarray(x, dtype=np.int32) if edges is None
                                else band_codes(np.asarray(x, dtype=np.float64), edges))
        return {name: out[name] for name in names}


def level_rows(data: Any, levels: Sequence[Any]) -> LevelRows | None:
    """The :class:`LevelRows` of ``data`` when its rows are read by their tasks, else
    None (the rows are in memory)."""
    source = getattr(data, "rows", None)
    if not getattr(source, "reads_own_rows", False):
        return None
    return LevelRows(source, *level_reads(data, levels))


def _codes(k: int) -> list[str]:
    return [f"code:{j}" for j in range(k)]


def sizes_partial(start: int, stop: int, *, rows: Any, sizes: tuple[int, ...]
                  ) -> dict[str, NDArray]:
    """Per covariate ``k`` and level: ``rows:k`` (its rows) and ``events:k`` (the sum of
    the outcomes, 0/1: exact)."""
    part = rows.read(start, stop, ["outcome", *_codes(len(sizes))])
    out = {}
    for k, size in enumerate(sizes):
        codes = part[f"code:{k}"]
        out[f"rows:{k}"] = np.bincount(codes, minlength=size)
        out[f"events:{k}"] = np.bincount(codes, weights=part["outcome"], minlength=size)
    return out


def _kept(part: dict[str, NDArray], usable: tuple[NDArray[np.bool_], ...]) -> NDArray:
    keep = np.ones(part["outcome"].size, dtype=bool)
    for k, ok in enumerate(usable):
        keep &= ok[part[f"code:{k}"]]
    return keep


def _keys(part: dict[str, NDArray], sizes: Sequence[int], keep: Any = slice(None)
          ) -> NDArray[np.int64]:
    """Mixed-radix keys of the rows' level codes (:func:`calaudit.attribution.design.
    _keys`)."""
    key = np.zeros(part["outcome"][keep].size, dtype=np.int64)
    for k, size in enumerate(sizes):
        key *= size
        key += part[f"code:{k}"][keep]
    return key


def kept_partial(start: int, stop: int, *, rows: Any, usable: tuple[NDArray, ...],
                 sizes: tuple[int, ...]) -> dict[str, NDArray]:
    """Of the rows kept: per covariate ``k`` and level ``kept:k`` (its rows), ``cells``
    (the count of every key), ``count`` and ``prediction`` (the sum of ``p``)."""
    part = rows.read(start, stop, ["outcome", "prediction", *_codes(len(sizes))])
    keep = _kept(part, usable)
    out = {f"kept:{k}": np.bincount(part[f"code:{k}"][keep], minlength=size)
           for k, size in enumerate(sizes)}
    out["cells"] = np.bincount(_keys(part, sizes, keep),
                               minlength=int(np.prod(sizes, dtype=np.int64)))
    out["count"] = np.array([np.count_nonzero(keep)])
    out["prediction"] = np.array([np.sum(part["prediction"][keep])])
    return out


@dataclass(frozen=True)
class KeptRows:
    """The model's rows of a range read by its task (module docstring, step 3): ``y``,
    ``offset`` and ``cell`` of the range's kept rows."""

    rows: Any
    usable: tuple[NDArray[np.bool_], ...]
    sizes: tuple[int, ...]
    present: NDArray[np.int64]

    reads_own_rows = True

    @property
    def n(self) -> int:
        return self.rows.n

    def read(self, start: int, stop: int, names: Any) -> dict[str, NDArray]:
        part = self.rows.read(start, stop,
                              ["outcome", "prediction", *_codes(len(self.sizes))])
        keep = _kept(part, self.usable)
        out = {"y": lambda: part["outcome"][keep],
               "offset": lambda: logit_offset(part["prediction"][keep]),
               "cell": lambda: np.searchsorted(self.present, _keys(part, self.sizes, keep)
                                               ).astype(np.int32)}
        return {name: out[name]() for name in names}


def _decoded(present: NDArray[np.int64], sizes: Sequence[int]) -> NDArray[np.intp]:
    """The level codes of each key (cells x terms), as :meth:`Cells.build` decodes them."""
    keys = present.copy()
    codes = np.empty((keys.size, len(sizes)), dtype=np.intp)
    for t in range(len(sizes) - 1, -1, -1):
        keys, codes[:, t] = np.divmod(keys, sizes[t])
    return codes


#: The tasks count the cells of every level combination up to this many combinations.
TASK_KEYS = 1 << 16


def can_reduce(levels: Sequence[Any]) -> bool:
    """Whether the tasks can count the cells of every level combination
    (:data:`TASK_KEYS`)."""
    return float(np.prod([len(lv.labels) for lv in levels], dtype=np.float64)) <= TASK_KEYS


@dataclass(frozen=True)
class TaskTerms:
    """What :func:`task_model` finds: the terms, the model's rows (read by the tasks) and
    each covariate's rows per level (every row)."""

    terms: list[Term]
    model: ModelRows
    counts: list[NDArray[np.int64]]


def task_model(rows: Any, levels: Sequence[Any], kinds: Sequence[str], min_rows: int,
               min_events: int) -> TaskTerms:
    """The terms of :func:`calaudit.attribution.design.build_terms` and the
    :class:`ModelRows` of :meth:`ModelRows.build` from reductions of the level rows
    ``rows`` (module docstring; unweighted rows)."""
    sizes = tuple(len(lv.labels) for lv in levels)
    ranges = scale.task_ranges(rows.n)
    found = scale.map_exact_sum(sizes_partial, ranges, {"rows": rows, "sizes": sizes})
    usable, counts = [], []
    for k in range(len(sizes)):
        n, events = found[f"rows:{k}"].astype(np.int64), found[f"events:{k}"]
        counts.append(n)
        usable.append(np.array([int(n[c]) >= min_rows and min(
            float(events[c]), int(n[c]) - float(events[c])) >= min_events
            for c in range(sizes[k])], dtype=bool))
    kept = scale.map_sum(kept_partial, part_ranges(rows.n),
                         {"rows": rows, "usable": tuple(usable), "sizes": sizes})
    terms = []
    for k, (lv, kind) in enumerate(zip(levels, kinds, strict=True)):
        ok = tuple(int(c) for c in np.flatnonzero(usable[k]))
        used = kept[f"kept:{k}"].astype(np.int64)
        reference = max(ok, key=lambda c: (used[c], -c)) if ok else 0
        terms.append(Term(lv.name, lv.labels, None, reference, ok, kind))  # type: ignore
    present = np.flatnonzero(kept["cells"]).astype(np.int64)
    count = int(kept["count"][0])
    mean = float("nan") if not count else float(kept["prediction"][0] / count)
    cells = Cells(tuple(terms), None, _decoded(present, sizes))  # type: ignore[arg-type]
    source = KeptRows(rows, tuple(usable), sizes, present)
    return TaskTerms(terms, ModelRows(None, None, cells, mean, source=source,  # type: ignore
                                      extent=rows.n, used=count), counts)


__all__ = ["KeptRows", "LevelRows", "PART_ROWS", "TaskTerms", "can_reduce", "level_rows",
           "task_model"]
