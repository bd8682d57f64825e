"""The blocks of a block-pair pass placed on a Dask cluster
(:meth:`calaudit.scale.dask_executor.DaskExecutor.map_pairs`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from calaudit.scale.shards import forget, lost_keys

#: Times a lost block is placed again until the scheduler reports a worker holding it.
PLACE_ATTEMPTS = 20
#: Seconds the client waits to learn which placed blocks a lost worker held.
LOST_DATA_WAIT = 3.0


class PairBlocks:
    """Block ``k`` (its ``detached()`` value) scattered to worker ``k mod N`` of the
    workers in address order, one copy, released when the last pair using it is folded;
    a block lost with its worker is placed again from the client's copy (:meth:`restore`)."""

    def __init__(self, client: Any, blocks: Sequence[Any], pairs: list[tuple[int, int]],
                 on_place: Callable[[Any], None] = lambda value: None) -> None:
        self.client, self.on_place = client, on_place
        self.blocks = blocks
        self.uses = [0] * len(blocks)
        for i, j in pairs:
            self.uses[i] += 1
            self.uses[j] += i != j
        self.futures: dict[int, Any] = {}
        #: times blocks were placed again (part of the task keys, so a resubmitted pair
        #: never reuses the key of the cancelled one)
        self.generation = 0
        for k in range(len(blocks)):
            if self.uses[k]:
                self._place(k)

    def _place(self, k: int, anywhere: bool = False) -> None:
        value = self.blocks[k]
        value = value.detached() if hasattr(value, "detached") else value
        workers = [] if anywhere else sorted(self.client.scheduler_info().get("workers", {}))
        target = [workers[k % len(workers)]] if workers else None  # None: Dask chooses
        self.futures[k] = self.client.scatter(value, workers=target, hash=False)
        self.on_place(value)

    def handle(self, k: int) -> Any:
        return self.futures[k]

    def done(self, i: int, j: int) -> None:
        """Pair ``(i, j)`` folded: release the blocks it was the last user of."""
        for k in {i, j}:
            self.uses[k] -= 1
            if self.uses[k] == 0:
                forget(self.client, [self.futures.pop(k)])

    def restore(self, wait: bool = False, force: set[int] | None = None) -> set[int]:
        """Place again every block whose data the cluster lost (:meth:`_lost`), or the
        blocks ``force``; the set of those blocks. ``wait``: a task was cancelled, so give
        the scheduler a few seconds to report which blocks went with the worker."""
        if force is not None:
            lost = {k for k in force if k in self.futures}
        else:
            deadline = time.monotonic() + (LOST_DATA_WAIT if wait else 0.0)
            lost = self._lost()
            while not lost and time.monotonic() < deadline:
                time.sleep(0.1)
                lost = self._lost()
        if lost:
            self.generation += 1
            missing = sorted(lost)
            for _ in range(PLACE_ATTEMPTS):  # a worker dying now may take a copy along
                for k in missing:
                    self._place(k, anywhere=True)  # not an address that may be gone
                holders = self.client.who_has([self.futures[k] for k in missing])
                missing = [k for k in missing if not holders.get(self.futures[k].key)]
                if not missing:
                    break
                time.sleep(0.5)
        return lost

    def _lost(self) -> set[int]:
        """Blocks the cluster no longer holds (:func:`shards.lost_keys`)."""
        try:
            gone = lost_keys(self.client, self.futures.values())
        except Exception:  # noqa: BLE001 - no scheduler: the caller reports the failure
            gone = {future.key for future in self.futures.values()
                    if getattr(future, "status", "finished") != "finished"}
        return {k for k, future in self.futures.items() if future.key in gone}

    def release_all(self) -> None:
        forget(self.client, list(self.futures.values()))
        self.futures.clear()
