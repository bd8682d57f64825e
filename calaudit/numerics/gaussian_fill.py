"""One fused pass for a Gaussian kernel block: ``out[i, j] = exp(-|a_i - b_j|^2)``.

The exact local test spends nearly all its time filling kernel blocks (``n^2 / 2`` entries
per pass). With ``scipy.spatial.distance.cdist`` and ``numpy.exp`` that costs about 7 ns
per entry on an AVX2 CPU, 5 of them in the double-precision ``exp``: numpy vectorises it
only with AVX-512 and otherwise calls the C library's scalar ``exp`` per entry. The
compiled loop of :mod:`calaudit.numerics._gaussian_jit` computes the squared distances
(summed over the columns in order, the same bits as ``cdist(a, b, "sqeuclidean")``) and a
vectorised table-driven ``exp`` in one pass over a cache-resident strip; its error is
about half an ulp, so it differs from the C library's ``exp`` by at most one ulp (tests
check both against an extended-precision reference).

No ``fastmath``: the bits are the same on every x86-64 CPU, at every thread count and
for every split of a block into row or column chunks. numba is imported on the first
call only (a run without a Gaussian product kernel never loads it), and the compiled
code is cached on disk (the package's ``__pycache__``, else numba's user cache
directory, else compiled in memory once per process).
"""

from __future__ import annotations

import functools
import struct
from decimal import Decimal, localcontext

import numpy as np
from numpy.typing import NDArray

#: Table size of the ``exp``: ``2^(j/N)`` for ``j < N``.
N = 128


@functools.cache
def tables() -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """``T_j`` and ``sbits_j = bits(H_j) - j 2^45`` for ``2^(j/N) = H_j (1 + T_j)``,
    ``H_j`` the double nearest ``2^(j/N)`` (from 60-digit decimal powers; the tests check
    every ``H_j`` exactly by rational powers and every ``T_j`` against mpmath)."""
    tail, sbits = np.empty(N), np.empty(N, dtype=np.int64)
    with localcontext() as context:
        context.prec = 60
        for j in range(N):
            value = Decimal(2) ** (Decimal(j) / N)
            nearest = float(value)  # correctly rounded conversion
            tail[j] = float((value - Decimal(nearest)) / Decimal(nearest))
            bits = struct.unpack("<q", struct.pack("<d", nearest))[0]
            sbits[j] = bits - (j << 45)
    return tail, sbits


def gaussian_fill(out: NDArray, a: NDArray[np.float64], b: NDArray[np.float64]) -> None:
    """``out[i, j] = exp(-sum_k (a[i, k] - b[j, k])^2)`` for ``a`` (n, d) and ``b``
    (m, d); ``out`` (n, m) float64, or float32 (the double result rounded once). Any
    strides; releases the GIL."""
    from calaudit.numerics._gaussian_jit import fill

    if out.size == 0:
        return
    left = np.ascontiguousarray(a, dtype=np.float64)
    right = np.ascontiguousarray(np.asarray(b, dtype=np.float64).T)
    target = out if out.flags.c_contiguous else np.empty(out.shape, out.dtype)
    fill(left, right, target, *tables())
    if target is not out:
        out[...] = target


def gaussian_block(a: NDArray[np.float64], b: NDArray[np.float64],
                   dtype: type = np.float64) -> NDArray:
    """A new ``(len(a), len(b))`` array ``exp(-|a_i - b_j|^2)`` (:func:`gaussian_fill`)."""
    out = np.empty((a.shape[0], b.shape[0]), dtype=dtype)
    gaussian_fill(out, a, b)
    return out
