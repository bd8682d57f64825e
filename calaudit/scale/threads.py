"""Executors in this process: :class:`ThreadExecutor` (a pool of threads, folded in range
order) and :class:`SerialExecutor` (one thread: one range after another), with the BLAS and
allocator settings their tasks need."""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from numpy.typing import NDArray

from calaudit.scale.blocks import Partial, _rows_of, fold, stack_rows
from calaudit.scale.context import in_task


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
    folds them **in range order** (:func:`fold`), so the result is the same bytes whatever
    the number of threads. BLAS is held to one thread per task while they run; at most
    ``threads + 1`` tasks are submitted ahead of the fold. ``threads = 1`` (or a single
    range) runs the partials one range after another in this thread. ``one_arena=True``
    (the command line, which owns its process) makes the threads share glibc's main arena
    (:func:`_glibc`); free pages are handed back after each reduction.
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

    def map_combine(self, partial: Partial, ranges: Sequence[tuple[int, int]],
                    shared: Mapping[str, Any], combine: Callable[[Iterator[Any]], Any]) -> Any:
        """``combine`` of the partials, handed over in range order."""
        return self._combine(combine, partial, ranges, shared)

    def map_rows(self, partial: Partial, ranges: Sequence[tuple[int, int]],
                 shared: Mapping[str, Any]) -> dict[str, NDArray]:
        """``partial(start, stop, **shared)`` for every range, each giving arrays of
        ``stop - start`` rows: their rows in range order (:func:`stack_rows`)."""
        ranges = list(ranges)
        return self._combine(functools.partial(stack_rows, rows=_rows_of(ranges)), partial,
                             ranges, shared)

    def map_pairs(self, partial: Callable[..., Any], pairs: Sequence[tuple[int, int]],
                  blocks: Sequence[Any], shared: Mapping[str, Any],
                  combine: Callable[[Iterator[Any]], Any]) -> Any:
        """``combine`` of ``partial(i, j, blocks[i], blocks[j], **shared)`` for every
        pair, in the given order (a task sees two blocks' inputs only; at most ``threads +
        1`` ahead of ``combine``)."""
        return self._combine(combine, _OnPair(partial, blocks), pairs, shared)

    def _combine(self, combine: Callable[[Iterator[dict[str, NDArray]]], Any],
                 partial: Partial, ranges: Sequence[tuple[int, int]],
                 shared: Mapping[str, Any]) -> dict[str, NDArray]:
        """``combine`` of the partials in range order, computed on the threads."""
        ranges = list(ranges)
        if self.threads == 1 or len(ranges) <= 1:
            return combine(in_task(partial, start, stop, **shared) for start, stop in ranges)
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


class SerialExecutor(ThreadExecutor):
    """Runs the partials of a reduction in this process, one range after another (a
    :class:`ThreadExecutor` of one thread)."""

    name = "serial"
    threads = 1

    def __init__(self) -> None:
        pass

    def __repr__(self) -> str:
        return "SerialExecutor()"


def _in_order(pool: ThreadPoolExecutor, partial: Partial, ranges: list[tuple[int, int]],
              shared: Mapping[str, Any], window: int) -> Iterator[dict[str, NDArray]]:
    """The partials in range order, at most ``window`` submitted ahead of the fold."""
    pending: deque[Future] = deque()
    submitted = 0
    try:
        for _ in ranges:
            while submitted < len(ranges) and len(pending) < window:
                start, stop = ranges[submitted]
                pending.append(pool.submit(in_task, partial, start, stop, **shared))
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
    ``mallopt(M_ARENA_MAX, 1)`` (once per process), so the worker threads' freed
    temporaries go back to the main arena instead of staying in arenas of their own."""
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
    elsewhere)."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def one_blas_thread() -> Any:
    """A context in which BLAS runs one thread per call (``threadpoolctl``). Also for a
    task whose GEMM bits must not depend on where it runs: with OpenBLAS the same product
    can differ in the last bit with the BLAS thread count."""
    from threadpoolctl import ThreadpoolController

    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")
