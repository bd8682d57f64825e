"""Exact quantiles as reductions over fixed row ranges: radix selection on float keys.

``np.quantile(x, q)`` (linear interpolation, Hyndman & Fan 1996 type 7) needs the order
statistics ``x_(j)`` and ``x_(j+1)`` around the virtual index ``v = (n - 1) q``, and
returns ``x_(j) + (x_(j+1) - x_(j)) g`` with ``g = v - j`` (``x_(j+1) - (x_(j+1) - x_(j))
(1 - g)`` when ``g >= 0.5``). A sort needs every row in one place; this module finds the
same order statistics with a few passes over the rows, each pass a reduction of
:mod:`calaudit.numerics.row_blocks` (``executor.map_sum`` over ``task_ranges(n)``):

* every float64 is mapped to a 64-bit key with the same order (:func:`float_keys`: the
  IEEE bits with the sign bit set for ``x >= 0``, all bits flipped for ``x < 0``);
* each pass counts, for each wanted rank, the rows whose key agrees with the rank's known
  leading bits, by their next ``b`` bits (a histogram of ``2^b`` counts per distinct
  prefix; the partial's counts add up across ranges exactly). ``b`` is at most 16 and
  keeps the histograms within :data:`MAX_COUNTS` entries (8 MiB of int32 per task), so
  many wanted ranks (thousands of quantile bins) mean narrower digits and more passes,
  never larger partials;
* the cumulative counts give the next ``b`` bits of the wanted key and the rank within
  it; once 64 bits are known (four passes for up to 32 distinct prefixes) the key, hence
  the order statistic, is known exactly.

The interpolation then repeats numpy's arithmetic operation for operation, so
:func:`quantiles` returns the bytes of ``np.quantile`` (tested), whatever the executor and
whatever the ranges. Memory per task is the range's keys and the histograms (at most
8 MiB). ``-0.0`` counts as ``0.0`` (numpy leaves the sign of a tied zero to its partition
order); a column with a NaN gives NaN for every rank, as ``np.quantile``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.numerics.row_blocks import SerialExecutor, task_ranges
from calaudit.numerics.row_sources import ArrayRows, resident

#: Bits of the key resolved per pass, at most (four passes for 64 bits).
DIGIT_BITS = 16
#: Histogram entries per partial, at most (prefixes x 2^bits).
MAX_COUNTS = 1 << 21
_SIGN = np.uint64(1 << 63)


def float_keys(values: NDArray[np.float64]) -> NDArray[np.uint64]:
    """Order-preserving unsigned keys of float64 values (``-0.0`` as ``0.0``; no NaN)."""
    bits = (np.asarray(values, dtype=np.float64) + 0.0).view(np.uint64)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def key_values(keys: NDArray[np.uint64]) -> NDArray[np.float64]:
    """The inverse of :func:`float_keys`."""
    keys = np.asarray(keys, dtype=np.uint64)
    return np.where(keys & _SIGN, keys & ~_SIGN, ~keys).view(np.float64)


def digit_bits(known: int, prefixes: int) -> int:
    """Bits resolved by the next pass: at most ``DIGIT_BITS``, the bits left, and
    ``prefixes x 2^bits <= MAX_COUNTS`` (at least one bit)."""
    fit = max(1, (MAX_COUNTS // max(prefixes, 1)).bit_length() - 1)
    return min(DIGIT_BITS, 64 - known, fit)


def digit_partial(start: int, stop: int, *, rows: Any, column: str,
                  prefixes: NDArray[np.uint64], known: int, bits: int) -> dict[str, NDArray]:
    """Rows ``[start, stop)``: for each prefix (the ``known`` leading key bits of a wanted
    rank, sorted), the counts of the rows sharing it by their next ``bits`` bits:
    ``counts`` (prefixes, 2^bits), int32; on the first pass also the number of NaNs."""
    values = rows.read(start, stop, (column,))[column]
    keys = float_keys(values)
    extra = {} if known else {"nan": np.array([np.count_nonzero(np.isnan(values))])}
    if known:
        high = keys >> np.uint64(64 - known)
        slot = np.minimum(np.searchsorted(prefixes, high), prefixes.size - 1)
        match = prefixes[slot] == high
        keys, slot = keys[match], slot[match]
    else:
        slot = np.zeros(keys.size, dtype=np.intp)
    digits = 1 << bits
    digit = (keys >> np.uint64(64 - known - bits)) & np.uint64(digits - 1)
    flat = slot.astype(np.int64) * digits + digit.astype(np.int64)
    counts = np.bincount(flat, minlength=prefixes.size * digits).astype(np.int32)
    return {"counts": counts.reshape(prefixes.size, digits), **extra}


def order_statistics(source: Any, column: str, ranks: Sequence[int], *,
                     executor: Any = None, task_rows: int | None = None
                     ) -> NDArray[np.float64]:
    """``x_(r)`` (0-based, ascending) of ``source``'s ``column`` for every rank ``r``,
    by counting reductions (see the module docstring)."""
    executor = executor or SerialExecutor()
    n = int(source.n)
    ranks = np.asarray(ranks, dtype=np.int64)
    if n == 0 or ranks.size == 0 or ranks.min() < 0 or ranks.max() >= n:
        raise ValueError(f"ranks {ranks.tolist()} are not within 0 .. {n - 1}")
    ranges = task_ranges(n) if task_rows is None else task_ranges(n, task_rows)
    prefix = np.zeros(ranks.size, dtype=np.uint64)
    within = ranks.copy()
    known = 0
    with resident(executor, source) as rows:
        while known < 64:
            prefixes = np.unique(prefix)
            bits = digit_bits(known, prefixes.size)
            out = executor.map_sum(digit_partial, ranges, {
                "rows": rows, "column": column, "prefixes": prefixes, "known": known,
                "bits": bits})
            if known == 0 and out["nan"][0]:  # np.quantile: NaN for every q
                return np.full(ranks.size, np.nan)
            counts = out["counts"]
            cumulative = np.cumsum(counts, axis=1)  # exact: float64 counts below 2^53
            for i, slot in enumerate(np.searchsorted(prefixes, prefix)):
                digit = int(np.searchsorted(cumulative[slot], within[i], side="right"))
                within[i] -= int(cumulative[slot, digit - 1]) if digit else 0
                prefix[i] = (prefix[i] << np.uint64(bits)) | np.uint64(digit)
            known += bits
    return key_values(prefix)


def quantiles(source: Any, column: str, q: Sequence[float] | NDArray[np.float64], *,
              executor: Any = None, task_rows: int | None = None) -> NDArray[np.float64]:
    """``np.quantile(x, q)`` (method ``linear``) of ``source``'s ``column`` ``x``, the
    same bytes, from :func:`order_statistics`."""
    n = int(source.n)
    q = np.asarray(q, dtype=np.float64)
    virtual = (n - 1) * q  # numpy: method "linear", get_virtual_index
    previous = np.floor(virtual)
    following = previous + 1
    above, below = virtual >= n - 1, virtual < 0
    previous[above] = following[above] = -1
    previous[below] = following[below] = 0
    gamma = virtual - previous  # numpy takes it after the bounds are applied
    low = np.where(previous < 0, n - 1, previous).astype(np.int64)
    high = np.where(following < 0, n - 1, following).astype(np.int64)
    wanted = np.unique(np.concatenate([low, high]))
    values = order_statistics(source, column, wanted, executor=executor, task_rows=task_rows)
    a = values[np.searchsorted(wanted, low)]
    b = values[np.searchsorted(wanted, high)]
    diff = b - a  # numpy's _lerp
    out = a + diff * gamma
    np.subtract(b, diff * (1 - gamma), out=out, where=gamma >= 0.5)
    return out


def array_quantiles(values: NDArray[np.float64], q: Sequence[float] | NDArray[np.float64], *,
                    executor: Any = None) -> NDArray[np.float64]:
    """:func:`quantiles` of an in-memory array (an :class:`ArrayRows` source)."""
    return quantiles(ArrayRows({"x": np.asarray(values, dtype=np.float64)}), "x", q,
                     executor=executor)
