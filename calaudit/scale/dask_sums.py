"""Fewer, larger Dask tasks for the reductions whose tasks read their own rows.

Each task costs the client some milliseconds (the scheduler runs there on a local
cluster) whatever its size, so a pass makes about a window of tasks whatever the rows:
:func:`span_ranges` of consecutive ranges per task, at least a few and at most enough
for a window (:func:`per_task`). :func:`chunked` returns a span's partials as a list,
which the client folds one by one in range order; :func:`exact_sum` adds a span's
partials in the task for a reduction whose sums are **exact** (any order of addition
gives the same bytes), and the client folds the spans' totals in span order. Everything
is a task (nothing is scattered), so a result lost with its worker is recomputed by Dask
from lineage.
"""

from __future__ import annotations

import contextlib
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from calaudit.scale.blocks import fold
from calaudit.scale.context import in_task
from calaudit.scale.dask_sizes import size_of
from calaudit.scale.dask_waits import awaited
from calaudit.scale.shards import Shards, identity

#: Consecutive ranges one task adds (exact sums), at least.
GROUP = 8
#: Consecutive ranges one task computes when it returns their partials, at least and at
#: most (bounds the partials a task holds until the client fetches them).
RANGES_PER_TASK = 4
MAX_RANGES_PER_TASK = 16


def per_task(n_ranges: int, window: int, least: int, most: int | None = None) -> int:
    """Ranges per task: enough that ``n_ranges`` make about ``window`` tasks, at least
    ``least`` and at most ``most``."""
    wanted = max(int(least), -(-int(n_ranges) // max(1, int(window))))
    return wanted if most is None else min(wanted, int(most))


def span_ranges(ranges: Sequence[tuple[int, int]], per: int) -> list[list[tuple[int, int]]]:
    """``ranges`` cut into consecutive runs of ``per`` (the last one shorter)."""
    return [list(ranges[i:i + per]) for i in range(0, len(ranges), per)]


class Chunked:
    """``func`` on the consecutive ranges of ``step`` rows of a task's span ``[start,
    stop)``: their partials as a list, in range order."""

    def __init__(self, func: Callable[..., Any], step: int) -> None:
        self.func, self.step = func, int(step)

    def __call__(self, start: int, stop: int, **shared: Any) -> list[Any]:
        return [self.func(lo, min(lo + self.step, stop), **shared)
                for lo in range(start, stop, self.step)]


def chunked(partial: Callable[..., Any], ranges: list[tuple[int, int]], window: int
            ) -> tuple[Chunked, list[tuple[int, int]]] | None:
    """``(Chunked(partial, step), spans)`` of consecutive ranges of ``step`` rows each
    (the last one at most that), :func:`per_task` of them per span for about ``window``
    tasks; ``None`` for a single range or other ranges."""
    first, step = ranges[0][0], ranges[0][1] - ranges[0][0]
    regular = step > 0 and all(a == first + k * step and 0 < b - a <= step
                               for k, (a, b) in enumerate(ranges)) and all(
        b - a == step for a, b in ranges[:-1])
    if len(ranges) < 2 or not regular:
        return None
    per = per_task(len(ranges), window, RANGES_PER_TASK, MAX_RANGES_PER_TASK)
    spans = [(run[0][0], run[-1][1]) for run in span_ranges(ranges, per)]
    return Chunked(partial, step), spans


def flattened(lists: Iterator[list[Any]]) -> Iterator[Any]:
    """The items of ``lists`` in order (closing it when closed)."""
    try:
        for items in lists:
            yield from items
    finally:
        close = getattr(lists, "close", None)
        if close is not None:
            close()


#: The key under which a task's arguments carry its shared values' task (:func:`shared_task`).
VALUES = "calaudit-shared-values"


def shared_task(executor: Any, name: str, token: str, shared: Mapping[str, Any]
                ) -> tuple[dict[str, Any], Any]:
    """``(arguments, values)``: the plain values of ``shared`` (neither handles nor row
    blocks) made by one task ``values`` on a worker, which every task of the pass reads
    (Dask copies it to each worker once, and makes it again from its spec if it is lost
    with its worker: no value is scattered, none re-sent by calaudit), and ``arguments``:
    the rest of ``shared`` with ``values`` under :data:`VALUES` (``None`` if nothing
    plain)."""
    plain = {k: v for k, v in shared.items()
             if not (is_future(v) or isinstance(v, Shards))}
    rest = {k: v for k, v in shared.items() if k not in plain}
    if not plain:
        return rest, None
    for key, value in plain.items():  # a source reading its own rows is not counted
        if not getattr(value, "reads_own_rows", False):
            executor._count_broadcast(name, key, value)
    values = executor.client.submit(identity, plain, pure=False,
                                    key=f"calaudit-{name}-{token}-shared")
    return {**rest, VALUES: values}, values


def with_values(shared: Mapping[str, Any]) -> dict[str, Any]:
    """A task's keyword arguments: ``shared`` with the values of its :data:`VALUES` entry
    (Dask has replaced the handle by the value) spread in."""
    values = shared.get(VALUES)
    if values is None:
        return dict(shared)
    return {**{k: v for k, v in shared.items() if k != VALUES}, **values}


def _added(partial: Callable[..., Mapping[str, np.ndarray]], ranges: list[tuple[int, int]],
           arguments: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """One task: the partials of ``ranges`` added on the worker, last to first (exact
    sums: any order), one partial held at a time (Dask replaces the futures by their
    values)."""
    shared = with_values(arguments)
    return fold(in_task(partial, start, stop, **shared) for start, stop in reversed(ranges))


def exact_sum(executor: Any, partial: Callable[..., Mapping[str, np.ndarray]],
              ranges: Sequence[tuple[int, int]], shared: Mapping[str, Any]
              ) -> dict[str, np.ndarray]:
    """``executor.map_sum(partial, ranges, shared)`` of a partial whose sums are exact
    (module docstring), its groups added on the workers; ``executor`` a
    ``DaskExecutor`` (its client, its window and its traffic counters)."""
    ranges = [(int(start), int(stop)) for start, stop in ranges]
    if not ranges:
        raise ValueError("a reduction needs at least one row range")
    client, name, token = executor.client, name_of(partial), uuid.uuid4().hex[:12]
    arguments, values = shared_task(executor, name, token, shared)
    in_flight = executor.window()
    groups = span_ranges(ranges, per_task(len(ranges), in_flight, GROUP))

    def submit(index: int) -> Any:
        return client.submit(_added, partial, groups[index], arguments,
                             retries=executor.retries, pure=False,
                             key=f"calaudit-{name}-{token}-{index}")

    def totals() -> Iterator[dict[str, np.ndarray]]:
        pending: deque[Any] = deque()
        submitted = 0
        try:
            for group in groups:
                while submitted < len(groups) and len(pending) < in_flight:
                    pending.append(submit(submitted))
                    submitted += 1
                part = awaited(client, pending.popleft(), name, group[0][0], group[-1][1])
                executor.fetched_bytes += size_of(part)
                yield part
        finally:
            with contextlib.suppress(Exception):  # cleanup after the real outcome
                client.cancel([*pending, *([values] if values is not None else [])])

    parts = totals()
    try:
        return fold(parts)
    finally:
        parts.close()


def is_future(value: Any) -> bool:
    """A ``distributed.Future`` (a handle of ``DaskExecutor.keep`` or ``make``): passed to
    the tasks as it is, and not released after the reduction."""
    return type(value).__name__ == "Future" and hasattr(value, "key") and hasattr(
        value, "release")


def name_of(partial: Any) -> str:
    """A partial's name (in task keys and messages)."""
    inner = getattr(partial, "func", partial)  # functools.partial
    return str(getattr(inner, "__name__", type(inner).__name__))
