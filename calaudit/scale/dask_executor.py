"""Row reductions on a Dask cluster, the same bytes as in one process.

Floating-point addition is not associative, so the order of the fold, not who computes
the partials, fixes the result: the partials are fetched one at a time and folded in range
order on the client (:func:`fold_in_order`), with at most a window of tasks in flight.
In-memory row sources are placed as row blocks (:mod:`calaudit.scale.shards`), the rest of
``shared`` is made by one task the pass's tasks read (:func:`dask_sums.shared_task`: Dask
makes it again if it is lost), exact sums are added on the workers
(:mod:`calaudit.scale.dask_sums`), and a block-pair pass places each block on one worker
(:class:`calaudit.scale.pair_blocks.PairBlocks`). Dask is not imported here:
the executor drives the ``distributed.Client`` it is given.
"""

from __future__ import annotations

import functools
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from calaudit.scale import shards
from calaudit.scale.blocks import _rows_of, fold, stack_rows
from calaudit.scale.context import in_task
from calaudit.scale.dask_sizes import register_sizes, size_of
from calaudit.scale.dask_sums import (
    MAX_RANGES_PER_TASK,
    RANGES_PER_TASK,
    chunked,
    exact_sum,
    flattened,
    name_of,
    per_task,
    shared_task,
    with_values,
)
from calaudit.scale.dask_waits import awaited
from calaudit.scale.pair_blocks import PairBlocks
from calaudit.scale.shards import identity

Partial = Callable[..., Mapping[str, np.ndarray]]

#: Times a task is re-run after an exception on a worker (a lost worker is rescheduled
#: by Dask independently, up to ``distributed.scheduler.allowed-failures`` times).
RETRIES = 3
#: Tasks in flight per worker thread, and at least (:meth:`DaskExecutor.window`).
WINDOW_PER_THREAD = 4
MIN_WINDOW = 8
#: Row blocks per side of a task of the pairwise engine on Dask: 2 x 1024 rows, 4 kernel
#: blocks (0.15 s of a worker at 500 columns) against a few ms of client CPU per task.
PAIR_GROUP = 2
#: Block-pair tasks in flight per worker thread: each may copy two blocks to its worker.
PAIR_WINDOW_PER_THREAD = 2


#: The in-order fold of the partials: the serial executor's rule (the same bytes).
fold_in_order = fold


def _call(partial: Partial, start: int, stop: int, shared: Mapping[str, Any]
          ) -> Mapping[str, np.ndarray]:
    """One task: the partial on rows ``[start, stop)`` with the worker's copy of
    ``shared`` (Dask replaces the handles by their values)."""
    return in_task(partial, start, stop, **with_values(shared))


def _call_pair(partial: Callable[..., Any], i: int, j: int, left: Any, right: Any,
               shared: Mapping[str, Any]) -> Any:
    """One task of a block-pair pass: ``partial`` on blocks ``i`` and ``j`` (Dask replaces
    the blocks' handles by the values, copied to this worker if placed elsewhere)."""
    return in_task(partial, i, j, left, right, **with_values(shared))


class DaskExecutor:
    """Row reductions on the Dask cluster behind ``client`` (a ``distributed.Client``),
    with the signatures and results of :class:`~calaudit.scale.SerialExecutor`.
    >>> with LocalCluster(n_workers=2) as cluster, Client(cluster) as client:  # doctest: +SKIP
    ...     config = AuditConfig(executor=DaskExecutor(client))
    """

    name = "dask"

    def __init__(self, client: Any, *, retries: int = RETRIES,
                 pair_group: int = PAIR_GROUP) -> None:
        self.client = client
        self.retries = int(retries)
        #: Row blocks per side of a block-pair task (:meth:`map_pairs`; same bits).
        self.pair_group = int(pair_group)
        #: Bytes placed on the workers (one copy of each value) and bytes of partials
        #: fetched, as ``dask.sizeof`` counts them.
        self.placed_bytes = 0
        self.fetched_bytes = 0
        #: Of :attr:`placed_bytes`, the bytes placed as row blocks (:mod:`.shards`).
        self.block_bytes = 0
        #: Every broadcast so far, ``(partial or "keep", name in shared, bytes)``: what
        #: each worker receives a copy of (``placed_bytes - block_bytes`` in all).
        self.broadcasts: list[tuple[str, str, int]] = []
        register_sizes()

    def traffic(self) -> str:
        """``placed X MiB on the workers, fetched Y MiB of partials, Z MiB of the placed as
        row blocks`` so far (for the per-stage ``--verbose`` lines)."""
        return (f"placed {self.placed_bytes / 2**20:.1f} MiB on the workers, fetched "
                f"{self.fetched_bytes / 2**20:.1f} MiB of partials, "
                f"{self.block_bytes / 2**20:.1f} MiB of the placed as row blocks")

    def describe(self) -> str:
        """``Dask scheduler ADDRESS, N workers`` (for ``--verbose``)."""
        info, at = self.client.scheduler_info(), "address"
        return f"Dask scheduler {info.get(at, '?')}, {len(info.get('workers', {}))} worker(s)"

    def __repr__(self) -> str:
        return f"DaskExecutor({self.client!r}, retries={self.retries})"

    def map_sum(self, partial: Partial, ranges: Sequence[tuple[int, int]],
                shared: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """``fold_in_order(partial(a, b, **shared) for (a, b) in ranges)``, the partials
        computed on the cluster: ``shared`` is sent to each worker once, one task per
        range. Pending tasks are cancelled if the fold stops (an error, Ctrl-C)."""
        return self._combine(fold_in_order, partial, ranges, shared)

    def map_exact_sum(self, partial: Partial, ranges: Sequence[tuple[int, int]],
                      shared: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """:meth:`map_sum` of a partial whose sums are exact, groups of ranges added on
        the workers (:func:`calaudit.scale.dask_sums.exact_sum`); one that reads kept or
        placed row blocks (:class:`calaudit.scale.shards.Shards`): :meth:`map_sum`."""
        if any(isinstance(value, shards.Shards) for value in shared.values()):
            return self.map_sum(partial, ranges, shared)
        return exact_sum(self, partial, ranges, shared)

    def map_combine(self, partial: Partial, ranges: Sequence[tuple[int, int]],
                    shared: Mapping[str, Any], combine: Callable[[Iterator[Any]], Any]) -> Any:
        """:meth:`map_sum` with ``combine`` in place of the fold (partials in range order)."""
        return self._combine(combine, partial, ranges, shared)

    def map_rows(self, partial: Partial, ranges: Sequence[tuple[int, int]],
                 shared: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """A per-row map (``SerialExecutor.map_rows``), its parts written into the result
        in range order as they arrive (never all held at once)."""
        return self._combine(functools.partial(stack_rows, rows=_rows_of(ranges)), partial,
                             ranges, shared)

    def map_pairs(self, partial: Callable[..., Any], pairs: Sequence[tuple[int, int]],
                  blocks: Sequence[Any], shared: Mapping[str, Any],
                  combine: Callable[[Iterator[Any]], Any]) -> Any:
        """``combine`` of ``partial(i, j, blocks[i], blocks[j], **shared)`` in pair order,
        the pairs computed on the cluster: each block (its ``detached()`` value when it
        has one) placed once on one worker, each task given its two blocks only."""
        pairs = [(int(i), int(j)) for i, j in pairs]
        if not pairs:  # no rows: nothing to place
            return combine(iter(()))
        arguments, values = shared_task(self, name_of(partial), uuid.uuid4().hex[:12], shared)
        placement = PairBlocks(self.client, blocks, pairs, self._count_placed)
        parts = self._pairs_in_order(partial, pairs, placement, arguments)
        try:
            return combine(parts)
        finally:
            parts.close()
            placement.release_all()
            shards.forget(self.client, [values] if values is not None else [])

    def _pairs_in_order(self, partial: Callable[..., Any], pairs: list[tuple[int, int]],
                        placement: PairBlocks, shared: dict[str, Any]) -> Iterator[Any]:
        """The pairs' partials in pair order, at most ``PAIR_WINDOW_PER_THREAD`` per
        worker thread in flight (blocks and shared values are tasks: Dask makes a lost
        one again)."""
        threads = sum(self.client.nthreads().values())
        window = max(2, PAIR_WINDOW_PER_THREAD * threads)
        token, name = uuid.uuid4().hex[:12], name_of(partial)
        pending: deque[Any] = deque()
        submitted = 0
        try:
            for i, j in pairs:
                while submitted < len(pairs) and len(pending) < window:
                    a, b = pairs[submitted]
                    pending.append(self.client.submit(
                        _call_pair, partial, a, b, placement.handle(a), placement.handle(b),
                        shared, retries=self.retries, pure=False,
                        key=f"calaudit-{name}-{token}-{submitted}"))
                    submitted += 1
                future = pending.popleft()
                part = awaited(self.client, future, name, i, j, pair=True)
                self.fetched_bytes += size_of(part)
                placement.done(i, j)
                yield part
        finally:
            shards.forget(self.client, list(pending))

    def _combine(self, combine: Callable[[Iterator[Mapping[str, np.ndarray]]],
                                         dict[str, np.ndarray]],
                 partial: Partial, ranges: Sequence[tuple[int, int]],
                 shared: Mapping[str, Any]) -> dict[str, np.ndarray]:
        ranges = [(int(start), int(stop)) for start, stop in ranges]
        if not ranges:
            raise ValueError("a reduction needs at least one row range")
        sharded = self._place_rows(shared)
        try:
            arguments, values = shared_task(self, name_of(partial), uuid.uuid4().hex[:12],
                                            {**shared, **sharded})
            spans = chunked(partial, ranges, self.window())  # a span's task gets its blocks
            partials = (self._in_order(partial, ranges, arguments) if spans is None
                        else flattened(self._in_order(*spans, arguments)))
            try:
                return combine(partials)
            finally:
                partials.close()  # cancels the tasks in flight if the fold stopped early
                shards.forget(self.client, [values] if values is not None else [])
        finally:
            for placed in sharded.values():
                placed.release()

    def keep(self, value: Any) -> Any:
        """``value`` placed once on the workers, as row blocks (:mod:`.shards`) or else
        made by a task (Dask copies it where it is read and makes it again if it is
        lost); the handle can be given in ``shared`` to any number of reductions until
        :meth:`release`."""
        if shards.shardable(value):
            return self._place_rows({"rows": value})["rows"]
        self._count_broadcast("keep", "value", value)
        return self.client.submit(identity, value, pure=False,
                                  key=f"calaudit-keep-{uuid.uuid4().hex}")

    def make(self, function: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """``function(*args)`` made by a task on a worker (``calaudit.scale.made``; Dask
        makes a lost value again from the arguments)."""
        return self.client.submit(function, *args, pure=False,
                                  key=f"calaudit-made-{name_of(function)}-{uuid.uuid4().hex}")

    def keep_rows(self, partial: Partial, ranges: Sequence[tuple[int, int]],
                  shared: Mapping[str, Any]) -> Any:
        """The per-row results of ``partial`` on every range kept on the workers
        (``calaudit.scale.kept``): a handle read by later reductions as placed row
        blocks, each made by a task (Dask makes a lost one again)."""
        from calaudit.scale.kept_rows import TaskShards

        per = per_task(len(ranges), self.window(), RANGES_PER_TASK, MAX_RANGES_PER_TASK)
        return TaskShards(self.client, partial, ranges, shared, per)

    def release(self, handle: Any) -> None:
        """Drop the workers' copies of a :meth:`keep`, :meth:`make` or :meth:`keep_rows`
        handle."""
        if isinstance(handle, shards.Shards):
            handle.release()
            return
        shards.forget(self.client, [handle])

    def _place_rows(self, shared: Mapping[str, Any]) -> dict[str, shards.Shards]:
        """The in-memory row sources of ``shared`` placed as row blocks (one copy on the
        cluster in all), counted in :attr:`placed_bytes`."""
        placed = shards.place(self.client, shared, shards.block_rows(self))
        self._count_blocks(sum(p.nbytes for p in placed.values()))
        return placed

    def _count_broadcast(self, name: str, key: str, value: Any) -> None:
        """Count ``value`` (``shared[key]`` of ``name``) sent to every worker."""
        size = size_of(value)
        self.placed_bytes += size
        self.broadcasts.append((name, key, size))

    def _count_placed(self, value: Any) -> None:
        """Count a block of :meth:`map_pairs` just placed (on one worker)."""
        self._count_blocks(size_of(value))

    def _count_blocks(self, nbytes: int) -> None:
        self.placed_bytes += nbytes
        self.block_bytes += nbytes

    def _submit(self, partial: Partial, start: int, stop: int, arguments: dict[str, Any],
                key: str) -> Any:
        """The task of rows ``[start, stop)`` (its range's blocks of the sharded row
        sources, :func:`shards.task`)."""
        function, args = shards.task(_call, partial, start, stop, arguments)
        return self.client.submit(function, *args, retries=self.retries, pure=False, key=key)

    def window(self) -> int:
        """Tasks submitted ahead of the fold: ``WINDOW_PER_THREAD`` per worker thread (at
        least ``MIN_WINDOW``)."""
        threads = sum(self.client.nthreads().values())
        return max(MIN_WINDOW, WINDOW_PER_THREAD * threads)

    def _in_order(self, partial: Partial, ranges: list[tuple[int, int]],
                  handles: dict[str, Any]
                  ) -> Iterator[Mapping[str, np.ndarray]]:
        """The partials in range order, at most :meth:`window` tasks in flight, each
        released on the cluster once fetched."""
        token, window, name = uuid.uuid4().hex[:12], self.window(), name_of(partial)
        pending: deque[Any] = deque()
        submitted = 0
        try:
            for start, stop in ranges:
                while submitted < len(ranges) and len(pending) < window:
                    low, high = ranges[submitted]
                    pending.append(self._submit(partial, low, high, handles,
                                                f"calaudit-{name}-{token}-{submitted}"))
                    submitted += 1
                part = awaited(self.client, pending.popleft(), name, start, stop)
                self.fetched_bytes += size_of(part)
                yield part
        finally:
            shards.forget(self.client, list(pending))


