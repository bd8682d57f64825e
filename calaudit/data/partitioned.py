"""Reading a dataset of files (:class:`~calaudit.data.locations.Location`) into the
columns the audit uses, one record batch at a time.

Parquet files are scanned through ``pyarrow.dataset`` fragments with column projection
(only the requested columns are read) in batches of :data:`BATCH_ROWS` rows. CSV/TSV files
are streamed one at a time by :mod:`calaudit.data.csv_stream` (chunks of its
``BATCH_ROWS`` rows, every check of a single file: header, ragged rows, encoding) into
columns that grow; a remote CSV file is copied to a temporary file first. Each batch is
turned into compact arrays at once: float64 for numbers, int32 codes into one growing list
of levels for text, int8 for booleans, so no pandas frame of all columns (nor an object
column of strings) is ever built.

Rows keep a fixed order: files sorted by path, rows in file order. :class:`RowLayout` maps a
global row back to its file and row there, for error messages.

Hive partitions: directories ``key=value`` between the dataset's base and a file become
columns (a key whose values are all integers is numeric; ``__HIVE_DEFAULT_PARTITION__`` is
missing). Every file must hold every requested column, with the same kind (number, text,
boolean) as the first file that has values in it.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np
import pandas as pd

from calaudit.data.column_sink import ColumnSink, append_arrow
from calaudit.data.csv_stream import CsvColumn, estimated_rows, read_file
from calaudit.data.locations import DataFile, Location, fingerprint
from calaudit.data.readers import SourceFile, read_columns, refuse_nested
from calaudit.data.remote import remote_errors
from calaudit.data.spill import ColumnStore
from calaudit.data.text_files import check_header, unreadable
from calaudit.exceptions import InputError, clip
from calaudit.scale import release_free_memory

#: Rows per record batch read from a Parquet file (a constant: memory per batch is
#: BATCH_ROWS x requested columns).
BATCH_ROWS = 65_536
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
#: Bytes per row and column that the kept data adds to a column's own (the spill
#: estimate of :meth:`Dataset.read`: the raw column plus the final column built from it).
KEPT_BYTES = 8
_INTEGER = re.compile(r"^[+-]?\d{1,18}$")


@dataclass(frozen=True)
class RowLayout:
    """Which file each global row comes from: ``starts[i]`` is the first global row (0-based)
    of ``names[i]``; ``starts[-1]`` is the total."""

    names: tuple[str, ...]
    starts: np.ndarray

    def locate(self, row: int) -> tuple[str, int]:
        """``(file name, 0-based row in that file)`` of global row ``row``."""
        index = int(np.searchsorted(self.starts, row, side="right")) - 1
        index = min(max(index, 0), len(self.names) - 1)
        return self.names[index], row - int(self.starts[index])


class Dataset:
    """A dataset ``Location`` read as one table (see the module docstring)."""

    def __init__(self, location: Location) -> None:
        self.location = location
        self.partitions = _partitions(location)
        self.rows: list[int] = [0] * len(location.files)
        self._columns: list[str] | None = None

    # -- the reader interface of calaudit.data.load ------------------------------------
    def columns(self, header: Callable[[], list[str]] | None = None) -> list[str]:
        """The first file's columns (of a CSV / TSV file: ``header()`` when given), then
        the partition keys."""
        if self._columns is None:
            first = self.location.files[0]
            names = (self._parquet_schema(first)[1].names if self.location.format == "parquet"
                     else header() if header is not None
                     else self._with_local_copy(first, read_columns))
            clash = next((key for key in self.partitions if key in names), None)
            if clash is not None:
                raise InputError("is both a partition key (key=value directory) and a column "
                                 "of the file", source=first.name, column=clash,
                                 rule="duplicate_column", hint="rename one of them")
            self._columns = list(names) + list(self.partitions)
        return self._columns

    def read(self, columns: list[str], store: ColumnStore | None = None) -> pd.DataFrame:
        """The requested columns of every file, in row order. Parquet columns are
        preallocated in ``store`` (anonymous memory, or spilled to disk) from the footers,
        before any row is read."""
        store = store if store is not None else ColumnStore()
        stored = [c for c in columns if c not in self.partitions]
        sinks = {name: ColumnSink(name) for name in columns}
        if self.location.format == "parquet":
            fragments = [self._check_parquet(f, stored, sinks) for f in self.location.files]
            declared = [self._declared_rows(f, fragment, stored, sinks)
                        for f, fragment in zip(self.location.files, fragments)]
            total = sum(declared)
            for key in columns:
                if key in self.partitions:
                    sinks[key].kind = self._partition_kind(key)
            store.decide(total * sum(s.final_dtype().itemsize + KEPT_BYTES
                                     for s in sinks.values()))
            for sink in sinks.values():
                sink.allocate(total, store)
            for index, (file, fragment) in enumerate(zip(self.location.files, fragments)):
                self.rows[index] = self._read_parquet(file, fragment, stored, sinks,
                                                      declared[index])
                if store.spilling:  # keep the memory of the read at one file's batches
                    _release_arrow_pool()
                    release_free_memory()
        else:
            store.decide(estimated_rows(self.location) * (len(columns) or 1)
                         * (8 + KEPT_BYTES))
            grown = {name: CsvColumn(sinks[name], store) for name in stored}
            for index, file in enumerate(self.location.files):
                self.rows[index] = self._read_text(file, stored, grown)
            for column in grown.values():
                column.finish()
            for key in columns:
                if key in self.partitions:
                    sinks[key].kind = self._partition_kind(key)
                    sinks[key].allocate(sum(self.rows), store)
        for key in columns:
            if key in self.partitions:
                self._fill_partition(key, sinks[key])
        frame = pd.DataFrame({name: sinks[name].series() for name in columns}, copy=False)
        _release_arrow_pool()
        return frame

    def layout(self) -> RowLayout:
        starts = np.concatenate([[0], np.cumsum(self.rows, dtype=np.int64)])
        return RowLayout(tuple(f.name for f in self.location.files), starts)

    def describe(self) -> dict[str, Any]:
        """The dataset as a whole, for ``inputs.dataset`` of the JSON."""
        return {"path": self.location.spec, "kind": self.location.kind,
                "format": self.location.format, "files": len(self.location.files),
                "partition_columns": list(self.partitions)}

    def provenance(self, role: str) -> list[SourceFile]:
        """One entry per file: name, size, fingerprint (ETag or SHA-256), rows read."""
        out = []
        for file, rows in zip(self.location.files, self.rows):
            kind, value = fingerprint(file, self.location.filesystem)
            out.append(SourceFile(role, file.name, self.location.format,
                                  value if kind == "sha256" else None, rows, file.size,
                                  kind, value))
        return out

    # -- Parquet ------------------------------------------------------------------------
    def _fragment(self, file: DataFile):
        import pyarrow.dataset as ds
        from pyarrow.fs import FSSpecHandler, LocalFileSystem, PyFileSystem

        fs = self.location.filesystem
        arrow_fs = PyFileSystem(FSSpecHandler(fs)) if fs is not None else LocalFileSystem()
        path = file.path if fs is not None else os.path.abspath(file.path)
        return ds.ParquetFileFormat().make_fragment(path, filesystem=arrow_fs)

    def _parquet_schema(self, file: DataFile):
        """The file's fragment and its schema, whose column names are checked."""
        fragment = self._guard(file, lambda: self._fragment(file))
        schema = self._guard(file, lambda: fragment.physical_schema)
        check_header(list(schema.names), Path(file.name), "parquet")
        return fragment, schema

    def _check_parquet(self, file: DataFile, stored: list[str], sinks: dict[str, ColumnSink]):
        """Footer only, before any rows are read: the file opens, holds every requested
        column, and each column's kind matches the other files'."""
        fragment, schema = self._parquet_schema(file)
        _require(stored, list(schema.names), file, self.location.files[0])
        refuse_nested(schema, stored, file.name)
        for name in stored:
            arrow_type = schema.field(name).type
            sinks[name].expect(_arrow_kind(arrow_type, file.name, name), str(arrow_type),
                               file.name)
        return fragment

    def _declared_rows(self, file: DataFile, fragment, stored: list[str],
                       sinks: dict[str, ColumnSink]) -> int:
        """The file's row count from its footer; records each numeric column's dtype in
        this file (from the footer's null counts; a column whose row groups carry no null
        count is read alone once to count them)."""
        import pyarrow as pa

        declared = self._guard(file, lambda: fragment.count_rows())
        if declared == 0:
            return 0
        schema = self._guard(file, lambda: fragment.physical_schema)
        for name in stored:
            arrow_type = schema.field(name).type
            if pa.types.is_dictionary(arrow_type):
                arrow_type = arrow_type.value_type
            if sinks[name].kind != "numeric":
                continue
            exact = pa.types.is_integer(arrow_type) and not self._has_nulls(file, fragment, name)
            sinks[name].dtypes.append(np.dtype(arrow_type.to_pandas_dtype()) if exact
                                      else np.dtype(np.float64))
        return declared

    def _has_nulls(self, file: DataFile, fragment, name: str) -> bool:
        meta = self._guard(file, lambda: fragment.metadata)
        leaves = [meta.schema.column(j).path for j in range(meta.num_columns)]
        index = leaves.index(name) if name in leaves else -1
        counts = []
        for group in range(meta.num_row_groups):
            stats = meta.row_group(group).column(index).statistics if index >= 0 else None
            if stats is None or not stats.has_null_count:
                counts = None
                break
            counts.append(stats.null_count)
        if counts is not None:
            return sum(counts) > 0
        table = self._guard(file, lambda: fragment.to_table(columns=[name]))
        return table.column(name).null_count > 0

    def _read_parquet(self, file: DataFile, fragment, stored: list[str],
                      sinks: dict[str, ColumnSink], declared: int) -> int:
        import pyarrow as pa

        rows = 0
        batches = self._guard(file, lambda: fragment.to_batches(
            columns=stored, batch_size=BATCH_ROWS, batch_readahead=1,
            fragment_scan_options=_scan_options(self.location.filesystem is not None)))
        while True:
            batch = self._guard(file, lambda: next(batches, None))
            if batch is None:
                break
            rows += batch.num_rows
            if rows > declared:
                break
            for name in stored:
                append_arrow(sinks[name], batch.column(name), pa)
        if not stored:
            rows = declared
        if rows != declared:
            raise InputError(f"declares {declared} rows but {rows} were read", source=file.name,
                             rule="unreadable_file", hint="the file may be truncated")
        return rows

    def _guard(self, file: DataFile, step):
        """``step()``; a file that cannot be read as Parquet, or a remote filesystem's
        failure (:func:`~calaudit.data.remote.remote_errors`), is one line."""
        import pyarrow as pa

        try:
            if self.location.filesystem is None:
                return step()
            with remote_errors(file.name):
                return step()
        except InputError:
            raise
        except (pa.ArrowException, OSError, ValueError, EOFError) as exc:
            raise unreadable(file.name, "parquet", exc, 200) from None

    # -- CSV / TSV ----------------------------------------------------------------------
    def _read_text(self, file: DataFile, stored: list[str], grown: dict[str, CsvColumn]
                   ) -> int:
        """One CSV / TSV file streamed into the growing columns (:mod:`csv_stream`)."""
        def read(path: Path) -> int:
            _require(stored, read_columns(path), file, self.location.files[0])
            return read_file(path, self.location.format, stored, grown, file.name)

        return self._with_local_copy(file, read)

    def _with_local_copy(self, file: DataFile, action):
        """``action(path)`` on the file, copied to a temporary file when it is remote;
        errors name the file as the user knows it."""
        if self.location.filesystem is None:
            return action(Path(file.name))
        suffix = "".join(Path(file.path).suffixes[-2:])
        with tempfile.TemporaryDirectory(prefix="calaudit-") as folder:
            local = Path(folder) / f"part{suffix}"
            with remote_errors(file.name), self.location.filesystem.open(
                    file.path, "rb") as src, open(local, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            try:
                return action(local)
            except InputError as exc:
                raise exc.renamed(str(local), file.name) from None

    # -- partitions ---------------------------------------------------------------------
    def _partition_kind(self, key: str) -> str:
        """A key whose values are all integers (or missing) is numeric, else text."""
        numeric = all(v is None or _INTEGER.match(v) for v in self.partitions[key])
        return "numeric" if numeric else "text"

    def _fill_partition(self, key: str, sink: ColumnSink) -> None:
        values = self.partitions[key]
        numeric = self._partition_kind(key) == "numeric"
        for file, value, rows in zip(self.location.files, values, self.rows):
            if value is None and not any(p == f"{key}={HIVE_NULL}" for p in _parts(file)):
                raise InputError(f"is not below a '{key}=...' directory, so it has no value "
                                 "for this partition key", source=file.name, column=key,
                                 rule="missing_column",
                                 hint="partition every file by the same keys")
            if numeric:
                sink.kind = "numeric"
                sink.put(np.full(rows, np.nan if value is None else float(value)))
            else:
                sink.kind = "text"
                code = -1 if value is None else sink.levels.setdefault(value, len(sink.levels))
                sink.put(np.full(rows, code, dtype=np.int32))


def _scan_options(remote: bool):
    """Arrow's Parquet options: a local file is read column chunk by column chunk as the
    batches are consumed (``pre_buffer`` off; with it, and with Arrow's default read-ahead
    of 16 batches, the memory Arrow held grew with the rows of the file: 74 bytes per row
    at the load's peak against 45, measured at 2 and 4 million rows in row groups of 1 Mi
    rows); a remote one keeps Arrow's coalesced reads, which save round trips."""
    import pyarrow.dataset as ds

    return ds.ParquetFragmentScanOptions(pre_buffer=remote)


def _release_arrow_pool() -> None:
    """Return the memory Arrow's pool keeps after the batches were freed (mimalloc and
    jemalloc hold freed pages for reuse: about 70 bytes per row read, which would stay
    resident through the whole audit)."""
    import sys

    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()


def _require(stored: list[str], available: list[str], file: DataFile, first: DataFile) -> None:
    missing = next((name for name in stored if name not in available), None)
    if missing is not None:
        raise InputError(f"column not found (the dataset's first file {clip(first.name, 200)} has "
                         "it)", source=file.name, column=missing, rule="missing_column",
                         hint="every file of a dataset needs the same columns")


def _parts(file: DataFile) -> list[str]:
    return file.path.replace("\\", "/").split("/")[:-1]


def _partitions(location: Location) -> dict[str, list[str | None]]:
    """Hive keys and each file's value (``None`` when missing), in order of appearance."""
    base = (location.base or "").replace("\\", "/").rstrip("/")
    keys: dict[str, list[str | None]] = {}
    for index, file in enumerate(location.files):
        path = file.path.replace("\\", "/")
        relative = path[len(base) + 1:] if base and path.startswith(base + "/") else (
            path if not base else "")
        for part in relative.split("/")[:-1]:
            if "=" not in part:
                continue
            key, value = (unquote(s) for s in part.split("=", 1))
            column = keys.setdefault(key, [None] * len(location.files))
            column[index] = None if value == HIVE_NULL else value
    return keys


def _arrow_kind(arrow_type, source: str, column: str) -> str | None:
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if pa.types.is_null(arrow_type):
        return None
    if pa.types.is_boolean(arrow_type):
        return "bool"
    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type) or \
            pa.types.is_decimal(arrow_type):
        return "numeric"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "text"
    what = ("timestamps" if pa.types.is_temporal(arrow_type) and not
            pa.types.is_duration(arrow_type) else "time spans" if pa.types.is_duration(arrow_type)
            else f"{arrow_type} values")
    raise InputError(f"holds {what}; a column holds numbers, text or booleans",
                     source=source, column=column, rule="unsupported_type",
                     hint="convert it to numbers or strings first")

