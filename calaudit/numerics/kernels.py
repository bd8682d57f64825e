"""Scalar kernels on rows of a feature matrix, evaluated lazily block by block.

A kernel is a frozen settings object (``gamma`` and a distance); ``kernel.on(features)``
binds it to data and returns a :class:`Gram`, an n x n kernel matrix that is never stored
but computed one block at a time by the pairwise engine (:mod:`calaudit.numerics.pairwise`).

Distances follow CalibrationErrors.jl / KernelFunctions.jl:

* total variation ``TV(p, q) = 0.5 * sum_k |p_k - q_k|`` (Widmann et al. 2019, sec. 4);
* squared Euclidean ``||a - b||^2`` (Gaussian / RBF kernels, KiTE's ``exp(-gamma d^2)``);
* L1 ``sum_k |a_k - b_k|`` (Laplacian kernel, scikit-learn ``laplacian_kernel``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray
from scipy.spatial.distance import cdist


class Gram(Protocol):
    """An n x n kernel matrix available block by block."""

    n: int

    def block(self, rows: slice, cols: slice) -> NDArray[np.float64]:
        """``K[rows, cols]`` as a dense array."""
        ...

    def diagonal(self) -> NDArray[np.float64]:
        """``K[i, i]`` for every i."""
        ...


def _as_matrix(features: NDArray[np.float64]) -> NDArray[np.float64]:
    array = np.asarray(features, dtype=np.float64)
    return array[:, None] if array.ndim == 1 else array


def _tv_distance(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    out = cdist(a, b, "cityblock")
    out *= 0.5
    return out


#: Distances by name; scipy's ``cdist`` sums in class order by explicit differences (not
#: ``|a|^2 + |b|^2 - 2ab``), so distances are exact to rounding and exactly symmetric.
_DISTANCES = {"tv": _tv_distance, "l1": functools.partial(cdist, metric="cityblock"),
              "sqeuclidean": functools.partial(cdist, metric="sqeuclidean")}


def pairwise_distance(name: str, a: NDArray[np.float64], b: NDArray[np.float64]
                      ) -> NDArray[np.float64]:
    """Distance ``name`` (``tv``, ``l1`` or ``sqeuclidean``) between the rows of ``a``
    and of ``b`` (1-D inputs are treated as one feature per row)."""
    return _DISTANCES[name](_as_matrix(a), _as_matrix(b))


@dataclass(frozen=True)
class StationaryKernel:
    """``k(a, b) = exp(-gamma * d(a, b))`` for a named distance ``d`` (``k(a, a) = 1``)."""

    gamma: float
    distance: str

    def __post_init__(self) -> None:
        if not (np.isfinite(self.gamma) and self.gamma >= 0):
            raise ValueError(f"kernel gamma must be finite and >= 0; got {self.gamma}")
        if self.distance not in _DISTANCES:
            raise ValueError(f"unknown distance {self.distance!r}")

    def evaluate(self, a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
        """Dense kernel matrix between the rows of ``a`` and of ``b``."""
        d = _DISTANCES[self.distance](_as_matrix(a), _as_matrix(b))
        d *= -self.gamma
        return np.exp(d, out=d)

    def on(self, features: NDArray[np.float64]) -> BoundKernel:
        """Bind to the rows of ``features`` (shape (n,) or (n, d))."""
        return BoundKernel(self, _as_matrix(features))


def gaussian(gamma: float) -> StationaryKernel:
    """``exp(-gamma * ||a - b||^2)`` (scikit-learn ``rbf_kernel``, KiTE)."""
    return StationaryKernel(gamma, "sqeuclidean")


@dataclass(frozen=True)
class BoundKernel:
    """A :class:`StationaryKernel` bound to a feature matrix: a lazy :class:`Gram`."""

    kernel: StationaryKernel
    features: NDArray[np.float64]

    @property
    def n(self) -> int:
        return int(self.features.shape[0])

    def block(self, rows: slice, cols: slice) -> NDArray[np.float64]:
        return self.kernel.evaluate(self.features[rows], self.features[cols])

    def diagonal(self) -> NDArray[np.float64]:
        return np.ones(self.n)


@dataclass(frozen=True)
class ProductGram:
    """Element-wise product ``K_ij = prod_g K^(g)_ij`` (the KLCE's tensor-product kernel,
    Vashistha & Farahi, eq. 4)."""

    factors: tuple[Gram, ...]

    @property
    def n(self) -> int:
        return self.factors[0].n

    def block(self, rows: slice, cols: slice) -> NDArray[np.float64]:
        out = self.factors[0].block(rows, cols)
        for factor in self.factors[1:]:
            out *= factor.block(rows, cols)
        return out

    def diagonal(self) -> NDArray[np.float64]:
        out = self.factors[0].diagonal().copy()
        for factor in self.factors[1:]:
            out *= factor.diagonal()
        return out


def gaussian_fill(out: NDArray, a: NDArray[np.float64], b: NDArray[np.float64]) -> None:
    """``out[i, j] = exp(-sum_k (a[i, k] - b[j, k])^2)`` for ``a`` (n, d) and ``b`` (m, d),
    in double precision (``cdist``), rounded once into ``out`` (may be float32)."""
    if out.size == 0:
        return
    left = np.asarray(a, dtype=np.float64)
    right = np.asarray(b, dtype=np.float64)
    direct = out.dtype == np.float64 and out.flags.c_contiguous
    distances = cdist(left, right, "sqeuclidean", out=out if direct else None)
    np.negative(distances, out=distances)
    np.exp(distances, out=distances)
    if not direct:
        out[...] = distances


def gaussian_block(a: NDArray[np.float64], b: NDArray[np.float64],
                   dtype: type = np.float64) -> NDArray:
    """A new ``(len(a), len(b))`` array ``exp(-|a_i - b_j|^2)`` (:func:`gaussian_fill`)."""
    out = np.empty((a.shape[0], b.shape[0]), dtype=dtype)
    gaussian_fill(out, a, b)
    return out
