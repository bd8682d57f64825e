"""Rows of a CSV / TSV dataset read by global row range, by the task that reduces them.

The loader (:mod:`calaudit.data.csv_stream`) parses each file with ``pandas.read_csv``
(its options: :func:`~calaudit.data.csv_stream.chunks`) a chunk at a time and settles
each column's dtype per file as a whole-file read would (:func:`~calaudit.data.
csv_stream.reconcile`). Here the same happens in two reductions on the workers:

- :func:`scan_partial`, one task per file: the loader's checks of one file (its
  columns, the parser's errors, ragged rows, in the loader's order) and, per column, what
  the loader makes of it: its kind and the dtype a whole-file read gives
  (:class:`FileColumn`). Errors travel back as values, so the client raises the first
  file's, as the loader would; a column only a whole-file read can settle (integers
  beyond int64, booleans with missing values) leaves the dataset to the loader.
- :class:`CsvRows` reads rows ``[start, stop)``: each file's rows parsed by the same
  ``read_csv`` call with each column's dtype fixed to the file's (so a range gives the
  bits of the whole-file parse), encoded by the loader's
  :func:`~calaudit.data.csv_stream.encoded` into a :class:`~calaudit.data.column_sink.
  ColumnSink` of the dataset's kind and dtype.

A file on object storage is copied once to a folder of the process that reads it
(:meth:`CsvFiles.local`: on a Dask worker, in the cluster's temporary directory; the last
:data:`COPIES_KEPT` per process), never to the client: the task that scans it or reads its
rows reads the copy.

A file is entered at a row from the byte offsets the first reduction found
(:func:`~calaudit.data.csv_offsets.row_starts`: every 4,096th row, when each line is one
row), parsing fewer than 4,096 rows before the range; a file without them (a quoted field
holding a line break, a blank line) and a gzip-compressed file (a stream cannot be entered
in its middle) are parsed from their start. Each process keeps a few open parsers
(:data:`KEEP`), each where its last read stopped, so a process reading consecutive ranges
of such a file parses it once; a read before a parser's position opens it again.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from calaudit import scale
from calaudit.data.column_sink import MISSING, STORAGE, ColumnSink
from calaudit.data.csv_offsets import STRIDE, row_starts
from calaudit.data.csv_stream import BATCH_ROWS, FileChunks, _read_csv, chunks, encoded, file_kind
from calaudit.data.locations import ETAG_KEYS, DataFile, Location
from calaudit.data.partitioned import _require as require
from calaudit.data.readers import read_columns, read_errors
from calaudit.data.remote import remote_errors
from calaudit.data.row_source import FileRows
from calaudit.data.text_files import check_field_counts, delimiter
from calaudit.exceptions import InputError

#: Open parsers kept per process (each holds one chunk of rows at most).
KEEP = 4
#: The numpy dtype each file's column is parsed with (``bool``: as inferred).
PARSE = {"int64": np.int64, "float64": np.float64, "str": str, "bool": None}


@dataclass(frozen=True)
class FileColumn:
    """One column of one file as the loader reads it: ``kind`` (``numeric``, ``bool``,
    ``text``; None: every cell missing), the dtype name its errors quote and the dtype
    its rows are parsed with (``int64``, ``float64``, ``bool``, ``str``)."""

    kind: str | None
    type_name: str
    parse: str


@dataclass(frozen=True)
class CsvFiles:
    """The files of a CSV / TSV dataset before their rows are counted: absolute paths
    (on ``filesystem``, an fsspec filesystem, for a dataset on object storage), the names
    the user knows them by, the format and the columns read (in the loader's order)."""

    paths: tuple[str, ...]
    names: tuple[str, ...]
    fmt: str
    columns: tuple[str, ...]
    filesystem: Any = None
    token: str = ""
    sizes: tuple[int, ...] = ()
    etags: tuple[str | None, ...] = ()

    reads_own_rows = True

    @classmethod
    def of(cls, location: Location, columns: Iterable[str]) -> CsvFiles:
        files, remote = location.files, location.filesystem
        return cls(tuple(f.path if remote else os.path.abspath(f.path) for f in files),
                   tuple(f.name for f in files), location.format, tuple(columns), remote,
                   uuid.uuid4().hex if remote else "", tuple(f.size for f in files),
                   tuple(f.etag for f in files))

    def local(self, k: int) -> Path:
        """File ``k`` on this machine: its path, or the process's copy of a stored file
        (made for this opening of the dataset: a later run copies it afresh; a copy of
        another size or ETag than the listing gave is an error, the object changed)."""
        if self.filesystem is None:
            return Path(self.paths[k])
        return _COPIES.get(self.filesystem, self.paths[k], self.names[k], self.token,
                           self.sizes[k] if self.sizes else None,
                           self.etags[k] if self.etags else None)

    def shown(self, k: int) -> str:
        """File ``k`` as errors name it (the user's name: a URL is not a path)."""
        return self.names[k] if self.filesystem is not None else str(Path(self.names[k]))


class _Copies:
    """This process's copies of stored files, made by the first task that reads one, the
    last :data:`COPIES_KEPT` kept (an older one is deleted: a parser still reading it
    keeps its open handle), in one folder removed when the process ends."""

    def __init__(self) -> None:
        self.lock, self.files, self.folder = threading.Lock(), OrderedDict(), None
        self.made = itertools.count()

    def _folder(self) -> str:
        """This process's folder in the current temporary directory (a new one when the
        cluster whose directory held the last one is gone)."""
        if self.folder is None or not os.path.isdir(self.folder):
            self.files.clear()
            self.folder = tempfile.mkdtemp(prefix="calaudit-copies-",
                                           dir=_temporary_directory())
            atexit.register(shutil.rmtree, self.folder, True)
        return self.folder

    def get(self, filesystem: Any, path: str, name: str, token: str,
            size: int | None = None, etag: str | None = None) -> Path:
        key = (token, path)
        with self.lock:
            if key in self.files and self.files[key].exists():
                self.files.move_to_end(key)
                return self.files[key]
            suffix = "".join(Path(path).suffixes[-2:])
            local = Path(self._folder()) / f"part-{next(self.made)}{suffix}"
            try:
                with open(local, "wb") as dst, remote_errors(name), \
                        filesystem.open(path, "rb") as src:
                    shutil.copyfileobj(src, dst, 1 << 20)
                _unchanged(filesystem, path, name, local.stat().st_size, size, etag)
            except BaseException:
                local.unlink(missing_ok=True)
                raise
            self.files[key] = local
            while len(self.files) > COPIES_KEPT:
                self.files.popitem(last=False)[1].unlink(missing_ok=True)
            return local


def _unchanged(filesystem: Any, path: str, name: str, copied: int, size: int | None,
               etag: str | None) -> None:
    """Refuse a copy of ``copied`` bytes when the listing gave another ``size``, or when
    the object's ETag now differs from the listing's ``etag``: it changed since the
    dataset was opened."""
    found = None
    if etag:
        with remote_errors(name):
            info = filesystem.info(path)
        found = next((str(info[k]) for k in ETAG_KEYS if info.get(k)), None)
    if (size and copied != size) or (found is not None and found != etag):
        what = (f"holds {copied:,} bytes, not the {size:,}" if size and copied != size
                else f"has the ETag {found}, not {etag}")
        raise InputError(f"{what} it had when the dataset was opened", source=name,
                         rule="unreadable_file", hint="the object changed during the audit")


#: Copies of stored files kept per process (each a whole file on the worker's disk).
COPIES_KEPT = 8
_COPIES = _Copies()


def _temporary_directory() -> str | None:
    """Dask's ``temporary-directory`` when set and present (a calaudit cluster's folder,
    removed with the cluster), else the system's."""
    try:
        import dask
    except ImportError:
        return None
    folder = dask.config.get("temporary-directory", None)
    return folder if folder and os.path.isdir(folder) else None


def header_partial(start: int, stop: int, *, files: CsvFiles) -> list[list[str]]:
    """The column names of files ``start`` to ``stop - 1`` (read where the task runs: a
    stored file is copied there, not to the client)."""
    out = []
    for k in range(start, stop):
        path = files.local(k)
        with _named(files, k, path):
            out.append(read_columns(path))
    return out


def first_header(location: Location) -> list[str]:
    """The first file's column names, read by a task (:func:`header_partial`)."""
    files = CsvFiles.of(location, ())
    return scale.map_combine(header_partial, [(0, 1)], {"files": files},
                             lambda parts: next(iter(parts))[0])


def scan_partial(start: int, stop: int, *, files: CsvFiles) -> list[dict[str, Any]]:
    """:func:`scan` of files ``start`` to ``stop - 1``."""
    return [scan(files, k) for k in range(start, stop)]


def scan(files: CsvFiles, k: int) -> dict[str, Any]:
    """File ``k`` checked and read as the loader does, keeping per column only what its
    chunks were: ``{"rows", "columns": {name: FileColumn}, "header", "starts"}`` (its
    column names; :func:`~calaudit.data.csv_offsets.row_starts`), ``{"rows", "whole":
    name}`` (a column only a whole-file read settles) or ``{"error": InputError}`` (its
    first, naming the file as the user does)."""
    names, name = list(files.columns), files.names[k]
    path = Path(files.paths[k])
    try:
        path = files.local(k)
        available = read_columns(path)
        require(names, available, DataFile(name, name, 0),
                DataFile(files.names[0], files.names[0], 0))
        seen = {c: FileChunks() for c in names}
        rows = 0
        for chunk in chunks(path, files.fmt, names):
            rows += len(chunk)
            for c in names:
                seen[c].note(chunk[c])
        check_field_counts(path, delimiter(files.fmt), len(available))
    except InputError as exc:
        return {"error": exc.renamed(str(path), files.shown(k))}
    out: dict[str, FileColumn] = {}
    for c in names:
        column = _settled(seen[c])
        if column is None:
            return {"rows": rows, "whole": c}
        out[c] = column
    return {"rows": rows, "columns": out, "header": tuple(available),
            "starts": row_starts(path, rows)}


def _settled(chunks: FileChunks) -> FileColumn | None:
    """The file's column as :meth:`~calaudit.data.csv_stream.CsvColumn.end` settles it
    (None: by reading the whole column, which this path does not do)."""
    type_name, again = chunks.reconciled()
    if not chunks.classes:
        return FileColumn(None, type_name, "float64")
    if again == "whole":
        return None
    kind = file_kind(type_name, again)
    return FileColumn(kind, type_name, {"text": "str", "bool": "bool"}.get(
        kind, type_name if again is None else "float64"))


class CsvRows(FileRows):
    """Global rows ``[start, stop)`` of the CSV / TSV files of :class:`CsvFiles`, from
    :func:`scan` of each file: its row count, columns (:class:`FileColumn`), header and
    row offsets."""

    def __init__(self, files: CsvFiles, scanned: Iterable[dict[str, Any]]) -> None:
        scanned = list(scanned)
        super().__init__(found["rows"] for found in scanned)
        self.files, self.columns = files, tuple(found["columns"] for found in scanned)
        self.headers = tuple(found["header"] for found in scanned)
        self.starts = tuple(found["starts"] for found in scanned)

    def _put(self, k: int, lo: int, hi: int, sinks: dict[str, ColumnSink]) -> None:
        """Rows ``[lo, hi)`` of file ``k`` into the columns' ``sinks``."""
        parsed = {name: self.columns[k][name] for name in sinks
                  if self.columns[k][name].kind is not None}
        frame = self._rows(k, lo, hi, parsed)
        for name, sink in sinks.items():
            if name in parsed:
                sink.put(encoded(sink, frame[name], sink.kind))
            else:  # a file without values in this column
                sink.put(np.full(hi - lo, MISSING[sink.kind], STORAGE[sink.kind]))

    def _rows(self, k: int, lo: int, hi: int, parsed: dict[str, FileColumn]) -> pd.DataFrame:
        """Rows ``[lo, hi)`` of file ``k``, the columns ``parsed`` with their dtypes."""
        if not parsed or hi == lo:
            return pd.DataFrame(index=range(hi - lo))
        path = self.files.local(k)
        dtypes = {name: PARSE[c.parse] for name, c in parsed.items() if PARSE[c.parse]}
        key = (str(path), tuple(parsed), tuple(sorted(map(str, dtypes.items()))))
        with _named(self.files, k, path), read_errors(path, self.files.fmt):
            parser, at = _PARSERS.take(key, lo)
            mark = lo // STRIDE * STRIDE if self.starts[k] else 0
            if parser is None or at < mark:  # none kept, or an offset nearer the range
                if parser is not None:
                    parser.close()
                parser, at = self._open(k, mark, list(parsed), dtypes), mark
            while at < lo:
                at += len(parser.reader.get_chunk(min(BATCH_ROWS, lo - at)))
            frame = parser.reader.get_chunk(hi - lo)
        _PARSERS.keep(key, parser, hi)
        if len(frame) != hi - lo:
            raise InputError(f"holds fewer rows than when the dataset was opened "
                             f"({lo + len(frame)} read, {hi} expected)",
                             source=self.files.names[k],
                             rule="unreadable_file", hint="the file changed during the audit")
        return frame

    def _open(self, k: int, row: int, names: list[str], dtypes: dict[str, Any]) -> _Parser:
        """A parser of file ``k``'s columns ``names`` at its row ``row`` (0, or one with a
        recorded offset: the lines from there parsed with the file's header as names)."""
        path, fmt = self.files.local(k), self.files.fmt
        if row == 0:
            return _Parser(_read_csv(path, fmt, names, dtype=dtypes, chunksize=BATCH_ROWS))
        handle = open(path, "rb")  # noqa: SIM115 - closed with the parser
        try:
            handle.seek(self.starts[k][row // STRIDE])
            return _Parser(_read_csv(handle, fmt, names, dtype=dtypes, header=None,
                                     names=list(self.headers[k]), chunksize=BATCH_ROWS),
                           handle)
        except BaseException:
            handle.close()
            raise



@contextmanager
def _named(files: CsvFiles, k: int, path: Path) -> Iterator[None]:
    """Errors of a stored file's copy name the file by its URL."""
    try:
        yield
    except InputError as exc:
        if files.filesystem is None:
            raise
        raise exc.renamed(str(path), files.shown(k)) from None


@dataclass
class _Parser:
    """A ``read_csv`` reader and the file it reads (None: opened by path)."""

    reader: Any
    handle: Any = None

    def close(self) -> None:
        self.reader.close()
        if self.handle is not None:
            self.handle.close()


class _Parsers:
    """Open ``read_csv`` readers of this process, each at the row its last read stopped
    (the last :data:`KEEP` used); a task takes one out while it reads."""

    def __init__(self) -> None:
        self.lock, self.open = threading.Lock(), OrderedDict()

    def take(self, key: Any, row: int) -> tuple[_Parser | None, int]:
        """The parser of ``key`` at or before ``row`` and its position (None: none)."""
        with self.lock:
            parser, at = self.open.pop(key, (None, 0))
        if parser is not None and at > row:
            parser.close()
            return None, 0
        return parser, at

    def keep(self, key: Any, parser: _Parser, at: int) -> None:
        with self.lock:
            old = self.open.pop(key, None)
            self.open[key] = (parser, at)
            dropped = [self.open.popitem(last=False)[1] for _ in
                       range(max(len(self.open) - KEEP, 0))]
        for stale, _ in ([old] if old is not None else []) + dropped:
            stale.close()


_PARSERS = _Parsers()
