"""Waiting for a Dask task and reading how it failed: a failure of the cluster is a
:class:`ClusterError` naming the task; any other exception stays what it is."""

from __future__ import annotations

import time
from typing import Any

from calaudit.exceptions import ClusterError

#: Seconds between two looks at the cluster while a task's result is awaited.
POLL_SECONDS = 5.0
#: Seconds a task waits for a worker when every worker was lost at once.
WAIT_SECONDS = 60


def await_result(client: Any, future: Any) -> Any:
    """``future.result()``, but a cluster that has had no worker at all for
    ``WAIT_SECONDS`` (every worker lost for good: tasks would wait forever) is one
    :class:`ClusterError`."""
    alone_since: float | None = None
    while not finished(future):
        if client.nthreads():
            alone_since = None
        elif alone_since is None:
            alone_since = time.monotonic()
        elif time.monotonic() - alone_since > WAIT_SECONDS:
            raise ClusterError(f"the Dask cluster has had no worker for "
                               f"{WAIT_SECONDS} s: every worker was lost",
                               hint="check that the workers keep running and fit in their "
                                    "memory (dask.memory_limit)")
    return future.result()


def awaited(client: Any, future: Any, name: str, start: int, stop: int,
            pair: bool = False) -> Any:
    """The task's result (:func:`await_result`), released on the cluster; a failure of the
    cluster is one :class:`ClusterError` naming the task (:func:`cluster_failure`), any
    other exception is raised as it is."""
    try:
        part = await_result(client, future)
    except Exception as exc:  # noqa: BLE001 - cluster failures become one line
        failure = cluster_failure(exc, name, start, stop, pair=pair)
        if failure is exc:
            raise
        raise failure from exc
    future.release()
    return part


def finished(future: Any) -> bool:
    """Whether the task ended within ``POLL_SECONDS`` (its result is not fetched)."""
    try:
        future.exception(timeout=POLL_SECONDS)
    except TimeoutError:
        return False
    return True


def cluster_failure(exc: Exception, name: str, start: int, stop: int,
                     pair: bool = False) -> Exception:
    """A :class:`ClusterError` for failures of the cluster (workers that keep dying,
    workers without calaudit, a lost scheduler); any other exception (a bug in the
    partial) is returned as it is. ``pair``: ``start, stop`` are the blocks of a pair."""
    kind = type(exc).__name__
    where = (f"the {name} task on row blocks {start:,} and {stop:,}" if pair
             else f"the {name} task on rows {start:,}-{stop:,}")
    lost = "lost dependencies" in str(exc)
    if lost or kind == "KilledWorker":
        what = (f"lost the data it reads with their worker(s) ({kind}: {exc})" if lost
                else f"was lost with its worker too many times ({exc})")
        return ClusterError(f"{where} {what}", hint="the workers may run out of memory: "
                            "raise dask.memory_limit or give them more memory")
    if isinstance(exc, ImportError):
        return ClusterError(f"{where} failed: a worker cannot import calaudit ({exc})",
                            hint="install the same calaudit version on every worker")
    if kind in ("CancelledError", "FutureCancelledError", "CommClosedError") or isinstance(
            exc, OSError):
        return ClusterError(f"{where}: lost the connection to the Dask scheduler ({kind}: "
                            f"{exc})", hint="check that the scheduler is still running")
    return exc
