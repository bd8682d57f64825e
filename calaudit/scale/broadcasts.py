"""The small shared values of a Dask reduction, sent to every worker and sent again when
the cluster loses them (a broadcast is scattered data, which Dask cannot recompute, and a
restarted worker holds no copy): :meth:`Broadcasts.restore`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from calaudit.scale import shards


def scatter(client: Any, shared: Mapping[str, Any]) -> dict[str, Any]:
    """The values of ``shared`` not yet on the cluster (handles, row blocks and sources
    that read their own rows stay as they are) sent to every worker, as ``{name:
    future}``. Scattered as a list, so their keys are fresh: two reductions sharing a name
    would otherwise release each other's."""
    names = [name for name, value in shared.items()
             if not (is_future(value) or isinstance(value, shards.Shards)
                     or getattr(value, "reads_own_rows", False))]
    if not names:
        return {}
    futures = client.scatter([shared[name] for name in names], broadcast=True, hash=False)
    return dict(zip(names, futures))


def is_future(value: Any) -> bool:
    """A ``distributed.Future`` (e.g. a handle of ``DaskExecutor.keep``): passed to the
    tasks as it is, neither scattered again nor released after the reduction."""
    return type(value).__name__ == "Future" and hasattr(value, "key") and hasattr(
        value, "release")


class Broadcasts:
    """The broadcast values of one reduction: ``futures`` (name to the current handle),
    the client's ``values`` to send again, and ``generation``, the times values were sent
    again (part of resubmitted task keys). ``on_send(name, value)`` is called for every
    value sent, the first time and again."""

    def __init__(self, client: Any, shared: Mapping[str, Any],
                 on_send: Callable[[str, Any], None] = lambda name, value: None) -> None:
        self.client, self.on_send = client, on_send
        self.futures = scatter(client, shared)
        self.values = {name: shared[name] for name in self.futures}
        self.generation = 0
        for name in self.futures:
            on_send(name, self.values[name])

    def handles(self) -> list[Any]:
        """The current handles that are cluster futures (what a task depends on)."""
        return [future for future in self.futures.values() if is_future(future)]

    def restore(self, also: Iterable[Any] = ()) -> list[str]:
        """Send again every value no worker holds any more, and the values whose current
        handles are among ``also`` (a task cancelled before the loss showed); the names
        sent (the stale handles are released)."""
        current = self.handles()
        if not current:
            return []
        forced = {getattr(future, "key", None) for future in also}
        gone = shards.lost_keys(self.client, current) | forced
        names = [name for name, future in self.futures.items()
                 if is_future(future) and future.key in gone]
        if names:
            if not self.client.nthreads():  # every worker lost at once: wait for one
                self.client.wait_for_workers(1, timeout=shards.WAIT_SECONDS)
            stale = [self.futures[name] for name in names]
            self.futures.update(scatter(self.client, {n: self.values[n] for n in names}))
            shards.forget(self.client, stale)
            self.generation += 1
            for name in names:
                self.on_send(name, self.values[name])
        return names

    def release(self) -> None:
        """Drop the values from the cluster."""
        shards.forget(self.client, self.handles())
