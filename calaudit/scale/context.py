"""The executor chosen for a context (:func:`calaudit.scale.using`), as a context
variable, and :func:`in_task`, which every executor wraps its tasks in."""

from __future__ import annotations

import contextvars
from typing import Any

#: The executor chosen by the innermost ``using`` (None: the default; :data:`IN_TASK`:
#: inside a task of a reduction).
CHOSEN: contextvars.ContextVar[Any] = contextvars.ContextVar("calaudit_executor",
                                                              default=None)
#: The mark of a reduction's task: reductions started there run in the task, serially.
IN_TASK = object()


def in_task(call: Any, *args: Any, **kwargs: Any) -> Any:
    """``call(*args, **kwargs)`` as a task of a reduction: a reduction it starts runs in
    the task, one range after another (no pool or cluster inside a task)."""
    token = CHOSEN.set(IN_TASK)
    try:
        return call(*args, **kwargs)
    finally:
        CHOSEN.reset(token)
