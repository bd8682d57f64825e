"""A data file that cannot be opened or parsed, as one :class:`InputError` (every format)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pandas as pd

from calaudit.exceptions import InputError
from calaudit.files import FileProblem, check_regular


def check_readable(path: Path) -> None:
    """Refuse anything but a regular file (a FIFO or device before it is opened)."""
    try:
        check_regular(path)
    except FileProblem as exc:
        raise InputError(exc.message, source=str(path), rule=exc.rule, hint=exc.hint) from None


def unreadable(path: Path, fmt: str, exc: BaseException) -> InputError:
    """The one error of a file its parser could not read (``exc``, its first line)."""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return InputError(f"cannot read this {fmt} file ({detail})", source=str(path),
                      rule="unreadable_file",
                      hint="the file may be truncated or not in the format its suffix says")


#: The exceptions of a parser that mean "this file cannot be read", not a bug.
READ_ERRORS = (OSError, EOFError, ValueError, UnicodeDecodeError, zipfile.BadZipFile,
               pd.errors.ParserError, pd.errors.EmptyDataError)
