"""The explained-group check of unweighted rows (:func:`calaudit.attribution.explain.
mark_explained`), reduced range by range over the level rows (:mod:`.rows`: in memory or
read by their tasks).

For one adjusted model (``logit(p) + b0 +`` the terms of the explaining covariates that do
not define a group, fitted on the model's rows) and the failing groups it checks:

1. the cells present over every row (mixed-radix keys of the model's terms' codes,
   counted), whose design times the coefficients gives each cell's ``eta``;
2. per group (its rows found from the level codes and the group's key,
   :func:`calaudit.local.groups.define_groups`): its events, rows, ``sum (y - q)`` and the
   moments ``sum q``, ``sum q (1 - q)``, ``sum q (1 - q)(1 - 2 q)`` of the fitted
   ``q = expit(logit(clip(p)) + eta of the row's cell)``, each range's sums as numpy sums
   them on the range's group rows, added in range order;
3. groups of at most :data:`~calaudit.local.poisson_binomial.EXACT_MAX_ROWS` rows gather
   their ``q`` (in row order) for the exact law.

The group's p-value is ``min(1, 2 min(P(S <= s), P(S >= s)))`` under Poisson-binomial
``q`` (:func:`calaudit.local.poisson_binomial.tails`: exact, else the refined normal
approximation of the moments) and its bias after adjusting ``sum (y - q) / rows``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from calaudit import scale
from calaudit.attribution.design import Cells, Term
from calaudit.attribution.irls import part_ranges
from calaudit.local.poisson_binomial import EXACT_MAX_ROWS, poisson_binomial_pmf, rna_cdf

#: The sums of :func:`check_partial`, one column each.
SUMS = ("events", "rows", "residual", "mean", "variance", "third")


def _codes(k: int) -> list[str]:
    return [f"code:{j}" for j in range(k)]


def _members(part: dict[str, NDArray], key: tuple[int, int], sizes: Sequence[int]
             ) -> NDArray[np.bool_]:
    """The rows of the group with ``key`` (its grouping: a covariate, or after them a pair
    of covariates in the order of :func:`itertools.combinations`; its code there)."""
    index, code = key
    if index < len(sizes):
        return part[f"code:{index}"] == code
    a, b = list(combinations(range(len(sizes)), 2))[index - len(sizes)]
    return part[f"code:{a}"].astype(np.int64) * sizes[b] + part[f"code:{b}"] == code


def _key(part: dict[str, NDArray], columns: Sequence[int], sizes: Sequence[int]
         ) -> NDArray[np.int64]:
    key = np.zeros(part["outcome"].size, dtype=np.int64)
    for column, size in zip(columns, sizes, strict=True):
        key *= size
        key += part[f"code:{column}"]
    return key


def cells_partial(start: int, stop: int, *, rows: Any, columns: tuple[int, ...],
                  sizes: tuple[int, ...]) -> dict[str, NDArray]:
    """The count of every key of the covariates ``columns`` (step 1)."""
    part = rows.read(start, stop, ["outcome", *[f"code:{c}" for c in columns]])
    return {"cells": np.bincount(_key(part, columns, sizes),
                                 minlength=int(np.prod(sizes, dtype=np.int64)))}


def _fitted_part(start: int, stop: int, rows: Any, model: dict[str, Any]
                 ) -> tuple[dict[str, NDArray], NDArray[np.float64]]:
    part = rows.read(start, stop, ["outcome", "offset", *_codes(len(model["all_sizes"]))])
    cell = np.searchsorted(model["present"],
                           _key(part, model["columns"], model["sizes"])).astype(np.int32)
    return part, special.expit(part["offset"] + model["cell_eta"][cell])


def check_partial(start: int, stop: int, *, rows: Any, model: dict[str, Any],
                  keys: tuple[tuple[int, int], ...]) -> dict[str, NDArray]:
    """Per group of ``keys``, the sums of step 2 (``sums``: groups x :data:`SUMS`)."""
    part, q = _fitted_part(start, stop, rows, model)
    out = np.zeros((len(keys), len(SUMS)))
    for g, key in enumerate(keys):
        member = _members(part, key, model["all_sizes"])
        y, p = part["outcome"][member], q[member]
        out[g] = (np.sum(y), y.size, np.sum(y - p), np.sum(p), np.add.reduce(p * (1.0 - p)),
                  np.add.reduce(p * (1.0 - p) * (1.0 - 2.0 * p)))
    return {"sums": out}


def gather_partial(start: int, stop: int, *, rows: Any, model: dict[str, Any],
                   keys: tuple[tuple[int, int], ...]) -> list[NDArray[np.float64]]:
    """Per group of ``keys``, the ``q`` of its rows in the range (step 3)."""
    part, q = _fitted_part(start, stop, rows, model)
    return [q[_members(part, key, model["all_sizes"])] for key in keys]


def _joined(parts: Iterator[list[NDArray[np.float64]]]) -> list[NDArray[np.float64]]:
    pieces: list[list[NDArray[np.float64]]] | None = None
    for part in parts:
        pieces = [[q] for q in part] if pieces is None else [
            have + [q] for have, q in zip(pieces, part, strict=True)]
    return [np.concatenate(p) for p in pieces or []]


def group_checks(rows: Any, all_terms: Sequence[Term], terms: Sequence[Term],
                 params: NDArray[np.float64], specs: Sequence[Any]
                 ) -> dict[str, tuple[float, float]]:
    """``{group: (bias after adjusting, p-value)}`` of the groups ``specs`` (their
    ``name`` and ``key``) against the model with ``terms`` and coefficients ``params``,
    on the level rows ``rows`` (columns ``outcome``, ``offset``, ``code:k`` of every term
    of ``all_terms``; module docstring)."""
    names = [t.name for t in all_terms]
    columns = tuple(names.index(t.name) for t in terms)
    sizes = tuple(len(t.labels) for t in terms)
    keys = tuple(tuple(int(v) for v in spec.key) for spec in specs)
    with scale.resident(rows) as placed:
        found = scale.map_exact_sum(cells_partial, scale.task_ranges(placed.n),
                                    {"rows": placed, "columns": columns, "sizes": sizes})
        present = np.flatnonzero(found["cells"]).astype(np.int64)
        codes = np.empty((present.size, len(sizes)), dtype=np.intp)
        rest = present.copy()
        for t in range(len(sizes) - 1, -1, -1):
            rest, codes[:, t] = np.divmod(rest, sizes[t])
        model = {"columns": columns, "sizes": sizes, "present": present,
                 "all_sizes": tuple(len(t.labels) for t in all_terms),
                 "cell_eta": Cells(tuple(terms), None, codes).design(terms) @ params}
        ranges = part_ranges(placed.n)
        sums = scale.map_sum(check_partial, ranges,
                             {"rows": placed, "model": model, "keys": keys})["sums"]
        small = tuple(g for g in range(len(keys)) if sums[g, 1] <= EXACT_MAX_ROWS)
        gathered = dict(zip(small, scale.map_combine(
            gather_partial, ranges, {"rows": placed, "model": model,
                                     "keys": tuple(keys[g] for g in small)}, _joined)
            if small else [], strict=True))
    out = {}
    for g, spec in enumerate(specs):
        events, count, residual, *moments = sums[g]
        out[spec.name] = (float(residual / count), _p_value(int(events), gathered.get(g),
                                                            moments))
    return out


def _p_value(events: int, q: NDArray[np.float64] | None, moments: Sequence[float]) -> float:
    """:func:`calaudit.local.poisson_binomial.group_test` of the group: exact from its
    ``q``, else the refined normal approximation of its ``moments``."""
    if q is not None:
        pmf = poisson_binomial_pmf(q)
        lower, upper = float(min(1.0, pmf[:events + 1].sum())), float(min(1.0, pmf[events:].sum()))
    else:
        mean, variance, third = (float(m) for m in moments)
        lower = rna_cdf(events, mean, variance, third)
        upper = 1.0 - rna_cdf(events - 1, mean, variance, third)
    return float(min(1.0, 2.0 * min(lower, upper)))
