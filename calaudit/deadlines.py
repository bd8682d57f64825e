"""A bound on a wait that the waited-for library does not bound itself: :func:`within` runs a
call in a daemon thread and raises :class:`DeadlineExceeded` after the given seconds.
Standard library only."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class DeadlineExceeded(TimeoutError):
    """A call that did not complete within its deadline."""


def within(seconds: float, call: Callable[[], T]) -> T:
    """``call()``, waited for at most ``seconds``; its exception, if any, is raised here."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="calaudit-deadline", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise DeadlineExceeded(f"no answer within {seconds:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
