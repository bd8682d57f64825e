"""Covariates -> the numeric matrix the covariate kernel works on (design notes 3).

* numeric covariate: z-score ``(x - mean) / sd`` (population sd, ``ddof = 0``); a constant
  column (``sd = 0``) becomes zeros, it cannot separate anyone;
* categorical covariate with categories ``c_1..c_K``: one-hot code scaled by
  ``1 / sqrt(2)``, so two rows in different categories are at squared Euclidean distance
  exactly 1 and rows in the same category at distance 0 (for a 0/1 covariate this equals
  the raw 0/1 coding, which keeps the KiTE mode comparable).

``standardize=False`` keeps numeric covariates raw (KiTE's ``ELCE2`` convention).

Covariates are duck-typed: anything with ``name``, ``kind`` (``numeric`` or
``categorical``), ``values`` (floats, or integer codes into ``categories``) and
``categories`` (``calaudit.data.Covariate`` fits).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

ONE_HOT_SCALE = 1.0 / math.sqrt(2.0)


class CovariateLike(Protocol):
    name: str
    kind: str
    values: NDArray
    categories: tuple[str, ...]


@dataclass(frozen=True)
class EncodedCovariates:
    """The encoded matrix and how each covariate was encoded.

    ``features`` has one row per observation and the columns named in ``columns``
    (``age``, ``race=A``, ``race=B`` ...); ``encoding`` is the JSON description
    (``local.klce.encoding``).
    """

    features: NDArray[np.float64]
    columns: tuple[str, ...]
    encoding: dict[str, Any] = field(default_factory=dict)
    blocks: tuple[slice, ...] = ()


def _numeric(values: NDArray, standardize: bool) -> tuple[NDArray[np.float64], dict]:
    x = np.asarray(values, dtype=np.float64)
    mean, sd = float(x.mean()), float(x.std())
    if not standardize:
        return x.copy(), {"type": "numeric", "mean": mean, "sd": sd, "standardized": False}
    column = (x - mean) / sd if sd > 0 else np.zeros_like(x)
    return column, {"type": "numeric", "mean": mean, "sd": sd, "standardized": True}


def _categorical(codes: NDArray, categories: Sequence[str]) -> tuple[NDArray[np.float64], dict]:
    k = len(categories)
    block = np.zeros((codes.shape[0], k))
    block[np.arange(codes.shape[0]), np.asarray(codes, dtype=np.intp)] = ONE_HOT_SCALE
    return block, {"type": "categorical", "categories": list(categories),
                   "scale": ONE_HOT_SCALE}


def encode_covariates(covariates: Sequence[CovariateLike], *,
                      standardize: bool = True) -> EncodedCovariates:
    """Encode every covariate and concatenate the columns in the given order."""
    blocks: list[NDArray[np.float64]] = []
    names: list[str] = []
    encoding: dict[str, Any] = {}
    slices: list[slice] = []
    for cov in covariates:
        if cov.kind == "categorical":
            block, info = _categorical(cov.values, cov.categories)
            names.extend(f"{cov.name}={c}" for c in cov.categories)
        else:
            column, info = _numeric(cov.values, standardize)
            block = column[:, None]
            names.append(cov.name)
        start = sum(b.shape[1] for b in blocks)
        slices.append(slice(start, start + block.shape[1]))
        blocks.append(block)
        encoding[cov.name] = info
    if not blocks:
        raise ValueError("encode_covariates needs at least one covariate")
    return EncodedCovariates(np.ascontiguousarray(np.hstack(blocks)), tuple(names), encoding,
                             tuple(slices))
