"""The executor chosen by the ``[dask]`` settings, and its clean shutdown.

- nothing set: ``None`` (the audit runs its reductions in this process);
- ``scheduler`` (``--dask ADDRESS``): a client of that running cluster; a scheduler that
  does not answer within ``timeout`` seconds is one :class:`ClusterError` line (exit 2)
  before anything is read or written;
- ``workers`` (``--workers N``): a ``distributed.LocalCluster`` of N single-threaded
  worker processes, each with ``memory_limit``, bound to 127.0.0.1, no dashboard.

The client, and the local cluster with its worker processes, are closed when the
``with`` block exits, whether it ends normally, by an error or by Ctrl-C. While the
block runs, Dask's own log lines are held back (an error must stay one line on stderr).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import sys
from collections.abc import Iterator
from typing import Any

from calaudit.exceptions import ClusterError
from calaudit.execution.dask_executor import DaskExecutor

#: Run by each local worker process as it starts (a Dask "preload" script): Ctrl-C in a
#: terminal reaches the whole process group, and the workers leave it to this process,
#: which then closes the cluster and stops them in order.
IGNORE_INTERRUPTS = "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)"
#: Loggers (and their children) whose lines would break the one-line error rule: Dask's
#: and those of the event loop it runs on.
DASK_LOGGERS = ("distributed", "dask", "tornado", "asyncio")


@contextlib.contextmanager
def open_executor(settings: Any) -> Iterator[DaskExecutor | None]:
    """The executor of the ``[dask]`` settings (a
    :class:`~calaudit.settings.sections.DaskConfig`, or ``None``) for the block."""
    if settings is None or (settings.scheduler is None and settings.workers is None):
        yield None
        return
    label = (f"--dask {settings.scheduler}" if settings.scheduler is not None
             else f"--workers {settings.workers}")
    distributed = _import_distributed(label)
    with _quiet_dask(), contextlib.ExitStack() as stack:
        if settings.scheduler is not None:
            client = _connect(distributed, settings.scheduler, settings.timeout, label)
        else:
            cluster = _local_cluster(distributed, settings, label)
            stack.callback(_close, cluster)
            client = _connect(distributed, cluster, settings.timeout, label)
        stack.callback(_close, client)
        yield DaskExecutor(client)


def _import_distributed(label: str) -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise ClusterError(f"{label}: Dask is not installed ({exc})",
                           hint="pip install 'calaudit[dask]'") from None
    return distributed


def _connect(distributed: Any, address: Any, timeout: float, label: str) -> Any:
    """A client of ``address`` (a scheduler address or a local cluster)."""
    try:
        return distributed.Client(address, timeout=f"{timeout}s", set_as_default=False)
    except Exception as exc:  # noqa: BLE001 - any failure to connect is the user's setup
        reason = _reason(exc)
    # the half-built client is freed here (its __del__ may complain): quietly
    _collect_quietly()
    raise ClusterError(
        f"{label}: cannot reach the scheduler ({reason})",
        hint="check the address (as 'dask scheduler' prints it, e.g. tcp://10.0.0.5:8786) "
             "and that the scheduler runs and is reachable from here; dask.timeout sets "
             "the wait")


def _reason(exc: BaseException, limit: int = 200) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _collect_quietly() -> None:
    """Run the garbage collector with unraisable exceptions (``__del__``) ignored."""
    hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: None
    try:
        gc.collect()
    finally:
        sys.unraisablehook = hook


def _local_cluster(distributed: Any, settings: Any, label: str) -> Any:
    """``workers`` single-threaded worker processes with ``memory_limit`` each."""
    try:
        return distributed.LocalCluster(
            n_workers=settings.workers, threads_per_worker=1, processes=True,
            memory_limit=settings.memory_limit, host="127.0.0.1",
            # no dashboard; the scheduler's HTTP endpoint (health) on a free port
            dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            preload=[IGNORE_INTERRUPTS], silence_logs=logging.CRITICAL,
            timeout=f"{settings.timeout}s")
    except Exception as exc:  # noqa: BLE001 - the machine's limits, not a bug
        reason = _reason(exc)
    _collect_quietly()
    raise ClusterError(f"{label}: cannot start a local Dask cluster ({reason})",
                       hint="fewer --workers, a smaller dask.memory_limit, or a longer "
                            "dask.timeout")


def _close(resource: Any) -> None:
    """Close a client or cluster; a failure while closing does not hide the outcome
    (nor is it retried, noisily, by Dask's own exit hook)."""
    try:
        resource.close()
    except Exception:  # noqa: BLE001 - e.g. a worker that died of the same Ctrl-C
        with contextlib.suppress(Exception):
            type(resource)._instances.discard(resource)


@contextlib.contextmanager
def _quiet_dask() -> Iterator[None]:
    """Dask's loggers silenced for the block, their levels restored after (children
    too: ``distributed.client`` has its own level in Dask's logging config)."""
    names = [name for name in list(logging.Logger.manager.loggerDict)
             if name.split(".")[0] in DASK_LOGGERS]
    loggers = [logging.getLogger(name) for name in {*DASK_LOGGERS, *names}]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
