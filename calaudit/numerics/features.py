"""Random Fourier features: kernel sums in O(n D) instead of O(n^2) (Rahimi & Recht 2007).

A shift-invariant kernel with ``k(0) = 1`` is ``E_w cos(w . (a - b))`` for a law of
frequencies ``w``; with ``D / 2`` draws the map

    ``phi(a) = sqrt(2 / D) [cos(w_1 . a), ..., cos(w_{D/2} . a), sin(w_1 . a), ...]``

gives an unbiased, positive semi-definite feature kernel ``phi(a) . phi(b)`` (standard
error at most ``1 / sqrt(D)``, ``phi(a) . phi(a) = 1``). Frequency laws: Gaussian
``exp(-gamma |a - b|^2)``: ``w ~ N(0, 2 gamma I)``; Laplacian ``exp(-gamma |a - b|_1)``:
``w_k ~ Cauchy(0, gamma)``; exponential-TV: the Laplacian with ``gamma / 2``. Quadratic
sums go through ``A = Phi^T Z``: ``sum_{i,j} phi_i . phi_j <z_i, z_j> = |A|_F^2``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit.scale import ROW_BLOCK

#: Kernel families with a frequency law here (``distance`` names of
#: :class:`calaudit.numerics.kernels.StationaryKernel`).
FREQUENCY_LAWS = {"sqeuclidean": "normal", "l1": "cauchy", "tv": "cauchy"}

#: Entries (float64) of one chunk of features plus columns: about 64 MB.
CHUNK_ENTRIES = 8_000_000

#: Feature-count rule (:func:`default_n_features`).
MIN_FEATURES = 256
MAX_FEATURES = 2048
#: Floating-point operations allowed for the resampled GEMMs ``Phi^T Z*`` of one test
#: (about 1.5 s at 65 GFLOP/s, the two-core benchmark machine's float64 GEMM rate).
FEATURE_FLOP_BUDGET = 1e11


def default_n_features(n: int, columns: int) -> int:
    """The rule for ``D``: the largest multiple of 64 with ``2 n D columns <=
    FEATURE_FLOP_BUDGET`` (``columns`` = classes x resamples), clipped to
    ``[MIN_FEATURES, MAX_FEATURES]``."""
    raw = FEATURE_FLOP_BUDGET / (2.0 * max(n, 1) * max(columns, 1))
    return int(min(MAX_FEATURES, max(MIN_FEATURES, 64 * math.floor(raw / 64))))


@dataclass(frozen=True)
class FourierFeatures:
    """``D`` random Fourier features on ``dim`` coordinates: ``frequencies`` (dim, D / 2)
    drawn from ``seed`` (``None``: a caller's generator)."""

    kernel: str
    gamma: float
    frequencies: NDArray[np.float64]
    seed: int | None = None
    #: Precision of the cosines and sines (:data:`FEATURE_DTYPE`); angles are float64.
    dtype: type = np.float32

    @property
    def n_features(self) -> int:
        return 2 * int(self.frequencies.shape[1])

    @classmethod
    def draw(cls, distance: str, gamma: float, dim: int, n_features: int,
             rng: np.random.Generator | int, dtype: type = np.float32) -> FourierFeatures:
        """Frequencies of the kernel ``exp(-gamma d(a, b))`` for the distance ``d``
        (``sqeuclidean``, ``l1`` or ``tv``); ``n_features`` is rounded up to even."""
        if distance not in FREQUENCY_LAWS:
            raise ValueError(f"no frequency law for distance {distance!r}")
        seed = int(rng) if isinstance(rng, (int, np.integer)) else None
        gen = np.random.default_rng(seed) if seed is not None else rng
        half = max(1, (int(n_features) + 1) // 2)
        if distance == "sqeuclidean":
            w = gen.normal(0.0, math.sqrt(2.0 * gamma), size=(dim, half))
        else:
            scale = gamma / 2.0 if distance == "tv" else gamma
            w = scale * gen.standard_cauchy(size=(dim, half))
        return cls(distance, float(gamma), w, seed, dtype)

    def transform(self, x: NDArray[np.float64]) -> NDArray:
        """``Phi`` (rows, D) of the rows of ``x`` in :attr:`dtype` (angles in float64,
        rounded once before the cosines and sines); the statistics use the norms of the
        rounded map, so they are the U-statistics of the kernel as computed."""
        return self._map(x, 1.0, None)

    def _map(self, x: NDArray[np.float64], factor: float, dtype: type | None) -> NDArray:
        """``cos``/``sin`` of the angles times ``factor / sqrt(D / 2)`` in ``dtype``."""
        x = np.asarray(x, dtype=np.float64)
        x = x[:, None] if x.ndim == 1 else x
        if x.shape[1] <= 4:  # a BLAS call with an inner dimension this small is slow
            wide = x[:, :1] * self.frequencies[0]
            for k in range(1, x.shape[1]):
                wide += x[:, k:k + 1] * self.frequencies[k]
        else:
            wide = x @ self.frequencies
        dtype = dtype or self.dtype
        angles = wide.astype(dtype, copy=False)
        half = angles.shape[1]
        out = np.empty((x.shape[0], 2 * half), dtype=dtype)
        np.cos(angles, out=out[:, :half])
        np.sin(angles, out=out[:, half:])
        out *= dtype(math.sqrt(1.0 / half)) * dtype(factor)
        return out

    @property
    def grid(self) -> int:
        """Exponent ``s`` of the grid ``2^-s`` of the quantised map (:meth:`quantised`):
        the largest with ``EXACT_WEIGHT * max|phi| * 2^s <= 2^24``."""
        return grid_exponent(math.sqrt(1.0 / self.frequencies.shape[1]) * (1 + 1e-6))

    def quantised(self, x: NDArray[np.float64]) -> NDArray[np.float32]:
        """The map rounded to multiples of ``2^-s`` (:attr:`grid`), float32 integers of at
        most 11 bits times ``2^-s`` (sums of :data:`EXACT_WEIGHT` entries exact); an entry
        moves by at most ``2^-(s+1)``."""
        # (cos * c) * 2^s in float32 equals cos * (c * 2^s) (a power of two), so the map
        # is scaled, rounded to integers and scaled back in place
        scale = 2.0 ** self.grid
        out = self._map(x, scale, np.float32)
        np.rint(out, out=out)
        out *= np.float32(1.0 / scale)
        return out

    def kernel_matrix(self, a: NDArray[np.float64], b: NDArray[np.float64]
                      ) -> NDArray[np.float64]:
        """The feature kernel ``phi(a_i) . phi(b_j)`` (dense; small inputs, tests)."""
        return self.transform(a).astype(np.float64) @ self.transform(b).astype(np.float64).T


#: Largest column total (sum of 0/1 labels or counts over a block's rows) for which the
#: single-precision products of grid values are exact (two row blocks' worth).
EXACT_WEIGHT = 2 * ROW_BLOCK
#: Bits added by each part of :func:`exact_parts`.
PART_BITS = 12


def grid_exponent(bound: float, weight: int = EXACT_WEIGHT) -> int:
    """Largest ``e`` with ``weight * bound * 2^e <= 2^24``: a float32 sum of ``weight``
    values ``|v| <= bound`` on the grid ``2^-e`` (times 0/1 or counts) never rounds."""
    return int(math.floor(math.log2(2.0**24 / (weight * max(bound, 1e-300)))))


def to_grid(values: NDArray, exponent: int) -> NDArray[np.float32]:
    """``values`` rounded to the nearest multiple of ``2^-exponent``, in float32."""
    scale = 2.0 ** exponent
    return (np.rint(np.asarray(values, dtype=np.float64) * scale) / scale).astype(np.float32)


def exact_parts(values: NDArray[np.float64], bound: float, parts: int = 4,
                weight: int = EXACT_WEIGHT) -> NDArray[np.float32]:
    """(parts, rows) float32 values summing to ``values`` (``|values| <= bound``) within
    ``2^-(e + 12 (parts - 1) + 1)``: part ``k`` on the fixed grid ``2^-(e + 12 k)`` (``e =
    grid_exponent(bound)``), so its sums over any rows are exact."""
    exponent = grid_exponent(bound, weight)
    rest = np.asarray(values, dtype=np.float64)
    if rest.size and float(np.max(np.abs(rest))) > bound:
        raise ValueError(f"values exceed their bound {bound}")
    out = np.empty((parts, rest.shape[0]), dtype=np.float32)
    for k in range(parts):
        out[k] = to_grid(rest, exponent + PART_BITS * k)
        rest = rest - out[k]
    return out


def exact_products(left: NDArray[np.float32], right: NDArray[np.float32],
                   column_total: float, weight: int = EXACT_WEIGHT) -> NDArray[np.float64]:
    """``left^T right`` (float64) for grid values ``left`` (:func:`to_grid` with ``weight``)
    and non-negative integers ``right`` with column sums at most ``column_total``: an
    exact float32 GEMM when ``column_total <= weight``, else an exact float64 one."""
    if column_total > weight:
        return left.astype(np.float64).T @ right.astype(np.float64)
    return (left.T @ right).astype(np.float64)


def row_chunks(n: int, width: int, entries: int = CHUNK_ENTRIES) -> Iterator[tuple[int, int]]:
    """``[start, stop)`` row ranges of about ``entries / width`` rows."""
    step = max(64, entries // max(width, 1))
    for start in range(0, n, step):
        yield start, min(n, start + step)


#: ``fill(start, stop, out)`` writes the columns of rows ``[start, stop)`` into ``out``
#: (shape (stop - start, q)); chunks are visited in row order.
Fill = Callable[[int, int, NDArray[np.float64]], None]


def feature_products(features: FourierFeatures, x: NDArray[np.float64], fill: Fill,
                     width: int, entries: int = CHUNK_ENTRIES
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``A = Phi^T Z`` (D, width) and ``sum_i |phi_i|^2 Z_ic^2``, ``Z`` (n, width) made
    chunk by chunk (``entries`` values) by ``fill``."""
    n = x.shape[0]
    products = np.zeros((features.n_features, width))
    squares = np.zeros(width)
    for start, stop in row_chunks(n, features.n_features + width, entries):
        phi = features.transform(x[start:stop]).astype(np.float64)
        norm = np.einsum("ij,ij->i", phi, phi)
        z = np.empty((stop - start, width))
        fill(start, stop, z)
        products += phi.T @ z
        squares += norm @ (z * z)
    return products, squares


def u_statistic_sums(products: NDArray[np.float64], squares: NDArray[np.float64],
                     classes: int = 1) -> NDArray[np.float64]:
    """``sum_{i != j} phi_i . phi_j <z_i, z_j> = |Phi^T z|^2 - sum_i |phi_i|^2 |z_i|^2`` per
    resample; columns class-major (``c = k * q + b``), summed over classes."""
    total = np.einsum("dc,dc->c", products, products) - squares
    return total.reshape(classes, -1).sum(axis=0)
