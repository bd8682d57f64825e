"""Read a saved JSON result for ``calaudit report`` and check its shape.

Only what the report needs is checked: a JSON object with ``schema_version`` 1 and the
top-level sections of ``docs/result-schema.md`` with the right types. Anything wrong is
an :class:`~calaudit.exceptions.InputError` (one line, exit code 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calaudit.data.result_file import read_json_result
from calaudit.exceptions import InputError
from calaudit.results import SCHEMA_VERSION

#: Top-level keys every result has, with their JSON types.
REQUIRED = {"schema_version": int, "calaudit_version": str, "created_at": str,
            "inputs": dict, "data": dict, "config": dict, "metrics": list, "tests": list,
            "verdict": str}
#: Keys that later schema additions fill; absent means empty.
OPTIONAL = {"local": dict, "groups": list, "diagrams": dict, "environment": dict}
TYPE_NAMES = {int: "an integer", str: "a string", dict: "an object", list: "a list"}


def read_result(path: str | Path) -> dict[str, Any]:
    """The result stored at ``path``, validated; missing optional sections are filled
    with empty values."""
    result, _ = read_json_result(path)
    return validate_result(result, str(path))


def validate_result(result: Any, source: str = "result") -> dict[str, Any]:
    """Check the top-level shape of a result dictionary (see :data:`REQUIRED`)."""
    if not isinstance(result, dict):
        raise InputError(f"expected a JSON object, got {type(result).__name__}",
                         source=source, rule="schema")
    version = result.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise InputError(f"schema_version {version!r} is not supported (this calaudit reads "
                         f"version {SCHEMA_VERSION})", source=source, rule="schema_version")
    missing = [key for key in REQUIRED if key not in result]
    if missing:
        raise InputError(f"not a calaudit result: missing {', '.join(missing)}",
                         source=source, rule="schema")
    for key, kind in {**REQUIRED, **OPTIONAL}.items():
        if key in result and not isinstance(result[key], kind):
            raise InputError(f"'{key}' must be {TYPE_NAMES[kind]}", source=source,
                             rule="schema")
    for key in ("metrics", "tests"):
        for i, item in enumerate(result[key]):
            if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                raise InputError(f"'{key}[{i}]' must be an object with a string 'id'",
                                 source=source, rule="schema")
    filled = dict(result)
    for key, kind in OPTIONAL.items():
        filled.setdefault(key, kind())
    return filled
