"""Mapping raw labels to class indices ``0 .. m-1`` (docs/inputs.md).

Multi-class: string labels match the class names (the columns' suffixes); integer labels
match integer class names, otherwise they are 0-based column positions. Binary: 0/1,
booleans, or two strings of which one is the positive label (``--positive-label``, or a
usual name such as ``yes``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calaudit.exceptions import InputError

POSITIVE_NAMES = ("1", "true", "yes", "y", "pos", "positive", "t")
UNKNOWN = -1


def _is_numeric(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values)


def _integral(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of a numeric label series and a mask of the integral ones (values
    beyond +-2**62, such as 1e300, are not class codes)."""
    if getattr(values.dtype, "kind", "O") in "iu":  # plain integers: no float copies
        codes = values.to_numpy()
        if codes.dtype.itemsize < 8:  # int8 .. int32, uint8 .. uint32: every value fits
            return codes.astype(np.int64), np.ones(codes.shape, dtype=bool)
        ok = (codes < 2**62) & (codes > -(2**62)) if codes.dtype.kind == "i" else codes < 2**62
        return np.where(ok, codes, UNKNOWN).astype(np.int64, copy=False), ok
    as_float = values.astype(np.float64).to_numpy()
    ok = (np.isfinite(as_float) & (np.abs(as_float) < 2.0**62)
          & (as_float == np.round(as_float)))
    out = np.full(as_float.shape, UNKNOWN, dtype=np.int64)
    out[ok] = as_float[ok].astype(np.int64)
    return np.where(ok, out, UNKNOWN), ok


def _as_text(values: pd.Series) -> np.ndarray:
    if isinstance(values.dtype, pd.CategoricalDtype):  # text read from a dataset
        names = np.array([str(v).strip() for v in values.cat.categories] + ["nan"],
                         dtype=object)
        return names[values.cat.codes.to_numpy()]
    return np.array([str(v).strip() for v in values.to_numpy()], dtype=object)


def map_multiclass(values: pd.Series, class_names: tuple[str, ...]) -> np.ndarray:
    """Class index of each label, ``UNKNOWN`` (-1) when it names no class."""
    m = len(class_names)
    if _is_numeric(values):
        codes, ok = _integral(values)
        named = _integer_names(class_names)
        if named is not None:
            lookup = {value: k for k, value in enumerate(named)}
            return np.array([lookup.get(c, UNKNOWN) if good else UNKNOWN
                             for c, good in zip(codes, ok)], dtype=np.int64)
        return np.where(ok & (codes >= 0) & (codes < m), codes, UNKNOWN)
    codes = pd.Index(list(class_names), dtype=object).get_indexer(_as_text(values))
    return np.where(codes >= 0, codes, UNKNOWN).astype(np.int64)


def _integer_names(class_names: tuple[str, ...]) -> list[int] | None:
    try:
        return [int(name) for name in class_names]
    except ValueError:
        return None


def binary_classes(values: pd.Series, positive_label: str | None, source: str, column: str
                   ) -> tuple[tuple[str, str], np.ndarray]:
    """Class names ``(negative, positive)`` and the 0/1 index of each label (-1 unknown)."""
    if _is_numeric(values) and positive_label is None:
        if pd.api.types.is_bool_dtype(values):
            return ("False", "True"), values.astype(np.int64).to_numpy()
        codes, ok = _integral(values)
        ok &= (codes == 0) | (codes == 1)
        codes[~ok] = UNKNOWN  # in place: _integral's codes are this function's own copy
        return ("0", "1"), codes
    text = _as_text(values)
    distinct = sorted(set(text.tolist()))
    if positive_label is not None and distinct and positive_label not in distinct:
        raise InputError(
            f"--positive-label {positive_label!r} is not one of the labels "
            f"({', '.join(repr(v) for v in distinct[:6])}{', ...' if len(distinct) > 6 else ''})",
            source=source, column=column, rule="positive_label",
            hint="name a label that occurs in the file")
    positive = positive_label if positive_label is not None else _guess_positive(
        distinct, source, column)
    negatives = [v for v in distinct if v != positive]
    if len(negatives) > 1 and positive_label is None:
        raise InputError(f"binary predictions but the labels take {len(distinct)} values "
                         f"({', '.join(distinct[:6])})", source=source, column=column,
                         rule="unknown_label", hint="use one probability column per class "
                                                    "(--prob-cols) for multi-class data")
    negative = negatives[0] if len(negatives) == 1 else f"not {positive}"
    codes = np.where(text == positive, 1, np.where(text == negative, 0, UNKNOWN))
    return (negative, positive), codes.astype(np.int64)


def _guess_positive(distinct: list[str], source: str, column: str) -> str:
    usual = [v for v in distinct if v.lower() in POSITIVE_NAMES]
    if len(usual) == 1:
        return usual[0]
    raise InputError(f"cannot tell which label is the positive class among "
                     f"{', '.join(distinct[:6])}", source=source, column=column,
                     rule="positive_label", hint="name it with --positive-label")
