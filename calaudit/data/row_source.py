"""Rows of a Parquet dataset read by global row range: a row source that stays small.

:class:`ParquetRows` implements the row-source protocol of
:mod:`calaudit.scale` (``read(start, stop, names)``) for the files of a
dataset (:class:`~calaudit.data.locations.Location`), in the dataset's row order (files
sorted by path, rows in file order; :mod:`calaudit.data.partitioned`). It holds only the
files and their row counts, taken from the Parquet footers when the source is built, so a
Dask task that receives it reads the row groups of its own range on the worker (the
columns it asks for, nothing else) instead of receiving the whole column from the client:
``s_shared`` in ``docs/scaling.md`` is a few hundred bytes per file, not 8 n per column.

Columns are the files' own numeric or boolean columns (float64, or int64 when the file
stores integers without nulls; booleans as int8). Hive partition keys and text columns
are not served here: their codes depend on every file's levels (the dataset reader's
``ColumnSink``), which a task holding one range does not know.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calaudit.data.column_sink import append_arrow
from calaudit.data.locations import DataFile, Location
from calaudit.data.text_files import unreadable


class FileRows:
    """Global rows of files in order (``offsets[k]``: file ``k``'s first global row, ``n``
    the total), each task reading its own range: the base of :class:`ParquetRows` and of
    CSV / TSV files' rows (:class:`~calaudit.data.csv_rows.CsvRows`), which put rows
    ``[lo, hi)`` of file ``k`` into the columns' sinks (``_put(k, lo, hi, sinks)``)."""

    #: Read by the task that reduces its range (not placed on the workers: a few hundred
    #: bytes that travel inside each task, so Dask can rerun a lost task from its spec).
    reads_own_rows = True

    def __init__(self, rows: Iterable[int]) -> None:
        self.offsets = np.concatenate([[0], np.cumsum(np.fromiter(rows, np.int64))])
        self.n = int(self.offsets[-1])

    @property
    def rows(self) -> list[int]:
        """Each file's row count."""
        return np.diff(self.offsets).tolist()

    def pieces(self, start: int, stop: int) -> Iterator[tuple[int, int, int]]:
        """``(file, first row, end row)`` of each file rows ``[start, stop)`` span."""
        if not 0 <= start <= stop <= self.n:
            raise ValueError(f"rows {start}-{stop} are not within 0-{self.n}")
        first = int(np.searchsorted(self.offsets, start, side="right")) - 1
        for k in range(max(first, 0), len(self.offsets) - 1):
            low, high = int(self.offsets[k]), int(self.offsets[k + 1])
            if low >= stop:
                break
            if high > start:
                yield k, max(start, low) - low, min(stop, high) - low

    def series(self, start: int, stop: int, plans: Iterable[Any]) -> dict[str, pd.Series]:
        """The columns ``plans`` (:class:`~calaudit.data.dataset_rows.ColumnPlan`: kind and
        dtypes of the dataset's column) of rows ``[start, stop)`` as the loader's Series."""
        sinks = {plan.name: plan.sink(stop - start) for plan in plans}
        for k, lo, hi in self.pieces(start, stop):
            self._put(k, lo, hi, sinks)
        return {name: sink.series() for name, sink in sinks.items()}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.offsets) - 1} files, n={self.n})"


class ParquetRows(FileRows):
    """Global rows ``[start, stop)`` of a list of Parquet files (see the module
    docstring). ``rows[k]`` is file ``k``'s row count (its footer's)."""

    def __init__(self, files: Sequence[str], rows: Sequence[int], filesystem: Any = None,
                 names: Sequence[str] | None = None):
        if len(files) != len(rows):
            raise ValueError("one row count per file")
        super().__init__(rows)
        self.files = tuple(str(f) for f in files)
        #: The files as errors name them (the dataset's display names).
        self.names = self.files if names is None else tuple(str(n) for n in names)
        self.filesystem = filesystem

    @classmethod
    def of(cls, location: Location) -> ParquetRows:
        """The Parquet files of ``location``, with their row counts read from the footers
        (no rows are read)."""
        single = location.kind == "file"
        fmt = location.spec.lower().endswith((".parquet", ".pq")) if single else (
            location.format == "parquet")
        if not fmt:
            raise ValueError(f"{location.spec}: a row source needs Parquet files")
        files = location.files or (DataFile(location.spec, location.spec, 0),)
        paths = [f.path if location.filesystem is not None else os.path.abspath(f.path)
                 for f in files]
        names = [f.name for f in files]
        source = cls(paths, [0] * len(paths), location.filesystem, names)
        counts = [source._guarded(k, lambda k=k: source._file(k).metadata.num_rows)
                  for k in range(len(paths))]
        return cls(paths, counts, location.filesystem, names)

    def _file(self, k: int):
        import pyarrow.parquet as pq

        if self.filesystem is None:
            return pq.ParquetFile(self.files[k])
        return pq.ParquetFile(self.filesystem.open(self.files[k], "rb"))

    def read(self, start: int, stop: int, names: Iterable[str]) -> dict[str, NDArray]:
        """The columns ``names`` of rows ``[start, stop)``, reading only the row groups
        that hold them."""
        names = list(names)
        pieces: dict[str, list[NDArray]] = {name: [] for name in names}
        for k, lo, hi in self.pieces(start, stop):
            table = self._table(k, lo, hi, names)
            for name in names:
                pieces[name].append(_numeric(table.column(name)))
        return {name: (np.concatenate(parts) if parts else np.empty(0))
                for name, parts in pieces.items()}

    def _put(self, k: int, lo: int, hi: int, sinks: dict[str, Any]) -> None:
        import pyarrow as pa

        table = self._table(k, lo, hi, list(sinks))
        for name, sink in sinks.items():
            append_arrow(sink, table.column(name), pa)

    def _table(self, k: int, lo: int, hi: int, names: list[str]) -> Any:
        """Rows ``[lo, hi)`` of file ``k`` as an Arrow table of the columns ``names``."""
        return self._guarded(k, lambda: self._slice(k, lo, hi, names))

    def _guarded(self, k: int, step: Any) -> Any:
        """``step()`` reading file ``k``; a file that cannot be read as Parquet (a data page
        that does not decode, a truncated file) is the loader's one-line error."""
        import pyarrow as pa

        try:
            return step()
        except (pa.ArrowException, OSError, ValueError, EOFError) as exc:
            raise unreadable(self.names[k], "parquet", exc, 200) from None

    def _slice(self, k: int, lo: int, hi: int, names: list[str]):
        """Rows ``[lo, hi)`` of file ``k``: its overlapping row groups, then a slice."""
        handle = self._file(k)
        meta = handle.metadata
        groups, first_row, row = [], None, 0
        for g in range(meta.num_row_groups):
            count = meta.row_group(g).num_rows
            if row < hi and row + count > lo:
                groups.append(g)
                first_row = row if first_row is None else first_row
            row += count
        table = handle.read_row_groups(groups, columns=names)
        return table.slice(lo - (first_row or 0), hi - lo)


def _numeric(column) -> NDArray:
    """A numeric or boolean Arrow column as numpy (nulls as NaN)."""
    import pyarrow as pa

    if pa.types.is_boolean(column.type):
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int8)
    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
        raise ValueError(f"column of type {column.type} is not numeric")
    if column.null_count or pa.types.is_floating(column.type):
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)
    return np.asarray(column.to_numpy(), dtype=np.int64)
