"""Shared pieces of the configuration sections: validation helpers and the names of the
multiple-testing methods."""

from __future__ import annotations

import math

from calaudit.exceptions import ConfigError

#: Multiple-testing adjustments (:func:`calaudit.inference.multitest.adjust_pvalues`).
MULTIPLE_TESTING = ("holm", "bonferroni", "fdr_bh", "none")


def check(condition: bool, message: str) -> None:
    """Raise :class:`ConfigError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ConfigError(message)


def check_limits(instance: object, section: str) -> None:
    """Check the fields of ``instance`` (the ``section`` of the settings, ``""`` at the
    top) that have a documented range in :mod:`calaudit.limits`."""
    from calaudit import limits

    prefix = f"{section}." if section else ""
    for ranges, problem_of in ((limits.COUNTS, limits.count_problem),
                               (limits.SCALES, limits.scale_problem)):
        for key in ranges:
            name = key[len(prefix):]
            if key.startswith(prefix) and "." not in name and hasattr(instance, name):
                problem = problem_of(key, getattr(instance, name))
                check(problem is None, problem or "")


def finite_or_none(value: object, name: str) -> None:
    """``value`` is ``None`` or a finite number (not a boolean)."""
    check(value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                            and math.isfinite(value)),
          f"{name} must be a finite number; got {value!r}")


def positive(value: float | None) -> bool:
    """``None`` or a finite number > 0."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                             and math.isfinite(value) and value > 0)
