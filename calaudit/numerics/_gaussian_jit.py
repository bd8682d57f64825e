"""The compiled loop of :mod:`calaudit.numerics.gaussian_fill` (imports numba: import this
module only when a Gaussian block is filled).

``out[i, j] = exp(-sum_k (a[i, k] - bt[k, j])^2)`` row by row, in column strips of
:data:`STRIP` entries that stay in the L1 cache between the distance and the ``exp``
loops. The ``exp`` is the table method of ARM's optimized-routines ``exp`` (Szabolcs
Nagy; Tang, ACM TOMS 15 (1989)): with ``N = 128``,

    ``x = (k / N) ln 2 + r``,  ``|r| <= ln 2 / (2N)``,  ``k = round(x N / ln 2)``,
    ``exp(x) = 2^(k // N) * 2^((k % N) / N) * exp(r)``,

``2^(j/N) = H_j (1 + T_j)`` with ``H_j`` the double nearest ``2^(j/N)`` and ``T_j`` its
relative rounding error (the tables of :mod:`calaudit.numerics.gaussian_fill`), and
``exp(r) (1 + T_j) - 1 ~ T_j + r + r^2/2 + r^3/6 + r^4/24 + r^5/120`` (Taylor: the
truncation error is below ``2^-60`` relative). The result ``H_j 2^(k // N) (1 + tmp)`` is
rounded once at the end, so the error stays near half an ulp.

* ``k`` is read from the bits of ``x N / ln 2 + 1.5 * 2^52`` (AVX2 has no vector
  double -> int64 conversion): the low bits of that double are ``k`` in two's complement.
* ``r = x - k (ln 2 / N)_hi - k (ln 2 / N)_lo`` (Cody and Waite): ``(ln 2 / N)_hi`` has 21
  trailing zero bits, so ``k (ln 2 / N)_hi`` and the first subtraction are exact for
  ``|k| < 2^21``.
* Every operation is one IEEE double operation in a fixed order (no ``fastmath``: no FMA
  contraction, no reassociation), so the bits are the same on every x86-64 CPU, vector
  width and thread count.
* Distances above :data:`LIMIT` (results below ``1e-304``, near the subnormal range) take
  ``math.exp``; the main loop clamps them so that it never branches.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

#: Columns per strip (two 4 KB float64 buffers: L1 resident).
STRIP = 512
#: Entries of the ``exp`` table (a power of two, :data:`calaudit.numerics.gaussian_fill.N`).
TABLE = 128
#: Squared distances above this go through ``math.exp`` (``exp(-700) ~ 1e-304``).
LIMIT = 700.0
SHIFT = 6755399441055744.0  # 1.5 * 2^52
INV_LN2_N = 128.0 / math.log(2.0)  # 0x1.71547652b82fep7
NEG_LN2_HI_N = float.fromhex("-0x1.62e42fefa0000p-8")  # -(ln 2 / 128), 21 trailing zero bits
NEG_LN2_LO_N = float.fromhex("-0x1.cf79abc9e3b3ap-47")
C3, C4, C5 = 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0


@intrinsic
def _as_int(typingctx, x):
    """The bits of a double as an int64 (an LLVM bitcast, vectorisable)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _as_float(typingctx, x):
    """The double whose bits are the int64 ``x``."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


def _jit(function):
    """``numba.njit`` with an on-disk cache; without one when no cache directory is
    writable (numba then raises at decoration: the package directory and the user cache
    directory are both read-only)."""
    options = {"nogil": True, "error_model": "numpy", "boundscheck": False}
    try:
        return numba.njit(cache=True, **options)(function)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return numba.njit(cache=False, **options)(function)


def _strip(a, bt, out, i, c0, width, buffers, kb, tail, sbits):  # pragma: no cover
    """``out[i, c0:c0 + width]``; ``buffers`` (3, STRIP) and ``kb`` (2, STRIP) are
    scratch rows: the distances, ``r`` and the table's ``T``; ``k`` and ``sbits``."""
    s, rb, tb = buffers[0, :width], buffers[1, :width], buffers[2, :width]
    kk, sb = kb[0, :width], kb[1, :width]
    row = out[i, c0:c0 + width]
    d = a.shape[1]
    if d == 0:
        s[:] = 0.0
    else:
        ak, column = a[i, 0], bt[0, c0:c0 + width]
        for j in range(width):
            t = ak - column[j]
            s[j] = t * t
        for k in range(1, d):
            ak, column = a[i, k], bt[k, c0:c0 + width]
            for j in range(width):
                t = ak - column[j]
                s[j] = s[j] + t * t
    large = 0
    for j in range(width):  # reduction: k, r
        x = -min(s[j], LIMIT)
        z = x * INV_LN2_N + SHIFT
        kd = z - SHIFT
        rb[j] = x + kd * NEG_LN2_HI_N + kd * NEG_LN2_LO_N
        kk[j] = _as_int(z)
        large += not s[j] <= LIMIT
    for j in range(width):  # the table (scalar loads: AVX2's gathers are slower)
        idx = kk[j] & (TABLE - 1)
        tb[j] = tail[idx]
        sb[j] = sbits[idx]
    for j in range(width):  # polynomial and scale
        r = rb[j]
        r2 = r * r
        tmp = tb[j] + r + r2 * (0.5 + r * C3) + r2 * r2 * (C4 + r * C5)
        scale = _as_float(sb[j] + (kk[j] << 45))
        row[j] = scale + scale * tmp
    if large:  # also NaN
        for j in range(width):
            if not s[j] <= LIMIT:
                row[j] = math.exp(-s[j])


_strip_jit = _jit(_strip)


def _fill(a, bt, out, tail, sbits):  # pragma: no cover - compiled
    """``out[i, j] = exp(-sum_k (a[i, k] - bt[k, j])^2)``; ``a`` (n, d), ``bt`` (d, m) and
    ``out`` (n, m) C-contiguous; ``out`` float64 or float32 (cast from the double)."""
    buffers = np.empty((3, STRIP))
    kb = np.empty((2, STRIP), dtype=np.int64)
    m = bt.shape[1]
    for i in range(a.shape[0]):
        for c0 in range(0, m, STRIP):
            _strip_jit(a, bt, out, i, c0, min(STRIP, m - c0), buffers, kb, tail, sbits)


fill = _jit(_fill)
