"""Per-range results kept where they were computed, read by later reductions as a row
source (:func:`calaudit.scale.kept`).

On Dask, the rows ``[lo, hi)`` of each fixed range are made by one task on a worker
(:class:`TaskShards`): the client never holds them, a later reduction's task receives the
blocks covering its range (as placed row blocks, :mod:`calaudit.scale.shards`), and a
block lost with its worker is made again by Dask from its task (the partial, the range
and the small shared values, themselves made by a task from the client's copy).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from calaudit.scale import shards
from calaudit.scale.context import in_task
from calaudit.scale.sources import ArrayRows


def _values(shared: Mapping[str, Any]) -> dict[str, Any]:
    """The shared values, as a task makes them for the tasks that read them."""
    return dict(shared)


def _block(partial: Any, start: int, stop: int, shared: Mapping[str, Any],
           blocks: Mapping[str, Mapping[str, Any]]) -> ArrayRows:
    """One kept block: the partial's rows ``[start, stop)`` as an :class:`ArrayRows`
    (the sources of ``blocks`` rebuilt from the placed blocks they received)."""
    rows = {name: shards.joined(spec["n"], spec["blocks"]) for name, spec in blocks.items()}
    return ArrayRows(in_task(partial, start, stop, **shared, **rows))


class TaskShards(shards.Shards):
    """Client-side handle of the per-range results of ``partial`` kept on the workers:
    block ``k`` is the future of the task that made rows ``bounds[k]`` (the ranges of
    :func:`calaudit.scale.task_ranges`, ``rows`` each). Given in ``shared`` to a reduction
    it is read as placed row blocks; :meth:`place` makes blocks again by new tasks."""

    reads_own_rows = True  # made by tasks: passed to reductions as it is, never scattered

    def __init__(self, client: Any, partial: Any, ranges: Sequence[tuple[int, int]],
                 shared: Mapping[str, Any]) -> None:
        self.client, self.partial, self.source = client, partial, None
        self.n = int(ranges[-1][1])
        self.rows = int(ranges[0][1] - ranges[0][0])
        self.bounds = [(lo, min(self.n, lo + self.rows)) for lo in range(0, self.n, self.rows)]
        if [tuple(r) for r in ranges] != self.bounds:
            raise ValueError("kept results need the fixed ranges of task_ranges(n, rows)")
        self.sharded = {name: value for name, value in shared.items()
                        if isinstance(value, shards.Shards)}
        plain = {name: value for name, value in shared.items() if name not in self.sharded}
        self.token = uuid.uuid4().hex[:12]
        self.shared = client.submit(_values, plain, pure=False,
                                    key=f"calaudit-kept-shared-{self.token}")
        self.futures: list[Any] = [None] * len(self.bounds)
        self.nbytes = 0
        self.generation = 0
        self.place(range(len(self.bounds)))

    def __repr__(self) -> str:
        return (f"TaskShards({getattr(self.partial, '__name__', 'partial')}, "
                f"{len(self.bounds)} blocks)")

    def place(self, indices: Iterable[int]) -> None:
        """Submit the tasks making blocks ``indices``."""
        self.generation += 1
        for k in indices:
            lo, hi = self.bounds[k]
            blocks = {name: value.argument(lo, hi) for name, value in self.sharded.items()}
            self.futures[k] = self.client.submit(
                _block, self.partial, lo, hi, self.shared, blocks, pure=False,
                key=f"calaudit-kept-{self.token}-{k}-{self.generation}")

    def release(self) -> None:
        """Drop the kept blocks and the shared values from the cluster."""
        shards.forget(self.client, [f for f in self.futures if f is not None]
                      + [self.shared])
