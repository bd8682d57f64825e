"""Array conventions of the public metric functions (scikit-learn's): ``y_proba`` (n, m)
with class ``k`` in column ``k``, or (n,) positive-class probabilities; ``y_true`` class
indices ``0 .. m-1``. :func:`accepts_1d` converts both before the function runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

F = TypeVar("F", bound=Callable)


def proba_matrix(y_proba) -> NDArray[np.float64]:
    """(n, m) probabilities: a 1-D array ``p`` becomes the two columns ``[1 - p, p]``."""
    proba = np.asarray(y_proba, dtype=np.float64)
    if proba.ndim == 1:
        return np.column_stack([1.0 - proba, proba])
    if proba.ndim != 2:
        raise ValueError(f"y_proba must be 1-D (binary) or 2-D (n, m); got {proba.ndim}-D")
    return proba


def class_indices(y_true, n_rows: int, n_classes: int) -> NDArray[np.int64]:
    """``y_true`` as int64 class indices, checked against the shape of ``y_proba``."""
    labels = np.asarray(y_true)
    if labels.ndim != 1 or labels.shape[0] != n_rows:
        raise ValueError(f"y_true must be 1-D with {n_rows} entries (one per row of "
                         f"y_proba); got shape {labels.shape}")
    if not (np.issubdtype(labels.dtype, np.integer) or labels.dtype == bool):
        if not (np.issubdtype(labels.dtype, np.floating)
                and bool(np.all(labels == np.round(labels)))):
            raise ValueError("y_true must hold class indices 0 .. m-1 (integers or "
                             "booleans); use CalibrationData.from_arrays for string labels")
    labels = labels.astype(np.int64, copy=False)
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        bad = int(np.flatnonzero((labels < 0) | (labels >= n_classes))[0])
        raise ValueError(f"y_true must hold class indices 0 .. {n_classes - 1}; index {bad} "
                         f"holds {labels[bad]}")
    return labels


def residuals_of(y_true: NDArray[np.int64], y_proba: NDArray[np.float64]
                 ) -> NDArray[np.float64]:
    """``e_{y_i} - p_i``, shape (n, m)."""
    residuals = -np.array(y_proba, dtype=np.float64)
    residuals[np.arange(residuals.shape[0]), y_true] += 1.0
    return residuals


def accepts_1d(function: F) -> F:
    """Let ``function(y_true, y_proba, ...)`` take 1-D binary probabilities and array-likes."""

    @functools.wraps(function)
    def wrapper(y_true, y_proba, *args, **kwargs):
        proba = proba_matrix(y_proba)
        return function(class_indices(y_true, *proba.shape), proba, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
