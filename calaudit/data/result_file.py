"""Reading a saved JSON result (``calaudit report``, ``--baseline``, ``calaudit compare``).

One reader for every command that takes a result back: the file's bytes (for its
sha256) and the decoded JSON, or an :class:`~calaudit.exceptions.InputError` naming the
file. Each caller then checks the shape it needs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from calaudit.exceptions import InputError


def read_json_result(path: str | Path) -> tuple[Any, bytes]:
    """The decoded JSON at ``path`` and the raw bytes it came from."""
    source = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("file not found: cannot read the result file", source=source,
                         rule="result_file", hint="check the path") from None
    except OSError as exc:
        raise InputError(f"cannot read the result file: {exc.strerror or exc}",
                         source=source, rule="result_file") from None
    try:
        return json.loads(raw.decode("utf-8")), raw
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid JSON: not UTF-8 text ({exc.reason})", source=source,
                         rule="json") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} at line {exc.lineno}, column "
                         f"{exc.colno}", source=source, rule="json",
                         hint="give the file written by calaudit test --json") from None
