"""The KLCE product kernel ``k(p_i, p_j) * l(x_i, x_j)`` as a lazy Gram matrix.

Both factors are Gaussian (paper appendix A.5 "RBF kernel for both"):
``k = exp(-gamma_p |p_i - p_j|^2)`` on the prediction (binary: the positive-class
probability; multi-class: the probability vector) and ``l = exp(-gamma_x |x_i - x_j|^2)``
on the encoded covariates. Their product is one Gaussian on the scaled concatenation

    ``k * l = exp(-|z_i - z_j|^2)``,   ``z = [sqrt(gamma_p) p, sqrt(gamma_x) x]``,

which :class:`GaussianProductGram` fills block by block
(:func:`calaudit.numerics.kernels.gaussian_fill`), in row chunks of about
:data:`CHUNK_ENTRIES` entries on a small thread pool (each entry computed on its own).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.local.bandwidth import GaussianBandwidth
from calaudit.local.encoding import encode_covariates
from calaudit.numerics.kernels import gaussian_fill

#: Entries per row chunk of a block (2 MB of float64): the unit of the thread pool.
CHUNK_ENTRIES = 262_144
_POOL: ThreadPoolExecutor | None = None
#: Rows per block when :func:`product_gram` writes the scaled covariates.
FILL_ROWS = 65_536


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        workers = min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else (os.cpu_count() or 1))
        _POOL = ThreadPoolExecutor(max_workers=max(1, workers),
                                   thread_name_prefix="calaudit-kernel")
    return _POOL


def _fill(out: NDArray, a: NDArray[np.float64], b: NDArray[np.float64]) -> None:
    """``out = exp(-|a_i - b_j|^2)`` (``out`` may be a strided view, float64 or float32:
    computed in double precision and rounded once)."""
    gaussian_fill(out, a, b)


def _matrix(features: NDArray[np.float64]) -> NDArray[np.float64]:
    array = np.asarray(features, dtype=np.float64)
    return array[:, None] if array.ndim == 1 else array


@dataclass(frozen=True)
class GaussianProductGram:
    """``K_ij = exp(-|z_i - z_j|^2)`` for the rows ``z_i`` of ``features``."""

    features: NDArray[np.float64]
    #: ``block`` accepts ``dtype=np.float32`` (single-precision kernel values).
    supports_dtype = True

    @property
    def n(self) -> int:
        return int(self.features.shape[0])

    def block(self, rows: slice, cols: slice, dtype: type = np.float64,
              pooled: bool = True) -> NDArray:
        """``K[rows, cols]`` in ``dtype``, filled in row chunks on the kernel's thread
        pool (``pooled=False``: in the calling thread, e.g. a task of a pass whose row
        tiles already run on threads of their own); the same bits either way."""
        a, b = self.features[rows], self.features[cols]
        out = np.empty((a.shape[0], b.shape[0]), dtype=dtype)
        step = max(1, CHUNK_ENTRIES // max(b.shape[0], 1))
        starts = range(0, a.shape[0], step)
        if not pooled:
            for c in starts:
                _fill(out[c:c + step], a[c:c + step], b)
            return out
        if len(starts) < 2:
            _fill(out, a, b)
            return out
        jobs = [_pool().submit(_fill, out[c:c + step], a[c:c + step], b) for c in starts]
        for job in jobs:
            job.result()
        return out

    def diagonal(self) -> NDArray[np.float64]:
        return np.ones(self.n)


class ScaledRows:
    """The scaled rows ``z = [sqrt(gamma_p) p, sqrt(gamma_x) x]`` of :func:`product_gram`
    as an array-like that computes only the rows asked for (``[lo:hi]``, ``[index
    array]``, ``[rows, columns]``) or everything (``np.asarray``), the same bits as the
    stored matrix."""

    ndim = 2
    dtype = np.dtype(np.float64)

    def __init__(self, prob_features: NDArray[np.float64], prob_gamma: float,
                 cov_features, cov_gamma: float) -> None:
        # a column that fetches the rows asked for (row_columns.GatheredColumn, (n, 1))
        self.p = prob_features if hasattr(prob_features, "at") else _matrix(prob_features)
        self.x = cov_features if hasattr(cov_features, "shape") or cov_features is None \
            else np.asarray(cov_features, dtype=np.float64)
        self.prob_scale, self.cov_scale = math.sqrt(prob_gamma), math.sqrt(cov_gamma)
        width = self.p.shape[1] + (0 if self.x is None else 1 if len(self.x.shape) == 1
                                   else self.x.shape[1])
        self.shape = (int(self.p.shape[0]), width)

    def __len__(self) -> int:
        return self.shape[0]

    def _rows(self, rows: slice | NDArray[np.intp], out: NDArray[np.float64]) -> None:
        k = self.p.shape[1]
        np.multiply(self.p[rows], self.prob_scale, out=out[:, :k])
        if self.x is not None:
            np.multiply(_matrix(self.x[rows]), self.cov_scale, out=out[:, k:])

    def __getitem__(self, index) -> NDArray[np.float64]:
        if isinstance(index, tuple):  # (rows, columns): the rows, then the columns
            return self[index[0]][(slice(None), *index[1:])]
        rows = index if isinstance(index, slice) else np.asarray(index)
        if rows.__class__ is not slice and rows.dtype == bool:
            rows = np.flatnonzero(rows)
        size = len(range(*rows.indices(self.shape[0]))) if isinstance(rows, slice) \
            else int(rows.size)
        out = np.empty((size, self.shape[1]))
        if isinstance(rows, slice) and rows.step in (None, 1) and size > FILL_ROWS:
            start = rows.indices(self.shape[0])[0]  # a row block at a time
            for lo in range(0, size, FILL_ROWS):
                hi = min(lo + FILL_ROWS, size)
                self._rows(slice(start + lo, start + hi), out[lo:hi])
        else:
            self._rows(rows, out)
        return out

    def __array__(self, dtype=None, copy=None) -> NDArray:
        out = self[:]
        return out if dtype is None else out.astype(dtype, copy=False)

    def __sizeof__(self) -> int:
        """Bytes of the inputs it holds (what ``sys.getsizeof`` and ``dask.sizeof`` report
        for a placed row source)."""
        return int(self.p.nbytes) + (0 if self.x is None else sys.getsizeof(self.x))


def product_gram(prob_features: NDArray[np.float64], prob_gamma: float,
                 cov_features: NDArray[np.float64] | None,
                 cov_gamma: float, lazy: bool = False) -> GaussianProductGram:
    """The Gram matrix of ``exp(-prob_gamma |p - p'|^2 - cov_gamma |x - x'|^2)``.

    ``cov_features=None`` drops the covariate factor (``l = 1``: the global kernel
    calibration error with a Gaussian kernel, used by the validation scripts). ``lazy``:
    the Gram's ``features`` are a :class:`ScaledRows`, built for the rows asked for (the
    same bits).
    """
    rows = ScaledRows(prob_features, prob_gamma, cov_features, cov_gamma)
    return GaussianProductGram(rows if lazy else rows[:])


def kite_gram(prob_features: NDArray[np.float64], covariates: Sequence[Any], local: Any
              ) -> tuple[GaussianProductGram, dict[str, Any]]:
    """The KLCE kernel of KiTE's ``ELCE2`` (the ``kite_*`` settings of ``local``):
    ``k = exp(-|p - q|^2 / w^2)``, ``l = exp(-gamma |x - y|^2)`` on raw (or standardised)
    covariates, ``gamma`` default ``1 / covariates`` (sklearn's ``1 / n_features`` on the
    table KiTE receives, where a two-level category is one 0/1 column: the one-hot code at
    distance 1 then gives KiTE's kernel exactly); and its parameters for the result."""
    encoded = encode_covariates(covariates, standardize=local.kite_standardize)
    cov_gamma = local.kite_cov_gamma or 1.0 / len(covariates)
    prob_gamma = 1.0 / local.kite_prob_kernel_width ** 2
    gram = product_gram(prob_features, prob_gamma, encoded.features, cov_gamma)
    params = {"covariates": [c.name for c in covariates],
              "prob_kernel": {**GaussianBandwidth.from_gamma(prob_gamma, "kite").to_dict(),
                              "kite_prob_kernel_width": local.kite_prob_kernel_width},
              "cov_kernel": {**GaussianBandwidth.from_gamma(cov_gamma, "kite").to_dict(),
                             "kite_gamma": cov_gamma},
              "covariates_standardized": local.kite_standardize,
              "null": local.kite_null,
              "normalisation": "(n - 1) / n * sum_{i,j} K_ij"}
    return gram, params
