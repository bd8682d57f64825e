"""Validated covariate columns -> :class:`~calaudit.data.parts.Covariate`: the encoding
(float64, or codes into the sorted category names, written a block of rows at a time) and
the limits on the number of covariates, of categories per covariate and of encoded kernel
columns (:mod:`calaudit.limits`), checked with the error a reader sees.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from calaudit import limits
from calaudit.data import spill
from calaudit.data.parts import Covariate
from calaudit.data.spill import ColumnStore, in_blocks
from calaudit.exceptions import InputError


def encode_covariate(name: str, values: pd.Series, categorical: bool,
                     store: ColumnStore | None = None) -> Covariate:
    """A numeric covariate as float64, or a categorical one as codes into sorted names.
    A float64 column is kept as read; other numeric columns and a dataset's text codes
    are written a block of rows at a time into ``store``."""
    store = store if store is not None else ColumnStore()
    if not categorical:
        if values.dtype == np.float64:
            return Covariate(name, "numeric", values.to_numpy())
        return Covariate(name, "numeric", in_blocks(
            store, len(values), np.float64,
            lambda a, b: values.iloc[a:b].to_numpy(dtype=np.float64)))
    if isinstance(values.dtype, pd.CategoricalDtype):  # text read from a dataset
        names = np.array([str(v) for v in values.cat.categories], dtype=object)
        levels, remap = np.unique(names, return_inverse=True)
        remap = remap.reshape(-1)
        stored = values.array.codes  # a view (values.cat.codes copies)
        # the levels in use, from per-category counts (O(categories) memory, no sort of n
        # codes); every row's code is then one lookup: its level's rank among those used
        counts = np.zeros(len(names) + 1, dtype=np.int64)
        for start in range(0, stored.size, spill.BLOCK):
            counts += np.bincount(stored[start:start + spill.BLOCK].astype(np.intp) + 1,
                                  minlength=counts.size)
        present = np.flatnonzero(counts) - 1  # -1: a missing value (only if not refused)
        used = np.unique(remap[present])
        rank = np.searchsorted(used, remap)
        codes = in_blocks(store, stored.size, rank.dtype, lambda a, b: rank[stored[a:b]])
        return Covariate(name, "categorical", codes, tuple(str(v) for v in levels[used]))
    if pd.api.types.is_float_dtype(values) and bool((values == values.round()).all()):
        values = values.astype(np.int64)
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        levels = np.unique(values.to_numpy())
        codes = np.searchsorted(levels, values.to_numpy())
        return Covariate(name, "categorical", codes, tuple(str(v) for v in levels))
    text = np.array([str(v) for v in values.to_numpy()], dtype=object)
    levels, codes = np.unique(text, return_inverse=True)
    return Covariate(name, "categorical", codes.reshape(-1), tuple(str(v) for v in levels))


def check_count(names: Sequence[str], source: str | None = None,
                categorical: Sequence[str] = ()) -> None:
    """At most ``MAX_COVARIATES`` covariates, each of ``categorical`` among them (checked
    before any file is read)."""
    if len(names) > limits.MAX_COVARIATES:
        raise InputError(f"{len(names):,} covariates given; an audit takes at most "
                         f"{limits.MAX_COVARIATES}", source=source, rule="too_many_covariates",
                         hint="audit the covariates that matter, or several audits of a few "
                              "each; see 'Ranges and limits' in docs/configuration.md")
    for name in categorical:
        if name not in names:
            raise InputError(f"--categorical names '{name}', which is not a covariate",
                             column=name, rule="conflicting_options",
                             hint="list it in --covariates too")


def check_shape(covariates: Sequence[Covariate], sources: Sequence[str]) -> None:
    """The covariates within ``MAX_COVARIATES``, each categorical one within
    ``MAX_CATEGORIES`` categories, and all within ``MAX_KERNEL_COLUMNS`` encoded columns
    (one per numeric covariate, one per category)."""
    check_count([c.name for c in covariates])
    for cov, source in zip(covariates, sources, strict=True):
        if cov.kind == "categorical" and len(cov.categories) > limits.MAX_CATEGORIES:
            raise InputError(f"{len(cov.categories):,} categories; a categorical covariate "
                             f"has at most {limits.MAX_CATEGORIES}", source=source,
                             column=cov.name, rule="too_many_categories",
                             hint="group rare categories into 'other', bin the values, or "
                                  "drop --categorical if it is a number; see 'Ranges and "
                                  "limits' in docs/configuration.md")
    columns = sum(len(c.categories) if c.kind == "categorical" else 1 for c in covariates)
    if columns > limits.MAX_KERNEL_COLUMNS:
        raise InputError(f"the covariates have {columns:,} categories and numeric columns in "
                         f"all; an audit takes at most {limits.MAX_KERNEL_COLUMNS}",
                         source=sources[0] if sources else None, rule="too_many_categories",
                         hint="fewer covariates or fewer categories; see 'Ranges and "
                              "limits' in docs/configuration.md")
