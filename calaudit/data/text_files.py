"""Checks of data files that their parsers do not make (a regular file; in delimited text,
duplicate or delimiter-mangled header names, rows with more fields than the header, where
a file stops being UTF-8), and the one error of a file that cannot be read."""

from __future__ import annotations

import csv
import gzip
import io
import zipfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from calaudit.exceptions import InputError, clip
from calaudit.files import FileProblem, check_regular

#: Bytes read at a time by the field-count check.
CHUNK = 1 << 21
OTHER_DELIMITERS = (";", "|", "\t", ",")
UNREADABLE_HINT = "the file may be truncated or not in the format its suffix says"


def check_readable(path: Path) -> None:
    """Refuse anything but a regular file (a FIFO or device before it is opened)."""
    try:
        check_regular(path)
    except FileProblem as exc:
        raise InputError(exc.message, source=str(path), rule=exc.rule, hint=exc.hint) from None


def unreadable(path: Path | str, fmt: str, exc: BaseException,
               limit: int | None = None) -> InputError:
    """The one error of a file its parser could not read (``exc``, its first line, clipped
    to ``limit`` characters when given)."""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    detail = detail if limit is None else clip(detail, limit)
    return InputError(f"cannot read this {fmt} file ({detail})", source=str(path),
                      rule="unreadable_file", hint=UNREADABLE_HINT)


#: The exceptions of a parser that mean "this file cannot be read", not a bug.
READ_ERRORS = (OSError, EOFError, ValueError, UnicodeDecodeError, zipfile.BadZipFile,
               pd.errors.ParserError, pd.errors.EmptyDataError)


def delimiter(fmt: str) -> str:
    return "," if fmt == "csv" else "\t"


def _open(path: Path):
    return gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")


def check_header(names: list[str], path: Path, fmt: str) -> list[str]:
    """``names`` unless a name occurs twice or a delimited file's only column looks like a
    whole header separated by another delimiter."""
    counts = Counter(names)
    repeated = [name for name in names if counts[name] > 1]
    if repeated:
        raise InputError(f"column name occurs {counts[repeated[0]]} times in the header",
                         source=str(path), column=repeated[0], rule="duplicate_column",
                         hint="give every column its own name")
    if fmt in ("csv", "tsv") and len(names) == 1:
        used = next((d for d in OTHER_DELIMITERS if d != delimiter(fmt) and d in names[0]),
                    None)
        if used is not None:
            expected = "comma" if fmt == "csv" else "tab"
            raise InputError(f"the header is one column; the file seems to be separated by "
                             f"{used!r}, but a .{fmt} file is {expected}-separated",
                             source=str(path), rule="delimiter",
                             hint="save it with commas as .csv or with tabs as .tsv")
    return names


def _lines(path: Path) -> Iterator[tuple[int, np.ndarray]]:
    """``(number of the first line, bytes)`` of chunks that end at a line break."""
    carry, first = b"", 1
    with _open(path) as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            block = carry + block
            cut = max(block.rfind(b"\n"), block.rfind(b"\r")) + 1
            if cut == 0:
                carry = block
                continue
            chunk = np.frombuffer(block[:cut], dtype=np.uint8)
            yield first, chunk
            first += len(_breaks(chunk))
            carry = block[cut:]
    if carry:
        yield first, np.frombuffer(carry + b"\n", dtype=np.uint8)


def _breaks(chunk: np.ndarray) -> np.ndarray:
    """Positions of line ends: ``\n``, or ``\r`` not followed by ``\n``."""
    returns = chunk == 13
    returns[:-1] &= chunk[1:] != 10
    return np.flatnonzero((chunk == 10) | returns)


def check_field_counts(path: Path, delimiter: str, n_columns: int) -> None:
    """No row has more fields than the header (pandas drops them silently when it reads
    only some columns). Counting delimiters over-counts only inside quotes, so a file that
    fails the count with a quote in it is read again with the csv module."""
    sep, quote = ord(delimiter), ord('"')
    quoted = False
    for first, chunk in _lines(path):
        breaks = _breaks(chunk)
        seps = np.flatnonzero(chunk == sep)
        counts = np.bincount(np.searchsorted(breaks, seps), minlength=len(breaks))
        over = np.flatnonzero(counts[:len(breaks)] > n_columns - 1)
        quoted = quoted or bool((chunk == quote).any())
        if over.size and not quoted:
            raise _ragged(path, first + int(over[0]), int(counts[over[0]]) + 1, n_columns)
        if over.size:  # the fields counted exactly
            with _open(path) as raw:
                reader = csv.reader(io.TextIOWrapper(raw, encoding="utf-8", newline=""),
                                    delimiter=delimiter)
                for row in reader:
                    if len(row) > n_columns:
                        raise _ragged(path, reader.line_num, len(row), n_columns)
            return


def _ragged(path: Path, line: int, fields: int, n_columns: int) -> InputError:
    return InputError(f"line {line} (data row {line - 1}) has {fields} fields but the header "
                      f"has {n_columns}", source=str(path), rule="ragged_row",
                      hint="quote values that contain the delimiter, or fix the row")


#: File signatures of formats that are not text, and what to do about them.
SIGNATURES = {b"\x1f\x8b": ("gzip-compressed", "name it .csv.gz or .tsv.gz"),
              b"PK\x03\x04": ("a zip archive", "an NPZ archive is named .npz"),
              b"PAR1": ("a Parquet file", "name it .parquet")}


def encoding_error(path: Path) -> InputError:
    """Why ``path`` is not UTF-8 text: another format's signature, or its first line that
    is not UTF-8."""
    try:
        with open(path, "rb") as handle:
            start = handle.read(4)
        for magic, (what, hint) in SIGNATURES.items():
            if start.startswith(magic) and not (magic == b"\x1f\x8b"
                                                and path.name.lower().endswith(".gz")):
                return InputError(f"the file is {what}, not delimited text", source=str(path),
                                  rule="unreadable_file", hint=hint)
        with _open(path) as handle:
            for number, line in enumerate(handle, start=1):
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    byte = line[exc.start:exc.start + 1].hex()
                    where = ("the header" if number == 1
                             else f"line {number} (data row {number - 1})")
                    return InputError(f"{where} is not UTF-8 text (byte 0x{byte})",
                                      source=str(path), rule="encoding",
                                      hint="save the file as UTF-8")
    except (OSError, EOFError):
        return InputError("cannot read the file as text", source=str(path),
                          rule="unreadable_file", hint=UNREADABLE_HINT)
    return InputError("the file is not UTF-8 text", source=str(path), rule="encoding",
                      hint="save the file as UTF-8")
