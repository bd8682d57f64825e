"""Where the rows of a CSV / TSV file start, so that a task can parse a range of its rows
without the rows before it (:class:`calaudit.data.csv_rows.CsvRows`).

A quoted field may hold a line break, and pandas skips blank lines, so a line is not a row
in general. :func:`row_starts` finds the byte offset of every :data:`STRIDE`-th row only
when each line after the header is exactly one row, proved from three facts: no line is
blank (empty, or spaces and tabs only), every carriage return ends a line just before a
line feed, and the lines after the header are as many as the rows pandas read (each row
starts a line; a line no row starts would be skipped, which a non-blank line is not, or
continue a quoted field, and then the lines would outnumber the rows). Otherwise, and for
gzip files (a stream cannot be entered in its middle), there are no offsets and the rows
are parsed from the file's start.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: Rows between two recorded offsets (a task skips fewer than this many rows by parsing).
STRIDE = 4096
#: Bytes read at a time.
CHUNK = 1 << 22
_SPACE = np.zeros(256, dtype=bool)
_SPACE[[9, 13, 32]] = True


def row_starts(path: Path, rows: int) -> tuple[int, ...]:
    """Byte offsets of rows ``0, STRIDE, 2 STRIDE, ...`` of the file's ``rows`` data rows
    when each line after the header is one row (module docstring), else ``()``."""
    if rows <= 0 or path.name.lower().endswith(".gz"):
        return ()
    try:
        return _starts(path, rows)
    except OSError:  # the parser reports a file it cannot read
        return ()


def _starts(path: Path, rows: int) -> tuple[int, ...]:
    starts: list[int] = []
    feeds, base, carry = 0, 0, b""
    with open(path, "rb") as handle:
        while True:
            block = handle.read(CHUNK)
            data = carry + block
            if not block:
                break
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                continue
            lines = np.frombuffer(data, dtype=np.uint8, count=cut)
            ends = np.flatnonzero(lines == 10)
            if not _one_row_each(lines, ends):
                return ()
            index = np.arange(feeds, feeds + ends.size)
            starts.extend((base + ends[index % STRIDE == 0] + 1).tolist())
            feeds, base, carry = feeds + ends.size, base + cut, data[cut:]
    if data and (b"\r" in data or not (~_SPACE[np.frombuffer(data, np.uint8)]).any()):
        return ()  # a last line without a line feed: a carriage return in it, or blank
    if feeds - 1 + (1 if data else 0) != rows:
        return ()
    return tuple(starts[:(rows + STRIDE - 1) // STRIDE])


def _one_row_each(lines: np.ndarray, ends: np.ndarray) -> bool:
    """Lines (ending at the line feeds ``ends``) none of which is blank, with every
    carriage return just before a line feed."""
    returns = np.flatnonzero(lines == 13)
    if returns.size and (lines[returns + 1] != 10).any():
        return False
    filled = np.concatenate([[0], np.cumsum(~_SPACE[lines])])
    begins = np.concatenate([[0], ends[:-1] + 1])
    return bool((filled[ends] - filled[begins] > 0).all())
