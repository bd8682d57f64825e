"""Exact order statistics and quantiles of the columns of a row source, by reductions.

The ``k``-th smallest value of a float64 column is found without holding the column, by
radix selection over row ranges of :data:`RANGE_ROWS` rows:

* **Keys.** Each value's bits map to a uint64 *key* that orders as the values do
  (negative numbers: every bit flipped; the others: the sign bit set), so ``-inf`` is the
  smallest key and ``+inf`` the largest; ``-0.0``, which numpy compares equal to ``+0.0``,
  gets the key just below it (NaN never reaches here: the loader refuses it).
* **Counting passes.** Every wanted rank knows the top ``b`` bits of its key (its
  *prefix*; at first none) and its rank among the rows that share them. One reduction
  (:func:`count_partial`, integer counts: :func:`calaudit.scale.map_exact_sum`, the same
  bytes in any order of addition) counts, for every distinct prefix still open (every
  column's and every rank's at once), the rows with each value of the next bits
  (:data:`FIRST_BITS` in the first pass, :data:`DIGIT_BITS` in the later ones), and those
  of them whose remaining bits are all 0; the cumulative counts give each rank its next
  digit. A rank is settled when its digit's rows all have 0s to follow (whole numbers and
  other short binary fractions: one or two passes) or after 5 passes (then the prefix is
  the key).
* **Gathering pass.** As soon as every open prefix holds at most :data:`GATHER_ROWS`
  rows, one reduction (:func:`gather_partial`, ``map_combine``) brings their keys here,
  sorted, and each rank reads its own: continuous data ends after one or two counting
  passes and this one; ties end by counting.

A counting pass's partial is ``prefixes x 2 x 2^bits`` counts: 1 MiB for each column in
the first pass (one prefix per column), 64 KiB per open prefix (at most two per wanted
quantile) in the later ones. :func:`quantiles_of_rows` puts numpy's ``'linear'`` quantile
(Hyndman & Fan type 7) on top: the virtual index ``(n - 1) q``, its two neighbouring order
statistics and numpy's own interpolation (``a + (b - a) t``, or ``b - (b - a)(1 - t)`` when
``t >= 0.5``), so the result is ``np.quantile(x, q)``'s bytes (a zero between ``-0.0`` and
``+0.0`` rows is taken in this order, where numpy's partition leaves their order open).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calaudit import scale

#: Bits of a key counted by the first pass, and by each later one (16 + 4 x 12 = 64).
FIRST_BITS, DIGIT_BITS = 16, 12
#: Rows of an open prefix whose keys are gathered instead of counted further.
GATHER_ROWS = 1 << 16
#: Rows per range of a pass: counts and gathered keys do not depend on how the rows are
#: cut, so a pass takes fewer, larger ranges than :data:`calaudit.scale.TASK_ROWS` (each
#: task costs the client the same whatever its rows).
RANGE_ROWS = 8 * scale.TASK_ROWS
_SIGN = np.uint64(1 << 63)


def digit_bits(known: int) -> int:
    """Bits counted by the pass after the top ``known`` bits are known."""
    return FIRST_BITS if known == 0 else DIGIT_BITS


def keys_of(values: ArrayLike) -> NDArray[np.uint64]:
    """The order-preserving uint64 keys of float64 ``values`` (module docstring)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def values_of(keys: ArrayLike) -> NDArray[np.float64]:
    """The float64 values of uint64 ``keys`` (the inverse of :func:`keys_of`)."""
    keys = np.asarray(keys, dtype=np.uint64)
    return np.where(keys & _SIGN, keys & ~_SIGN, ~keys).view(np.float64)


def _matching(keys: NDArray[np.uint64], known: int, prefix: int) -> NDArray[np.uint64]:
    """The keys whose top ``known`` bits are ``prefix``."""
    if known == 0:
        return keys
    return keys[(keys >> np.uint64(64 - known)) == np.uint64(prefix)]


def _range_keys(rows: Any, start: int, stop: int, columns: Sequence[str]
                ) -> list[NDArray[np.uint64]]:
    read = rows.read(start, stop, list(columns))
    return [keys_of(read[name]) for name in columns]


def count_partial(start: int, stop: int, *, rows: Any, columns: tuple[str, ...],
                  open_prefixes: tuple[tuple[int, int, int], ...]) -> dict[str, NDArray]:
    """``counts`` (prefixes x 2 x ``2^digit_bits(known)``, int64; every open prefix of a
    pass knows as many bits): for each open prefix ``(column index, known bits,
    prefix)``, the rows ``[start, stop)`` of that column whose key starts with it by the
    value of their next :func:`digit_bits` bits, then
    those of them whose remaining bits are all 0 (when they are all of them, the digit's
    rows share one key)."""
    keys = _range_keys(rows, start, stop, columns)
    size = 1 << digit_bits(open_prefixes[0][1])
    counts = np.zeros((len(open_prefixes), 2, size), np.int64)
    for c, (column, known, prefix) in enumerate(open_prefixes):
        chosen = _matching(keys[column], known, prefix)
        rest = np.uint64(64 - known - digit_bits(known))
        digits = ((chosen >> rest) & np.uint64(size - 1)).astype(np.intp)
        counts[c, 0] = np.bincount(digits, minlength=size)
        if rest:
            tail = chosen & ((np.uint64(1) << rest) - np.uint64(1))
            counts[c, 1] = np.bincount(digits[tail == 0], minlength=size)
    return {"counts": counts}


def gather_partial(start: int, stop: int, *, rows: Any, columns: tuple[str, ...],
                   open_prefixes: tuple[tuple[int, int, int], ...]
                   ) -> list[NDArray[np.uint64]]:
    """The keys of the rows ``[start, stop)`` under each open prefix (as
    :func:`count_partial`), one array per prefix."""
    keys = _range_keys(rows, start, stop, columns)
    return [_matching(keys[column], known, prefix)
            for column, known, prefix in open_prefixes]


def _gathered(parts: Iterator[list[NDArray[np.uint64]]]) -> list[NDArray[np.uint64]]:
    """Each open prefix's keys over every range, sorted (the order of arrival is lost)."""
    pieces: list[list[NDArray[np.uint64]]] | None = None
    for part in parts:
        if pieces is None:
            pieces = [[] for _ in part]
        for held, keys in zip(pieces, part, strict=True):
            held.append(keys)
    return [np.sort(np.concatenate(held)) for held in pieces or []]


def order_statistics(rows: Any, ranks: Mapping[str, ArrayLike],
                     costs: list[dict[str, Any]] | None = None) -> dict[str, NDArray]:
    """The exact ``ranks``-th smallest values (0-based) of each float64 column of the row
    source ``rows`` (``rows.n`` rows, ``rows.read(start, stop, names)``), by the
    reductions of the module docstring, on the executor in force. ``costs``: a list each
    pass appends ``{"pass": "count" | "gather", "open": prefixes, "partial_bytes": ...}``
    to."""
    n, columns = int(rows.n), tuple(ranks)
    wanted = {name: np.asarray(ranks[name], dtype=np.int64).reshape(-1) for name in columns}
    for name, r in wanted.items():
        if r.size and (n == 0 or r.min() < 0 or r.max() >= n):
            raise ValueError(f"ranks of {name!r} must lie in [0, {n}); got "
                             f"{r.min()}..{r.max()}")
    # per wanted rank: [column index, known bits, prefix, rank among them, rows among them]
    state = [[c, 0, 0, int(k), n] for c, name in enumerate(columns) for k in wanted[name]]
    keys: list[int | None] = [None] * len(state)
    ranges = scale.task_ranges(n, RANGE_ROWS)
    while any(key is None for key in keys):
        open_ranks = [i for i, key in enumerate(keys) if key is None]
        prefixes = tuple(sorted({tuple(state[i][:3]) for i in open_ranks}))
        index = {prefix: j for j, prefix in enumerate(prefixes)}
        shared = {"rows": rows, "columns": columns, "open_prefixes": prefixes}
        if all(state[i][4] <= GATHER_ROWS for i in open_ranks):
            held = scale.map_combine(gather_partial, ranges, shared, _gathered)
            sizes = {tuple(state[i][:3]): state[i][4] for i in open_ranks}
            _note(costs, "gather", prefixes, 8 * sum(sizes.values()))
            for i in open_ranks:
                keys[i] = int(held[index[tuple(state[i][:3])]][state[i][3]])
            continue
        counts = scale.map_exact_sum(count_partial, ranges, shared)["counts"]
        _note(costs, "count", prefixes, counts.size * 8)
        for i in open_ranks:
            column, known, prefix, within, _ = state[i]
            both = counts[index[(column, known, prefix)]].astype(np.int64)
            cumulative = np.cumsum(both[0])
            digit = int(np.searchsorted(cumulative, within, side="right"))
            below = int(cumulative[digit - 1]) if digit else 0
            bits = digit_bits(known)
            known += bits
            prefix = (prefix << bits) | digit
            state[i] = [column, known, prefix, within - below, int(both[0, digit])]
            if known == 64 or both[1, digit] == both[0, digit]:  # one key: 0s to follow
                keys[i] = prefix << (64 - known)
    out, at = {}, 0
    for name in columns:
        size = wanted[name].size
        out[name] = values_of(np.array(keys[at:at + size], dtype=np.uint64))
        at += size
    return out


def _note(costs: list[dict[str, Any]] | None, kind: str, prefixes: tuple, size: int) -> None:
    if costs is not None:
        costs.append({"pass": kind, "open": len(prefixes), "partial_bytes": int(size)})


def quantile_positions(n: int, q: ArrayLike) -> tuple[NDArray[np.intp], NDArray[np.intp],
                                                        NDArray[np.float64]]:
    """numpy's ``'linear'`` quantile positions of ``n`` sorted values: the ranks below and
    above the virtual index ``(n - 1) q`` (both the last at or past it, both the first
    below 0) and the weight ``t`` (numpy's ``_get_indexes`` and ``_get_gamma``)."""
    virtual = np.asanyarray((n - 1) * np.asanyarray(q, dtype=np.float64))
    previous = np.floor(np.atleast_1d(virtual))
    following = previous + 1
    previous[np.atleast_1d(virtual >= n - 1)] = -1
    following[np.atleast_1d(virtual >= n - 1)] = -1
    previous[np.atleast_1d(virtual < 0)] = 0
    following[np.atleast_1d(virtual < 0)] = 0
    previous, following = previous.astype(np.intp), following.astype(np.intp)
    gamma = np.asanyarray(np.atleast_1d(virtual) - previous, dtype=np.float64)
    return previous, following, gamma


def interpolate(a: NDArray[np.float64], b: NDArray[np.float64], t: NDArray[np.float64]
                ) -> NDArray[np.float64]:
    """numpy's ``_lerp``: ``a + (b - a) t``, and ``b - (b - a)(1 - t)`` where ``t >= 0.5``."""
    with np.errstate(invalid="ignore", over="ignore"):
        diff = b - a
        out = np.add(a, diff * t)
        np.subtract(b, diff * (1 - t), out=out, where=t >= 0.5)
    return out


def column_quantiles(rows: Any, wanted: Mapping[str, ArrayLike],
                     costs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``np.quantile(x, q)`` (method ``'linear'``) of each column ``x`` of ``wanted``
    (``{name: q}``) of the row source ``rows``, bit for bit, from one set of
    :func:`order_statistics` passes for every column (``costs``: as there)."""
    n = int(rows.n)
    if n == 0:
        raise ValueError("the quantiles of no rows are undefined")
    positions = {name: quantile_positions(n, q) for name, q in wanted.items()}
    ranks = {name: np.unique(np.concatenate([prev % n, nxt % n]))
             for name, (prev, nxt, _) in positions.items()}
    found = order_statistics(rows, ranks, costs)
    out: dict[str, Any] = {}
    for name, (prev, nxt, gamma) in positions.items():
        at = ranks[name]
        value = interpolate(found[name][np.searchsorted(at, prev % n)],
                            found[name][np.searchsorted(at, nxt % n)], gamma)
        out[name] = value.reshape(np.shape(wanted[name]))
        if np.ndim(wanted[name]) == 0:
            out[name] = out[name][()]
    return out


def quantiles_of_rows(rows: Any, column: str, q: ArrayLike,
                      costs: list[dict[str, Any]] | None = None) -> Any:
    """``np.quantile(x, q)`` of the column ``column`` of the row source ``rows``, bit for
    bit (:func:`column_quantiles`)."""
    return column_quantiles(rows, {column: q}, costs)[column]


__all__ = ["DIGIT_BITS", "FIRST_BITS", "GATHER_ROWS", "RANGE_ROWS", "column_quantiles",
           "count_partial", "digit_bits", "gather_partial", "interpolate", "keys_of",
           "order_statistics", "quantile_positions", "quantiles_of_rows", "values_of"]
