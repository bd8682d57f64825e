"""Fixed row blocks: random streams keyed by global row position, and ordered reductions.

Two rules make a result independent of how the rows are chunked or distributed:

* **Draws.** Every per-row random draw of the rows ``[b ROW_BLOCK, (b + 1) ROW_BLOCK)``
  comes from :func:`block_rng` ``(seed, name, b)``, keyed by the run's seed, the stream's
  name and the *global* block index, so whoever holds those rows can make them, in any
  order.
* **Reductions.** A sum over rows is ``partial(start, stop, **shared) -> dict[str,
  ndarray]`` over the fixed ranges of :func:`task_ranges` (a function of ``n`` only), the
  partials added **in range order** (a left fold, :func:`fold`). ``partial`` must be a
  module-level (picklable), thread-safe function and ``shared`` a dict of values it reads,
  never writes. Row maps (:func:`stack_rows`) and block pairs follow the same rule.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Sequence

import numpy as np
from numpy.typing import NDArray

#: Rows per random-stream block (a constant; never derived from partitions, workers or
#: chunk sizes). A power of two, so a uniform row index within a full block is 12 random
#: bits.
ROW_BLOCK = 4096
#: Rows per reduction task: a fixed multiple of :data:`ROW_BLOCK`.
TASK_ROWS = 16 * ROW_BLOCK

#: ``partial(start, stop, **shared)``: the named partial sums of the rows ``[start, stop)``;
#: the arrays' shapes do not depend on ``start`` and ``stop``.
Partial = Callable[..., dict[str, NDArray]]


def task_ranges(n: int, rows: int = TASK_ROWS) -> list[tuple[int, int]]:
    """The fixed ``[start, stop)`` ranges of the reduction tasks over ``n`` rows (``rows``
    per task, the last one shorter). Partials that draw from block streams need ``rows``
    to be a multiple of :data:`ROW_BLOCK`."""
    if rows <= 0:
        raise ValueError(f"task rows must be positive; got {rows}")
    return [(start, min(n, start + rows)) for start in range(0, n, rows)]


def blocks(start: int, stop: int) -> Iterator[tuple[int, int, int]]:
    """``(block index, block start, block stop)`` of the rows ``[start, stop)``; ``start``
    must be a block boundary."""
    if start % ROW_BLOCK:
        raise ValueError(f"range start {start} is not a multiple of ROW_BLOCK = {ROW_BLOCK}")
    for lo in range(start, stop, ROW_BLOCK):
        yield lo // ROW_BLOCK, lo, min(stop, lo + ROW_BLOCK)


def n_blocks(n: int) -> int:
    """Number of row blocks of ``n`` rows."""
    return -(-int(n) // ROW_BLOCK)


def stream_key(name: str) -> int:
    """The 32-bit key of a stream name (CRC-32 of its UTF-8 bytes)."""
    return zlib.crc32(name.encode("utf-8"))


def block_rng(seed: int, name: str, block: int) -> np.random.Generator:
    """The generator of stream ``name``'s draws for row block ``block`` (PCG64 seeded by
    ``SeedSequence((seed, crc32(name), block))``; ``seed`` a non-negative integer)."""
    key = np.random.SeedSequence((int(seed), stream_key(name), int(block)))
    return np.random.Generator(np.random.PCG64(key))


def stream_seed(rng: np.random.Generator) -> int:
    """A non-negative integer seed for block streams, drawn from a stage generator (so the
    block streams follow the run's one seed)."""
    return int(rng.integers(0, 2**62))


def fold(partials) -> dict[str, NDArray]:
    """Left fold ``((p_0 + p_1) + p_2) + ...`` of the partial dicts, in the given order
    (float64 accumulation: arrays are added to a float64 copy of the first). Every partial
    has the same keys and shapes (they never depend on the range); a difference is a bug
    in the partial and raises ``ValueError``."""
    total: dict[str, NDArray] | None = None
    for index, part in enumerate(partials):
        if total is None:
            total = {k: np.array(v, dtype=np.result_type(v, np.float64)) for k, v in part.items()}
            continue
        if part.keys() != total.keys():
            raise ValueError(f"partial {index} has keys {sorted(part)}, "
                             f"the first had {sorted(total)}")
        for k, v in part.items():
            v = np.asarray(v)
            if v.shape != total[k].shape:
                raise ValueError(f"partial {index}: {k!r} has shape {v.shape}, "
                                 f"the first had {total[k].shape}")
            total[k] += v
    if total is None:
        raise ValueError("a reduction needs at least one range")
    return total


def stack_rows(partials, rows: int | None = None) -> dict[str, NDArray]:
    """The partials' arrays (rows of their ranges) concatenated along the rows, in the
    given order: a per-row map computed range by range (``map_rows``). With ``rows`` (the
    ranges' total) each array is written into an array of that many rows as its partial
    arrives, so the parts are never all held at once; the values are the
    concatenation's."""
    if rows is not None:
        return _stacked_into(partials, rows)
    parts: dict[str, list[NDArray]] | None = None
    for part in partials:
        if parts is None:
            parts = {k: [] for k in part}
        for k, v in part.items():
            parts[k].append(np.asarray(v))
    if parts is None:
        raise ValueError("a row map needs at least one range")
    return {k: np.concatenate(v) for k, v in parts.items()}


def _stacked_into(partials, rows: int) -> dict[str, NDArray]:
    """:func:`stack_rows` written into preallocated working arrays of ``rows`` rows."""
    out: dict[str, NDArray] | None = None
    at: dict[str, int] = {}
    for part in partials:
        if out is None:
            out = {k: np.empty((rows, *np.shape(v)[1:]), np.asarray(v).dtype)
                   for k, v in part.items()}
            at = dict.fromkeys(out, 0)
        for k, v in part.items():
            v = np.asarray(v)
            if v.dtype != out[k].dtype or v.shape[1:] != out[k].shape[1:]:
                raise ValueError(f"a partial's {k!r} has dtype {v.dtype} and shape "
                                 f"{v.shape}; the first had {out[k].dtype}, {out[k].shape}")
            out[k][at[k]:at[k] + v.shape[0]] = v
            at[k] += v.shape[0]
    if out is None:
        raise ValueError("a row map needs at least one range")
    if any(filled != rows for filled in at.values()):
        raise ValueError(f"the partials gave {at} rows, not {rows}")
    return out


def _rows_of(ranges: Sequence[tuple[int, int]]) -> int:
    return sum(stop - start for start, stop in ranges)
