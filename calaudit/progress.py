"""Progress reporting for long steps, without knowing how (or whether) it is shown.

A stage or estimator wraps a long loop in :func:`task` and calls the returned function
as work gets done::

    from calaudit import progress

    with progress.task("skce_consistency", total=n_resamples) as advance:
        for block in blocks:
            ...
            advance(len(block))

By default nothing is shown (the Python API stays silent). The command line installs a
reporter with :func:`reporting` (a rich progress bar on stderr when stderr is a terminal,
plain log lines with ``--verbose`` otherwise). The reporter lives in a context variable,
so concurrent audits in one process do not share it. Standard library only.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

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


def current() -> Reporter:
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
    reporter = current()
    handle = reporter.start(name, total)

    def advance(amount: int = 1) -> None:
        reporter.advance(handle, amount)

    try:
        yield advance
    finally:
        reporter.stop(handle)


def note(message: str) -> None:
    """A one-line remark for verbose output (shown only by reporters that log)."""
    current().note(message)
