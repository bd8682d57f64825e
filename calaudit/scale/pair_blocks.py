"""The blocks of a block-pair pass placed on a Dask cluster
(:meth:`calaudit.scale.dask_executor.DaskExecutor.map_pairs`)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from calaudit.scale.shards import forget, held


class PairBlocks:
    """Block ``k`` (its ``detached()`` value) made by a task on the worker Dask chooses,
    one copy, released when the last pair using it is folded;
    a block lost with its worker is made again by Dask from its task
    (:func:`calaudit.scale.shards.held`)."""

    def __init__(self, client: Any, blocks: Sequence[Any], pairs: list[tuple[int, int]],
                 on_place: Callable[[Any], None] = lambda value: None) -> None:
        self.client = client
        self.uses = [0] * len(blocks)
        for i, j in pairs:
            self.uses[i] += 1
            self.uses[j] += i != j
        self.futures: dict[int, Any] = {}
        token = uuid.uuid4().hex[:12]
        for k, value in enumerate(blocks):
            if self.uses[k]:
                value = value.detached() if hasattr(value, "detached") else value
                self.futures[k] = held(client, value, f"calaudit-pair-block-{token}-{k}")
                on_place(value)

    def handle(self, k: int) -> Any:
        return self.futures[k]

    def done(self, i: int, j: int) -> None:
        """Pair ``(i, j)`` folded: release the blocks it was the last user of."""
        for k in {i, j}:
            self.uses[k] -= 1
            if self.uses[k] == 0:
                forget(self.client, [self.futures.pop(k)])

    def release_all(self) -> None:
        forget(self.client, list(self.futures.values()))
        self.futures.clear()
