"""Fixed row blocks: random streams keyed by global row position, and ordered reductions.

Two rules make a result independent of how the rows are chunked, partitioned or
distributed:

* **Draws.** Every per-row random draw (label redraws ``y* ~ Cat(p)``, bootstrap counts or
  indices, subsamples) of the rows ``[b ROW_BLOCK, (b + 1) ROW_BLOCK)`` comes from
  :func:`block_rng` ``(seed, name, b)``: a generator keyed by the run's seed, the stream's
  name and the *global* block index ``b = row // ROW_BLOCK``. It is a counter-based key
  (``numpy.random.SeedSequence((seed, crc32(name), b))`` seeding a PCG64 generator), so
  block ``b``'s draws can be made by whoever holds those rows, in any order.
* **Reductions.** A statistic that is a sum over rows is computed as
  ``partial(start, stop, **shared) -> dict[str, ndarray]`` over the fixed ranges of
  :func:`task_ranges` (a function of ``n`` only; every range starts on a block boundary),
  and the partials are added **in range order** (a left fold) by the caller. The
  floating-point result is then identical whoever computes the partials: the same function
  on the same rows, summed in the same order. :class:`SerialExecutor` runs the partials
  in-process, one range after another; :class:`ThreadExecutor` (the default of an audit,
  :func:`executor_of`) computes them on a pool of threads and folds them in range order
  too; a distributed executor (``calaudit.execution``) has the same
  :meth:`~SerialExecutor.map_sum`. ``partial`` must be a module-level (picklable),
  thread-safe function and ``shared`` a dict of arrays (and plain values) it reads, never
  writes.
* **Row maps.** A per-row result (a kernel sum at every row) is the same kind of partial,
  returning arrays of ``stop - start`` rows; ``map_rows`` concatenates them in range order
  (:func:`stack_rows`), on every executor.
* **Block pairs.** A quadratic statistic (the pairwise engine's exact passes) is a
  ``partial(i, j, block_i, block_j, **shared)`` over pairs of fixed row blocks, each task
  given only its two blocks' inputs; ``map_pairs`` hands the partials, in pair order, to
  the caller's ``combine`` (a Dask executor places each block once, not a broadcast).
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

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
    to be a multiple of :data:`ROW_BLOCK` (:func:`blocks` refuses a range that does not
    start on a block boundary); tests use smaller tasks to prove that the grouping does
    not change a result."""
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


class SerialExecutor:
    """Runs the partials of a reduction in this process, one range after another."""

    name = "serial"

    def map_sum(self, partial: Partial, ranges: Sequence[tuple[int, int]],
                shared: Mapping[str, Any]) -> dict[str, NDArray]:
        """``partial(start, stop, **shared)`` for every range, summed in range order."""
        return fold(partial(start, stop, **shared) for start, stop in ranges)

    def map_rows(self, partial: Partial, ranges: Sequence[tuple[int, int]],
                 shared: Mapping[str, Any]) -> dict[str, NDArray]:
        """``partial(start, stop, **shared)`` for every range, each giving arrays of
        ``stop - start`` rows: their rows in range order (:func:`stack_rows`)."""
        ranges = list(ranges)
        return stack_rows((partial(start, stop, **shared) for start, stop in ranges),
                          _rows_of(ranges))

    def map_pairs(self, partial: Callable[..., Any], pairs: Sequence[tuple[int, int]],
                  blocks: Sequence[Any], shared: Mapping[str, Any],
                  combine: Callable[[Iterator[Any]], Any]) -> Any:
        """``combine`` of ``partial(i, j, blocks[i], blocks[j], **shared)`` for every
        pair, in the given order (a task sees two blocks' inputs only)."""
        return combine(partial(i, j, blocks[i], blocks[j], **shared) for i, j in pairs)


class _OnPair:
    """``partial(i, j, **shared)`` as ``partial(i, j, blocks[i], blocks[j], **shared)``:
    a block pair run through the range machinery of :class:`ThreadExecutor`."""

    def __init__(self, partial: Callable[..., Any], blocks: Sequence[Any]) -> None:
        self.partial, self.blocks = partial, blocks

    def __call__(self, i: int, j: int, **shared: Any) -> Any:
        return self.partial(i, j, self.blocks[i], self.blocks[j], **shared)


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


class ThreadExecutor:
    """Computes the partials of a reduction on ``threads`` threads of this process and
    folds them **in range order** (:func:`fold`), so the result is the serial executor's
    bytes whatever the number of threads.

    numpy releases the GIL in its GEMMs, large ufuncs, casts and random fills, so the
    label draws, feature maps and block products of different row ranges run at the same
    time. While the tasks run, BLAS is held to one thread each (``threadpoolctl``; the
    threads, not BLAS, use the cores: a multi-threaded GEMM per task would oversubscribe
    them, and BLAS threads spin while the draws of their range run on one core). At most
    ``threads + 1`` tasks are submitted ahead of the fold, so the memory held is about
    ``threads + 1`` partials and the block temporaries of ``threads`` running tasks.
    ``threads = 1`` (or a single range) runs the partials in the calling thread with
    BLAS as configured, exactly like :class:`SerialExecutor`.

    Memory (glibc): the tasks' temporaries are allocated in the worker threads, which
    glibc would serve from per-thread arenas that keep the freed blocks (hundreds of MB
    at 10^6 rows, on top of the later per-row arrays). With ``one_arena=True`` (the
    command line, which owns its process) the threads share the main arena
    (``mallopt(M_ARENA_MAX, 1)``, set once per process when the first such executor of
    more than one thread is made); a library caller's process keeps its allocator
    settings. In both cases the free pages are handed back after each reduction
    (``malloc_trim(0)``); see :func:`_glibc`.
    """

    name = "threads"

    def __init__(self, threads: int | None = None, one_arena: bool = False) -> None:
        self.threads = usable_cores() if threads is None else int(threads)
        if self.threads < 1:
            raise ValueError(f"threads must be at least 1; got {threads}")
        if self.threads > 1 and one_arena:
            _glibc(one_arena=True)  # early, before other libraries start threads

    def describe(self) -> str:
        """``N threads in this process`` (for ``--verbose``)."""
        return f"{self.threads} thread(s) in this process"

    def __repr__(self) -> str:
        return f"ThreadExecutor(threads={self.threads})"

    def map_sum(self, partial: Partial, ranges: Sequence[tuple[int, int]],
                shared: Mapping[str, Any]) -> dict[str, NDArray]:
        """``partial(start, stop, **shared)`` for every range, summed in range order."""
        return self._combine(fold, partial, ranges, shared)

    def map_rows(self, partial: Partial, ranges: Sequence[tuple[int, int]],
                 shared: Mapping[str, Any]) -> dict[str, NDArray]:
        """:meth:`SerialExecutor.map_rows` with the partials computed on the threads."""
        ranges = list(ranges)
        return self._combine(functools.partial(stack_rows, rows=_rows_of(ranges)), partial,
                             ranges, shared)

    def map_pairs(self, partial: Callable[..., Any], pairs: Sequence[tuple[int, int]],
                  blocks: Sequence[Any], shared: Mapping[str, Any],
                  combine: Callable[[Iterator[Any]], Any]) -> Any:
        """:meth:`SerialExecutor.map_pairs` with the pairs computed on the threads (at
        most ``threads + 1`` ahead of ``combine``)."""
        return self._combine(combine, _OnPair(partial, blocks), pairs, shared)

    def _combine(self, combine: Callable[[Iterator[dict[str, NDArray]]], Any],
                 partial: Partial, ranges: Sequence[tuple[int, int]],
                 shared: Mapping[str, Any]) -> dict[str, NDArray]:
        """``combine`` of the partials in range order, computed on the threads."""
        ranges = list(ranges)
        if self.threads == 1 or len(ranges) <= 1:
            return combine(partial(start, stop, **shared) for start, stop in ranges)
        libc = _glibc()
        try:
            with one_blas_thread(), ThreadPoolExecutor(
                    min(self.threads, len(ranges)), thread_name_prefix="calaudit-rows"
                    ) as pool:
                parts = _in_order(pool, partial, ranges, shared, self.threads + 1)
                try:
                    return combine(parts)
                finally:
                    parts.close()  # cancels the tasks not started if the fold stopped
        finally:
            if libc is not None:
                libc.malloc_trim(0)


def _in_order(pool: ThreadPoolExecutor, partial: Partial, ranges: list[tuple[int, int]],
              shared: Mapping[str, Any], window: int) -> Iterator[dict[str, NDArray]]:
    """The partials in range order, at most ``window`` submitted ahead of the fold."""
    pending: deque[Future] = deque()
    submitted = 0
    try:
        for _ in ranges:
            while submitted < len(ranges) and len(pending) < window:
                start, stop = ranges[submitted]
                pending.append(pool.submit(partial, start, stop, **shared))
                submitted += 1
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()


#: threadpoolctl's view of the loaded BLAS libraries (inspected once per process).
_CONTROLLER: list[Any] = []
#: glibc's ``mallopt`` parameter of the number of arenas.
_M_ARENA_MAX = -8
#: The C library once set up (empty: not yet; ``[None]``: not glibc).
_LIBC: list[Any] = []
#: Whether ``mallopt(M_ARENA_MAX, 1)`` was called in this process (empty: not yet).
_ONE_ARENA: list[bool] = []


def _glibc(one_arena: bool = False) -> Any:
    """glibc (``ctypes``), or ``None`` on another C library; with ``one_arena`` also
    ``mallopt(M_ARENA_MAX, 1)`` (once per process). One arena for every thread: the
    worker threads' freed temporaries go back to the arena the main thread allocates from
    (reused by it, and trimmed), instead of staying in arenas of their own."""
    if not _LIBC:
        libc = None
        if sys.platform.startswith("linux"):
            try:
                candidate = ctypes.CDLL("libc.so.6")
                if candidate.gnu_get_libc_version and candidate.malloc_trim:
                    libc = candidate
            except (OSError, AttributeError):  # musl and others: no such knobs
                libc = None
        _LIBC.append(libc)
    libc = _LIBC[0]
    if one_arena and libc is not None and not _ONE_ARENA:
        _ONE_ARENA.append(bool(libc.mallopt(_M_ARENA_MAX, 1)))
    return libc


def release_free_memory() -> None:
    """Hand freed heap pages back to the OS (``malloc_trim(0)`` on glibc; nothing
    elsewhere). Called after a phase that frees many medium-sized blocks (the loader's
    per-batch chunks), so the RSS that later phases start from is the live data."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def one_blas_thread() -> Any:
    """A context in which BLAS runs one thread per call (``threadpoolctl``). Also for a
    task whose GEMM bits must not depend on where it runs: OpenBLAS splits a GEMM's rows
    and columns among its threads, and the edge tiles' kernels accumulate in another order,
    so the same product can differ in the last bit with the BLAS thread count."""
    from threadpoolctl import ThreadpoolController

    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")


def executor_of(config: Any) -> Any:
    """The executor an audit config carries (attribute ``executor``; a distributed one is
    set by the caller), else a :class:`ThreadExecutor` on the usable cores. Never a
    global."""
    return getattr(config, "executor", None) or ThreadExecutor()


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


def map_rows(executor: Any, partial: Partial, ranges: Sequence[tuple[int, int]],
             shared: Mapping[str, Any]) -> dict[str, NDArray]:
    """``executor.map_rows`` (this process when the executor has none, or is None)."""
    runner = executor if hasattr(executor, "map_rows") else SerialExecutor()
    return runner.map_rows(partial, ranges, shared)
