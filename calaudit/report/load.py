"""Read a saved JSON result for ``calaudit report``.

The file and its shape are checked by :mod:`calaudit.data.result_file`, the one check
shared with ``calaudit compare`` and ``--baseline``; missing optional sections are then
filled with empty values for the templates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calaudit.data.result_file import read_result_file

#: Sections the templates expect, filled with empty values when a result lacks them.
FILLED = {"local": dict, "groups": list, "diagrams": dict, "environment": dict}


def read_result(path: str | Path) -> dict[str, Any]:
    """The result stored at ``path``, validated, optional sections filled."""
    result, _ = read_result_file(path)
    return _filled(result)


def _filled(result: dict[str, Any]) -> dict[str, Any]:
    filled = dict(result)
    for key, kind in FILLED.items():
        filled.setdefault(key, kind())
    return filled
