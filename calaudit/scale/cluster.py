"""The executor chosen by the ``[dask]`` settings, and its clean shutdown.

Nothing set: ``None`` (this process); ``scheduler``: a client of that running cluster;
``workers``: a local cluster bound to 127.0.0.1 whose scheduler and single-threaded
workers (each with its nanny) run in processes of their own, so that this process only plans
and adds up, as it does with a remote cluster. Every wait is bounded by ``timeout``, and
each failure of the cluster, before or during the audit, is one :class:`ClusterError` line.
The client and the local cluster are closed when the ``with`` block exits, however it exits;
Dask's own log lines are held back while it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import Any

from calaudit._version import __version__
from calaudit.deadlines import within
from calaudit.exceptions import CalauditError, ClusterError
from calaudit.scale.dask_executor import DaskExecutor
from calaudit.scale.threads import usable_cores

#: Run by each local worker as it starts: Ctrl-C reaches the whole process group, and the
#: workers leave it to this process, which closes the cluster in order.
IGNORE_INTERRUPTS = "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)"
#: Loggers (and their children) whose lines would break the one-line error rule: Dask's
#: and those of the event loop it runs on.
DASK_LOGGERS = ("distributed", "dask", "tornado", "asyncio")
#: Top-level modules whose exceptions are failures of the cluster, not of calaudit.
#: Run first by a local cluster's scheduler and nannies (and so inherited by the workers):
#: the process leaves calaudit's process group (Ctrl-C in a terminal reaches that group;
#: calaudit's process then closes the cluster in order, and no nanny restarts a worker being
#: closed), writes nothing to the terminal (calaudit reports a failure of the cluster in one
#: line), and ends when its parent (calaudit's process) has ended, even one killed before it
#: could close the cluster.
CLUSTER_PROCESS_START = """import os, threading, time
try:
    os.setsid()
except OSError:
    pass
os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
parent = os.getppid()
def _watch():
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)
threading.Thread(target=_watch, name="ends-with-parent", daemon=True).start()
"""
#: Whether a local cluster's scheduler and nannies can run as processes of their own
#: (``distributed``'s subprocess deployment has no Windows support).
SUBPROCESS_DEPLOYMENT = sys.platform != "win32"
#: The environment variable through which Dask's processes inherit their parent's config.
INHERIT_CONFIG = "DASK_INTERNAL_INHERIT_CONFIG"
CLUSTER_MODULES = frozenset({"distributed", "dask", "tornado", "msgpack"})
#: The polling of a local cluster's scheduler, nannies and workers: about a fifth of the CPU
#: of Dask's defaults.
LOCAL_POLLING = {
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.memory.monitor-interval": "500ms",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.client.scheduler-info-interval": "10s",
    "distributed.scheduler.active-memory-manager.interval": "10s",
}


@contextlib.contextmanager
def open_executor(settings: Any, warn: Callable[[str], None] | None = None
                  ) -> Iterator[DaskExecutor | None]:
    """The executor of the ``[dask]`` settings (a
    :class:`~calaudit.settings.sections.DaskConfig`, or ``None``) for the block;
    ``warn`` receives the one-line warnings (more workers asked for than cores)."""
    if settings is None or (settings.scheduler is None and settings.workers is None):
        yield None
        return
    label = (f"--dask {settings.scheduler}" if settings.scheduler is not None
             else f"--workers {settings.workers}")
    distributed = _import_distributed(label)
    with _quiet_dask(), contextlib.ExitStack() as stack:
        if settings.scheduler is not None:
            _probe(distributed, settings.scheduler, settings.timeout, label)
            client = _connect(distributed, settings.scheduler, settings.timeout, label)
        else:
            folder = stack.enter_context(tempfile.TemporaryDirectory(
                prefix="calaudit-dask-", ignore_cleanup_errors=True))
            # the scheduler's and the workers' scratch space: removed with the folder
            stack.enter_context(_dask_config({"temporary-directory": folder,
                                              **LOCAL_POLLING}))
            workers = capped("--workers", settings.workers, warn)
            cluster = _local_cluster(distributed, settings, workers, folder, label)
            stack.callback(_close, cluster)
            client = _connect(distributed, cluster, settings.timeout, label)
        stack.callback(_close, client)
        check_workers(client, settings.timeout, label)
        with cluster_errors(label):
            yield DaskExecutor(client)


def capped(option: str, asked: int, warn: Callable[[str], None] | None = None) -> int:
    """``asked`` processes or threads (``option`` names the setting), at most one per
    usable core: more would only compete for the same cores, hold as many tasks' memory at
    once, and start slower than the timeout allows."""
    cores = usable_cores()
    if asked <= cores:
        return asked
    if warn is not None:
        warn(f"{option} {asked}: this machine has {cores} usable core(s); using {cores}")
    return cores


def _dask_config(values: dict[str, Any]) -> Any:
    import dask

    return dask.config.set(values)


def _import_distributed(label: str) -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise ClusterError(f"{label}: Dask is not installed ({exc})",
                           hint="pip install 'calaudit[dask]'") from None
    return distributed


def _probe(distributed: Any, address: str, timeout: float, label: str) -> None:
    """Connect to ``address`` and wait for the scheduler's handshake, all within
    ``timeout`` seconds (Dask's own connect waits for the handshake without a bound, so a
    port that accepts and never answers would hang the client)."""
    async def handshake() -> None:
        from distributed.comm import connect
        from distributed.security import Security

        comm = await connect(address, timeout=timeout,
                             **Security().get_connection_args("client"))
        await comm.close()

    try:
        # Dask's connect gives up after ``timeout`` with its reason (refused, unknown
        # host); the extra second only catches a handshake that never comes
        asyncio.run(asyncio.wait_for(handshake(), timeout + 1.0))
    except Exception as exc:  # noqa: BLE001 - any failure to connect is the user's setup
        reason = (f"no answer within {timeout:g} s" if _timed_out(exc) else _reason(exc))
    else:
        return
    _collect_quietly()
    raise _unreachable(label, reason)


def _timed_out(exc: BaseException) -> bool:
    return isinstance(exc, (TimeoutError, asyncio.TimeoutError)) or "Timeout" in type(
        exc).__name__


def _unreachable(label: str, reason: str) -> ClusterError:
    return ClusterError(
        f"{label}: cannot reach the scheduler ({reason})",
        hint="check the address (as 'dask scheduler' prints it, e.g. tcp://10.0.0.5:8786) "
             "and that the scheduler runs and is reachable from here; dask.timeout sets "
             "the wait")


def _connect(distributed: Any, address: Any, timeout: float, label: str) -> Any:
    """A client of ``address`` (a scheduler address or a local cluster)."""
    try:
        return distributed.Client(address, timeout=f"{timeout}s", set_as_default=False)
    except Exception as exc:  # noqa: BLE001 - any failure to connect is the user's setup
        reason = _reason(exc)
    # the half-built client is freed here (its __del__ may complain): quietly
    _collect_quietly()
    if not isinstance(address, str):  # the local cluster this run started
        raise ClusterError(f"{label}: cannot connect to the local Dask cluster ({reason})",
                           hint="raise dask.timeout (seconds), or use fewer --workers on a "
                                "busy machine")
    raise _unreachable(label, reason)


def check_workers(client: Any, timeout: float, label: str) -> None:
    """At least one worker within ``timeout`` seconds, and every worker running this
    calaudit version (checked on the workers, within ``timeout`` too)."""
    try:
        client.wait_for_workers(1, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - no worker came: the cluster's setup
        raise ClusterError(
            f"{label}: no Dask worker within {timeout:g} s ({_reason(exc, 120)})",
            hint="start workers for this scheduler ('dask worker ADDRESS'), check that "
                 "they fit in their memory limit (dask.memory_limit), or raise "
                 "dask.timeout") from None
    try:
        versions = within(timeout, lambda: client.run(_worker_version, on_error="return"))
    except Exception as exc:  # noqa: BLE001 - the workers do not answer
        raise ClusterError(f"{label}: the workers did not answer within {timeout:g} s "
                           f"({_reason(exc, 120)})",
                           hint="check that the workers run and are not overloaded; "
                                "dask.timeout sets the wait") from None
    for worker, version in sorted(versions.items()):
        if version != __version__:
            found = (f"cannot import calaudit ({_reason(version, 120)})"
                     if isinstance(version, BaseException) else f"runs calaudit {version}")
            raise ClusterError(
                f"{label}: worker {worker} {found}; this process runs calaudit "
                f"{__version__}",
                hint=f"install calaudit {__version__} with its dask extra on every worker "
                     f"(pip install 'calaudit[dask]=={__version__}')")


def _worker_version() -> str:
    """Run on each worker: the calaudit version it imports."""
    from calaudit import _version

    return str(_version.__version__)


@contextlib.contextmanager
def cluster_errors(label: str) -> Iterator[None]:
    """Inside the block, a failure of the cluster (an exception of Dask's modules, or an
    ``OSError``/timeout raised in Dask's code: a worker lost for good, the scheduler gone)
    is one :class:`ClusterError` line; errors of the input and bugs pass unchanged."""
    try:
        yield
    except CalauditError:
        raise
    except Exception as exc:  # noqa: BLE001 - sorted by cluster_failure
        if not cluster_failure(exc):
            raise
        raise ClusterError(f"{label}: the Dask cluster failed during the audit "
                           f"({_reason(exc)})",
                           hint="check that the scheduler and the workers keep running and "
                                "fit in their memory (dask.memory_limit)") from None


def cluster_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure of the cluster rather than of calaudit's code."""
    if any(cls.__module__.split(".")[0] in CLUSTER_MODULES for cls in type(exc).__mro__):
        return True
    if not isinstance(exc, (OSError, TimeoutError, ImportError)):
        return False
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_globals.get("__name__", ""))
        tb = tb.tb_next
    return any(name.split(".")[0] in CLUSTER_MODULES for name in frames)


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


def _local_cluster(distributed: Any, settings: Any, workers: int, folder: str,
                   label: str) -> Any:
    """``workers`` single-threaded worker processes with ``memory_limit`` each, their
    scratch files in ``folder``; the scheduler and the nannies in processes of their own
    (``distributed``'s subprocess deployment), out of this process's group (Ctrl-C in a
    terminal reaches this process, which closes them in order), silent, ending with this
    process however it ends (:data:`CLUSTER_PROCESS_START`). They start with this process's
    Dask config; Ctrl-C while they start is ignored. Interrupted or failed while it starts,
    the part that started is closed (no process outlives the run). On Windows, which has
    no subprocess deployment, the scheduler and the nannies run in this process."""
    from distributed.deploy.subprocess import SubprocessScheduler, SubprocessWorker

    start = [CLUSTER_PROCESS_START]
    scheduler = {"cls": SubprocessScheduler, "options": {
        "timeout": settings.timeout, "scheduler_kwargs": {
            "host": "127.0.0.1", "port": 0, "scheduler_file": f"{folder}/scheduler.json",
            # no dashboard; the scheduler's HTTP endpoint (health) on a free port
            "dashboard": False, "dashboard_address": "127.0.0.1:0", "preload": start}}}
    worker = {"cls": SubprocessWorker, "options": {
        "worker_class": "distributed.Nanny", "worker_kwargs": {
            "host": "127.0.0.1", "nthreads": 1, "memory_limit": settings.memory_limit,
            "local_directory": folder, "silence_logs": logging.CRITICAL,
            "death_timeout": settings.timeout, "preload_nanny": start,
            "preload": [IGNORE_INTERRUPTS]}}}
    try:
        if not SUBPROCESS_DEPLOYMENT:  # the scheduler and the nannies in this process
            return distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True,
                memory_limit=settings.memory_limit, host="127.0.0.1",
                local_directory=folder, dashboard_address=None,
                scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                preload=[IGNORE_INTERRUPTS], silence_logs=logging.CRITICAL,
                timeout=f"{settings.timeout}s")
        with _children_setup():
            return distributed.SpecCluster(
                workers=dict.fromkeys(range(workers), worker), scheduler=scheduler,
                worker=worker, name="calaudit", silence_logs=logging.CRITICAL)
    except BaseException as exc:  # noqa: BLE001 - the machine's limits, Ctrl-C, SIGTERM
        _close_started(distributed)
        if not isinstance(exc, Exception):
            raise
        reason = _reason(exc)
    _collect_quietly()
    raise ClusterError(f"{label}: cannot start a local Dask cluster ({reason})",
                       hint="fewer --workers, a smaller dask.memory_limit, or a longer "
                            "dask.timeout")


@contextlib.contextmanager
def _children_setup() -> Iterator[None]:
    """While the block starts the cluster's processes: they inherit this process's Dask
    config (with Dask's log lines held back, and none on a pipe nobody reads) and
    Ctrl-C ignored (an ignored signal stays ignored across ``exec``; Ctrl-C reaches the
    whole process group, and this process closes the cluster)."""
    import dask

    config = {**dask.config.config, "logging": dict.fromkeys(DASK_LOGGERS, "critical")}
    saved = os.environ.get(INHERIT_CONFIG)
    os.environ[INHERIT_CONFIG] = dask.config.serialize(config)
    main = threading.current_thread() is threading.main_thread()
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        yield
    finally:
        if main:
            signal.signal(signal.SIGINT, handler)
        if saved is None:
            os.environ.pop(INHERIT_CONFIG, None)
        else:
            os.environ[INHERIT_CONFIG] = saved


def _close_started(distributed: Any) -> None:
    """Close every local cluster of this process that is not closed yet (one whose start
    was interrupted: the constructor never returned it)."""
    from distributed.deploy.spec import SpecCluster

    for started in list(getattr(SpecCluster, "_instances", ())):
        if str(getattr(started, "status", "")).rsplit(".", 1)[-1] != "closed":
            _close(started)


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
