"""Shared pieces of the configuration sections: validation helpers and the names of the
multiple-testing methods."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from calaudit.exceptions import ConfigError

#: Multiple-testing adjustments (:func:`calaudit.inference.multitest.adjust_pvalues`).
MULTIPLE_TESTING = ("holm", "bonferroni", "fdr_bh", "none")


def check(condition: bool, message: str) -> None:
    """Raise :class:`ConfigError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ConfigError(message)


def check_limits(instance: Any, section: str) -> None:
    """Check the fields of the dataclass ``instance`` (the ``section`` of the settings,
    ``""`` at the top) that have a documented range in :mod:`calaudit.limits`; ``None`` is
    valid only for a field whose default is ``None``."""
    from calaudit import limits

    prefix = f"{section}." if section else ""
    fields = instance.__dataclass_fields__
    for ranges, problem_of in ((limits.COUNTS, limits.count_problem),
                               (limits.SCALES, limits.scale_problem)):
        for key in ranges:
            name = key[len(prefix):]
            if key.startswith(prefix) and "." not in name and name in fields:
                problem = problem_of(key, getattr(instance, name),
                                     optional=fields[name].default is None)
                check(problem is None, problem or "")


def check_choice(value: object, choices: Sequence[str], name: str) -> None:
    """``value`` is one of ``choices``."""
    check(value in choices, f"{name} must be one of {', '.join(choices)}; got {value!r}")


def finite_or_none(value: object, name: str) -> None:
    """``value`` is ``None`` or a finite number (not a boolean)."""
    check(value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                            and math.isfinite(value)),
          f"{name} must be a finite number; got {value!r}")


def positive(value: float | None) -> bool:
    """``None`` or a finite number > 0."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                             and math.isfinite(value) and value > 0)
