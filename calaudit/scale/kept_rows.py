"""Per-range results kept where they were computed, read by later reductions as a row
source (:func:`calaudit.scale.kept`).

On Dask, the rows of ``per`` consecutive fixed ranges are made by one task on a worker
(:class:`TaskShards`), range by range: the client never holds them, a later reduction's
task receives the blocks covering its range (as placed row blocks,
:mod:`calaudit.scale.shards`), and a
block lost with its worker is made again by Dask from its task (the partial, the range
and the small shared values, themselves made by a task from the client's copy).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from calaudit.scale import shards
from calaudit.scale.blocks import stack_rows
from calaudit.scale.context import in_task
from calaudit.scale.shards import identity
from calaudit.scale.sources import ArrayRows


def _block(partial: Any, ranges: list[tuple[int, int]], shared: Mapping[str, Any],
           blocks: Mapping[str, Mapping[str, Any]]) -> ArrayRows:
    """One kept block: the partial's rows of the consecutive ``ranges``, computed range
    by range, as an :class:`ArrayRows` (the sources of ``blocks`` rebuilt from the placed
    blocks they received)."""
    rows = {name: shards.joined(spec["n"], spec["blocks"]) for name, spec in blocks.items()}
    parts = (in_task(partial, start, stop, **shared, **rows) for start, stop in ranges)
    return ArrayRows(stack_rows(parts, rows=ranges[-1][1] - ranges[0][0]))


class TaskShards(shards.Shards):
    """Client-side handle of the per-range results of ``partial`` kept on the workers:
    block ``k`` is the future of the task that made rows ``bounds[k]`` (``per``
    consecutive ranges of :func:`calaudit.scale.task_ranges`, the last block shorter).
    Given in ``shared`` to a reduction it is read as placed row blocks."""

    reads_own_rows = True  # made by tasks: passed to reductions as it is, never scattered

    def __init__(self, client: Any, partial: Any, ranges: Sequence[tuple[int, int]],
                 shared: Mapping[str, Any], per: int = 1) -> None:
        self.client, self.partial, self.source = client, partial, None
        self.n = int(ranges[-1][1])
        step = int(ranges[0][1] - ranges[0][0])
        if [tuple(r) for r in ranges] != [(lo, min(self.n, lo + step))
                                          for lo in range(0, self.n, step)]:
            raise ValueError("kept results need the fixed ranges of task_ranges(n, rows)")
        self.ranges = [[(int(a), int(b)) for a, b in ranges[i:i + per]]
                       for i in range(0, len(ranges), per)]
        self.rows = step * per
        self.bounds = [(run[0][0], run[-1][1]) for run in self.ranges]
        self.sharded = {name: value for name, value in shared.items()
                        if isinstance(value, shards.Shards)}
        plain = {name: value for name, value in shared.items() if name not in self.sharded}
        self.token = uuid.uuid4().hex[:12]
        self.shared = client.submit(identity, plain, pure=False,
                                    key=f"calaudit-kept-shared-{self.token}")
        self.futures: list[Any] = [None] * len(self.bounds)
        self.nbytes = 0
        self.place(range(len(self.bounds)))

    def __repr__(self) -> str:
        return (f"TaskShards({getattr(self.partial, '__name__', 'partial')}, "
                f"{len(self.bounds)} blocks)")

    def place(self, indices: Iterable[int]) -> None:
        """Submit the tasks making blocks ``indices``."""
        for k in indices:
            lo, hi = self.bounds[k]
            blocks = {name: value.argument(lo, hi) for name, value in self.sharded.items()}
            self.futures[k] = self.client.submit(
                _block, self.partial, self.ranges[k], self.shared, blocks, pure=False,
                key=f"calaudit-kept-{self.token}-{k}")

    def release(self) -> None:
        """Drop the kept blocks and the shared values from the cluster."""
        shards.forget(self.client, [f for f in self.futures if f is not None]
                      + [self.shared])
