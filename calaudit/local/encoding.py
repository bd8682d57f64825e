"""Covariates -> the numeric matrix the covariate kernel works on (docs/local-calibration.md).

* numeric covariate: z-score ``(x - mean) / sd`` (``ddof = 0``); a constant column becomes
  zeros;
* categorical covariate: one-hot code scaled by ``1 / sqrt(2)``, so rows in different
  categories are at squared distance exactly 1.

``standardize=False`` keeps numeric covariates raw (KiTE's ``ELCE2`` convention).
Covariates need ``name``, ``kind`` (``numeric`` or ``categorical``), ``values`` (floats, or
integer codes into ``categories``) and ``categories``.
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
    """The encoded matrix (``features``, columns named in ``columns``: ``age``, ``race=A``
    ...) and its JSON description ``encoding`` (``local.klce.encoding``)."""

    features: NDArray[np.float64]
    columns: tuple[str, ...]
    encoding: dict[str, Any] = field(default_factory=dict)
    blocks: tuple[slice, ...] = ()


class EncodedRows:
    """The encoded matrix as an array-like that computes only what is asked for: rows
    (``[lo:hi]``, ``[index array]``), one column (:meth:`column`), or everything
    (``np.asarray``), the same bits as :func:`encode_covariates`."""

    ndim = 2
    dtype = np.dtype(np.float64)

    def __init__(self, covariates: Sequence[CovariateLike], encoding: dict[str, Any],
                 blocks: Sequence[slice]) -> None:
        self.covariates, self.encoding, self.blocks = tuple(covariates), encoding, tuple(blocks)
        self.shape = (len(self.covariates[0].values), self.blocks[-1].stop)

    def __len__(self) -> int:
        return self.shape[0]

    def _fill(self, out: NDArray[np.float64], index: slice | NDArray[np.intp],
              cov: CovariateLike, block: slice) -> None:
        info = self.encoding[cov.name]
        if cov.kind == "categorical":
            codes = np.asarray(cov.values[index])
            out[:, block] = 0.0
            out[np.arange(codes.shape[0]), block.start + np.asarray(codes, dtype=np.intp)] = \
                ONE_HOT_SCALE
        else:
            x = np.asarray(cov.values[index], dtype=np.float64)
            out[:, block.start] = _numeric_values(x, info)

    def __getitem__(self, index: Any) -> NDArray[np.float64]:
        if isinstance(index, tuple):  # (rows, columns): the rows, then the columns
            return self[index[0]][(slice(None), *index[1:])]
        rows = index if isinstance(index, slice) else np.asarray(index)
        size = len(range(*rows.indices(self.shape[0]))) if isinstance(rows, slice) \
            else (rows.size if rows.dtype != bool else int(rows.sum()))
        out = np.empty((size, self.shape[1]))
        for cov, block in zip(self.covariates, self.blocks, strict=True):
            self._fill(out, rows, cov, block)
        return out

    def column(self, j: int) -> NDArray[np.float64]:
        """Column ``j`` (n,) of the encoded matrix."""
        for cov, block in zip(self.covariates, self.blocks, strict=True):
            if block.start <= j < block.stop:
                if cov.kind == "categorical":
                    hit = np.asarray(cov.values, dtype=np.intp) == j - block.start
                    return np.where(hit, ONE_HOT_SCALE, 0.0)
                return _numeric_values(np.asarray(cov.values, dtype=np.float64),
                                       self.encoding[cov.name])
        raise IndexError(j)

    def __array__(self, dtype: Any = None, copy: Any = None) -> NDArray:
        out = self[:]
        return out if dtype is None else out.astype(dtype, copy=False)

    def __sizeof__(self) -> int:
        """Bytes of the covariate values it reads (``sys.getsizeof``, ``dask.sizeof``)."""
        return int(sum(getattr(c.values, "nbytes", 0) for c in self.covariates))


def _numeric_values(x: NDArray[np.float64], info: dict[str, Any]) -> NDArray[np.float64]:
    """A numeric covariate's encoded values from its ``encoding`` entry."""
    if not info["standardized"]:
        return x.copy()
    return (x - info["mean"]) / info["sd"] if info["sd"] > 0 else np.zeros_like(x)


def _numeric(values: NDArray, standardize: bool) -> tuple[NDArray[np.float64], dict]:
    x = np.asarray(values, dtype=np.float64)
    info = _numeric_info(float(x.mean()), float(x.std()), standardize)
    return _numeric_values(x, info), info


def _numeric_info(mean: float, sd: float, standardize: bool) -> dict[str, Any]:
    return {"type": "numeric", "mean": mean, "sd": sd, "standardized": standardize}


def _categorical_info(categories: Sequence[str]) -> dict[str, Any]:
    return {"type": "categorical", "categories": list(categories), "scale": ONE_HOT_SCALE}


def _categorical(codes: NDArray, categories: Sequence[str]) -> tuple[NDArray[np.float64], dict]:
    k = len(categories)
    block = np.zeros((codes.shape[0], k))
    block[np.arange(codes.shape[0]), np.asarray(codes, dtype=np.intp)] = ONE_HOT_SCALE
    return block, _categorical_info(categories)


def weighted_moments(x: NDArray[np.float64], weights: NDArray[np.float64] | None
                     ) -> tuple[float, float]:
    """Mean and population sd of ``x``; with ``weights``, of the weighted law
    (``sum w x / sum w``; for whole-number weights those of the repeated rows)."""
    if weights is None:
        return float(x.mean()), float(x.std())
    mean = float(np.average(x, weights=weights))
    return mean, float(np.sqrt(np.average((x - mean) ** 2, weights=weights)))


def encode_covariates(covariates: Sequence[CovariateLike], *,
                      standardize: bool = True, lazy: bool = False,
                      weights: NDArray[np.float64] | None = None,
                      moments: dict[str, tuple[float, float]] | None = None
                      ) -> EncodedCovariates:
    """Encode every covariate and concatenate the columns in the given order (``lazy``:
    ``features`` is an :class:`EncodedRows`, which computes rows or columns on demand;
    ``weights``: numeric covariates standardised by their weighted mean and sd, lazy
    path only; ``moments``: each numeric covariate's mean and sd when already known,
    lazy path only)."""
    if weights is not None and not lazy:
        raise ValueError("weighted encoding is computed on the lazy path")
    if lazy and covariates:
        covariates = tuple(covariates)
        encoding, names, slices, start = {}, [], [], 0
        for cov in covariates:
            if cov.kind == "categorical":
                encoding[cov.name] = _categorical_info(cov.categories)
                names.extend(f"{cov.name}={c}" for c in cov.categories)
                width = len(cov.categories)
            else:
                known = (moments or {}).get(cov.name)
                encoding[cov.name] = _numeric_info(*(known or weighted_moments(
                    np.asarray(cov.values, dtype=np.float64), weights)), standardize)
                names.append(cov.name)
                width = 1
            slices.append(slice(start, start + width))
            start += width
        return EncodedCovariates(EncodedRows(covariates, encoding, slices), tuple(names),
                                 encoding, tuple(slices))
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
