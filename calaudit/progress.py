"""Progress reporting for long steps, without knowing how (or whether) it is shown::

    with progress.task("skce_consistency", total=n_resamples) as advance:
        for block in blocks:
            advance(len(block))

Nothing is shown by default. The command line installs a reporter with :func:`reporting`;
``run_audit(..., progress=True | callback)`` goes through :func:`reporter_for`. The reporter
lives in a context variable, so concurrent audits do not share it. Standard library only."""

from __future__ import annotations

import contextvars
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TextIO

Advance = Callable[..., None]


class Reporter(Protocol):
    """What a progress display implements. ``start`` returns a handle for the others."""

    def start(self, name: str, total: int | None) -> object: ...

    def advance(self, handle: object, amount: int) -> None: ...

    def stop(self, handle: object) -> None: ...

    def note(self, message: str) -> None: ...


class NullReporter:
    """Shows nothing (the default)."""

    def start(self, name: str, total: int | None) -> object:
        return None

    def advance(self, handle: object, amount: int) -> None:
        return None

    def stop(self, handle: object) -> None:
        return None

    def note(self, message: str) -> None:
        return None


_NULL = NullReporter()
_REPORTER: contextvars.ContextVar[Reporter | None] = contextvars.ContextVar(
    "calaudit_progress_reporter", default=None)


def current_reporter() -> Reporter:
    """The reporter in effect (:class:`NullReporter` unless one was installed)."""
    return _REPORTER.get() or _NULL


@contextmanager
def reporting(reporter: Reporter) -> Iterator[Reporter]:
    """Install ``reporter`` for the duration of the block."""
    token = _REPORTER.set(reporter)
    try:
        yield reporter
    finally:
        _REPORTER.reset(token)


@contextmanager
def task(name: str, total: int | None = None) -> Iterator[Advance]:
    """A long step named ``name`` with ``total`` units of work (``None``: unknown).

    Yields ``advance(amount=1)``. The step is closed when the block exits, normally or not.
    """
    reporter = current_reporter()
    handle = reporter.start(name, total)

    def advance(amount: int = 1) -> None:
        reporter.advance(handle, amount)

    try:
        yield advance
    finally:
        reporter.stop(handle)


def note(message: str) -> None:
    """A one-line remark for verbose output (shown only by reporters that log)."""
    current_reporter().note(message)


@dataclass(frozen=True)
class ProgressEvent:
    """One progress report to a callback: ``task`` (``"audit"``, a stage or a loop inside one),
    its nesting ``depth``, ``completed`` of ``total`` units (``None``: unknown), ``done`` on
    the last event and ``elapsed`` seconds."""

    task: str
    completed: int
    total: int | None
    done: bool
    depth: int
    elapsed: float


class CallbackReporter:
    """A reporter that turns every start, step and stop into a :class:`ProgressEvent`."""

    def __init__(self, callback: Callable[[ProgressEvent], Any]) -> None:
        self.callback = callback
        self._open: list[list[Any]] = []

    def start(self, name: str, total: int | None) -> object:
        handle = [name, total, 0, len(self._open), time.perf_counter()]
        self._open.append(handle)
        self._emit(handle, done=False)
        return handle

    def advance(self, handle: object, amount: int) -> None:
        handle[2] += amount  # type: ignore[index]
        self._emit(handle, done=False)

    def stop(self, handle: object) -> None:
        if handle in self._open:
            self._open.remove(handle)
        self._emit(handle, done=True)

    def note(self, message: str) -> None:
        return None

    def _emit(self, handle: Any, done: bool) -> None:
        name, total, completed, depth, started = handle
        self.callback(ProgressEvent(name, completed, total, done, depth,
                                    time.perf_counter() - started))


class StageLines:
    """``progress=True``: one line per finished stage, ``calaudit: [3/8] skce (2.1 s)``."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream
        self.stages = 0
        self.finished = 0

    def __call__(self, event: ProgressEvent) -> None:
        if event.depth == 0 and event.completed == 0 and not event.done:
            self.stages, self.finished = event.total or 0, 0
        elif event.depth == 1 and event.done:
            self.finished += 1
            print(f"calaudit: [{self.finished}/{self.stages}] {event.task} "
                  f"({event.elapsed:.1f} s)", file=self.stream or sys.stderr, flush=True)


def reporter_for(progress: bool | Callable[[ProgressEvent], Any] | Reporter | None
                 ) -> Reporter | None:
    """The reporter for ``run_audit``'s ``progress`` argument: ``False``/``None`` (none:
    keep whatever is installed, silent by default), ``True`` (:class:`StageLines` on
    stderr), a callable (:class:`CallbackReporter`) or a :class:`Reporter`."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return CallbackReporter(StageLines())
    if all(hasattr(progress, name) for name in ("start", "advance", "stop", "note")):
        return progress  # type: ignore[return-value]
    if callable(progress):
        return CallbackReporter(progress)
    raise TypeError("progress must be True, False, a callable taking a ProgressEvent or a "
                    f"progress reporter; got {type(progress).__name__}")
