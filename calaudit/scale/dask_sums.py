"""Fewer, larger Dask tasks for the reductions whose tasks read their own rows.

:func:`chunked` makes one task of :data:`RANGES_PER_TASK` consecutive ranges (each task
costs the client a few milliseconds whatever its size); the client still folds their
partials one by one in range order. :func:`exact_sum` adds the partials of a reduction
whose sums are **exact** (any order of addition gives the same bytes) in groups of
:data:`GROUP` on the workers, and the client folds the group totals in group order.
Everything is a task (nothing is scattered), so a result lost with its worker is
recomputed by Dask from lineage.
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
from calaudit.scale.dask_waits import await_result, cluster_failure

#: Consecutive ranges whose partials one task adds on a worker.
GROUP = 8
#: Consecutive ranges computed by one task of a reduction that reads its own rows.
RANGES_PER_TASK = 4


class Chunked:
    """``func`` on the consecutive ranges of ``step`` rows of a task's span ``[start,
    stop)``: their partials as a list, in range order."""

    def __init__(self, func: Callable[..., Any], step: int) -> None:
        self.func, self.step = func, int(step)

    def __call__(self, start: int, stop: int, **shared: Any) -> list[Any]:
        return [self.func(lo, min(lo + self.step, stop), **shared)
                for lo in range(start, stop, self.step)]


def chunked(partial: Callable[..., Any], ranges: list[tuple[int, int]]
            ) -> tuple[Chunked, list[tuple[int, int]]] | None:
    """``(Chunked(partial, step), spans)`` of consecutive ranges of ``step`` rows each
    (the last one at most that), :data:`RANGES_PER_TASK` of them per span; ``None`` for
    a single range or other ranges."""
    first, step = ranges[0][0], ranges[0][1] - ranges[0][0]
    regular = step > 0 and all(a == first + k * step and 0 < b - a <= step
                               for k, (a, b) in enumerate(ranges)) and all(
        b - a == step for a, b in ranges[:-1])
    if len(ranges) < 2 or not regular:
        return None
    spans = [(ranges[i][0], ranges[min(i + RANGES_PER_TASK, len(ranges)) - 1][1])
             for i in range(0, len(ranges), RANGES_PER_TASK)]
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


def _identity(value: Any) -> Any:
    return value


def _call(partial: Callable[..., Mapping[str, np.ndarray]], start: int, stop: int,
          values: Mapping[str, Any], handles: Mapping[str, Any]) -> Mapping[str, np.ndarray]:
    """One range's partial (Dask replaces the futures by their values)."""
    return in_task(partial, start, stop, **values, **handles)


def _added(*parts: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A group's partials added on a worker, last to first (exact sums: any order)."""
    return fold(reversed(parts))


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
    handles = {k: v for k, v in shared.items() if _is_future(v)}
    plain = {k: v for k, v in shared.items() if k not in handles}
    values = client.submit(_identity, plain, pure=False, key=f"calaudit-{name}-{token}-shared")
    for key, value in plain.items():  # a source reading its own rows is not counted
        if not getattr(value, "reads_own_rows", False):  # (as in ``broadcasts.scatter``)
            executor._count_broadcast(name, key, value)
    groups = [ranges[i:i + GROUP] for i in range(0, len(ranges), GROUP)]
    in_flight = max(2, executor.window() // GROUP)

    def submit(index: int) -> Any:
        parts = [client.submit(_call, partial, start, stop, values, handles,
                               retries=executor.retries, pure=False,
                               key=f"calaudit-{name}-{token}-{index}-{start}")
                 for start, stop in groups[index]]
        total = client.submit(_added, *parts, retries=executor.retries, pure=False,
                              key=f"calaudit-{name}-{token}-{index}-sum")
        for part in parts:  # the group's task holds them until it has added them
            part.release()
        return total

    def totals() -> Iterator[dict[str, np.ndarray]]:
        pending: deque[Any] = deque()
        submitted = 0
        try:
            for group in groups:
                while submitted < len(groups) and len(pending) < in_flight:
                    pending.append(submit(submitted))
                    submitted += 1
                future = pending.popleft()
                try:
                    part = await_result(client, future)
                except Exception as exc:  # noqa: BLE001 - cluster failures: one line
                    failure = cluster_failure(exc, name, group[0][0], group[-1][1])
                    if failure is exc:
                        raise
                    raise failure from exc
                future.release()
                executor.fetched_bytes += size_of(part)
                yield part
        finally:
            with contextlib.suppress(Exception):  # cleanup after the real outcome
                client.cancel([*pending, values])

    parts = totals()
    try:
        return fold(parts)
    finally:
        parts.close()


def _is_future(value: Any) -> bool:
    return type(value).__name__ == "Future" and hasattr(value, "key") and hasattr(
        value, "release")


def name_of(partial: Any) -> str:
    """A partial's name (in task keys and messages)."""
    inner = getattr(partial, "func", partial)  # functools.partial
    return str(getattr(inner, "__name__", type(inner).__name__))
