"""Covariate columns of a Parquet dataset read by the task that reduces them.

The loader (:func:`calaudit.data.build.build`, :func:`calaudit.data.covariates.
encode_covariate`) turns a covariate column into float64 values (numeric) or codes into
its sorted levels (categorical: text, booleans, and numbers named by ``--categorical``).
The levels depend on every row, so a task holding one range cannot find them alone:

- :func:`range_levels` gives a range's levels in use (text and booleans: the set of
  their names; numbers: the sorted distinct values, and whether every value is a whole
  number), added over the ranges by :func:`union` in the first reduction
  (:func:`calaudit.data.dataset_rows.check_partial`);
- :meth:`CovariatePlan.settled` fixes them as the loader would (a float column whose
  values are all whole numbers has integer levels; names are ``str`` of the levels,
  sorted as ``numpy.unique`` sorts them);
- :meth:`CovariatePlan.encoded` then computes a range's values or codes in the task,
  the loader's bytes (tested against the loaded arrays).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

#: The prefix of a covariate's column in ``DatasetRows.read`` (``x:age``).
PREFIX = "x:"
#: The loader's covariate rules, in its order, for each covariate.
COVARIATE_RULES = ("missing_covariate", "nonfinite_covariate")


@dataclass(frozen=True, eq=False)
class CovariatePlan:
    """One covariate: its column (kind and per-file dtypes, ``ColumnPlan``), whether the
    loader treats it as categorical, and once the first reduction has run, its levels
    (an object array of names, or the sorted numbers of a numeric categorical column)."""

    column: Any
    categorical: bool
    levels: NDArray | None = field(default=None, repr=False)
    #: A float column whose values are all whole numbers: its levels are integers.
    integral: bool = False

    @property
    def name(self) -> str:
        return self.column.name

    @property
    def kind(self) -> str:
        return "categorical" if self.categorical else "numeric"

    @property
    def categories(self) -> tuple[str, ...]:
        return () if self.levels is None else tuple(str(v) for v in self.levels)

    def settled(self, found: Any, fractional: int) -> CovariatePlan:
        """The plan with the levels of every range (``found``: :func:`union` of
        :func:`range_levels`; ``fractional``: the ranges with a value that is not a whole
        number), as :func:`calaudit.data.covariates.encode_covariate` orders them."""
        if not self.categorical:
            return self
        if isinstance(found, set):
            return replace(self, levels=np.unique(np.array(sorted(found), dtype=object)))
        values = np.asarray(found)
        integral = values.dtype.kind == "f" and fractional == 0
        return replace(self, levels=values.astype(np.int64) if integral else values,
                       integral=integral)

    def encoded(self, values: pd.Series) -> NDArray:
        """A range's float64 values (numeric) or int64 codes into :attr:`levels`."""
        if not self.categorical:
            return values.to_numpy(dtype=np.float64)
        if isinstance(values.dtype, pd.CategoricalDtype):
            index = {name: k for k, name in enumerate(self.levels)}
            lookup = np.array([index.get(str(v), -1) for v in values.cat.categories] or [0],
                              dtype=np.int64)
            return lookup[np.asarray(values.array.codes, dtype=np.intp)]
        raw = values.to_numpy()
        if self.levels.dtype != object:
            raw = raw.astype(np.int64) if self.integral else raw
            return np.searchsorted(self.levels, raw).astype(np.int64)
        index = {name: k for k, name in enumerate(self.levels)}
        distinct, inverse = np.unique(raw, return_inverse=True)
        lookup = np.array([index[str(v)] for v in distinct] or [0], dtype=np.int64)
        return lookup[inverse.reshape(-1)]


def range_levels(plan: CovariatePlan, values: pd.Series) -> tuple[Any, int]:
    """The levels a range uses (a set of names, or the sorted distinct numbers) and 1 when
    a float value is not a whole number (else 0); ``(None, 0)`` for a numeric covariate."""
    if not plan.categorical:
        return None, 0
    if isinstance(values.dtype, pd.CategoricalDtype):
        codes = np.asarray(values.array.codes)
        used = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(
            values.cat.categories)))
        return {str(values.cat.categories[k]) for k in used}, 0
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        raw = values.to_numpy()
        fractional = raw.dtype.kind == "f" and not bool((values == values.round()).all())
        return np.unique(raw[~pd.isna(raw)]), int(fractional)
    return {str(v) for v in np.unique(values.dropna().to_numpy())}, 0


def union(first: Any, second: Any) -> Any:
    """The levels of two ranges together."""
    if first is None:
        return second
    if isinstance(first, set):
        return first | second
    return np.union1d(first, second)
