"""A column whose length is known only once it has been read: appended a batch at a time.

A CSV file's rows are counted only by parsing it, so its columns cannot be preallocated as
a Parquet dataset's are (:mod:`calaudit.data.column_sink`). A :class:`GrowingColumn`
grows instead, in the place the :class:`~calaudit.data.spill.ColumnStore` decided:

* without spill, a ``bytearray`` that grows geometrically (glibc moves large blocks with
  ``mremap``, so growing does not copy the rows already read; at most an eighth of the
  column is spare capacity at the end);
* with spill, a file in the spill directory, unlinked as soon as it is created (nothing is
  left on disk whatever way the process ends), whose blocks are reserved with
  ``posix_fallocate`` before each batch is written (a full disk is one ``[spill_failed]``
  line, never a ``SIGBUS``) and which is memory-mapped once the last batch is in.

Anonymous memory is the batch being written, whatever the number of rows. The column
holds fixed-size items (``itemsize`` bytes); numbers of several dtypes of the same size
(int64, uint64, float64) can share one column and be viewed as their final dtype at the
end (:mod:`calaudit.data.csv_stream`).
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

from calaudit.data.spill import ColumnStore
from calaudit.exceptions import InputError


class GrowingColumn:
    """Rows of ``dtype`` appended in batches (see the module docstring)."""

    def __init__(self, store: ColumnStore, dtype) -> None:
        self.dtype = np.dtype(dtype)
        self.rows = 0
        self._buffer: bytearray | None = None
        self._handle: int | None = None
        self._directory = store.directory
        if store.spilling:
            self._handle = _spill_file(store)
        else:
            self._buffer = bytearray()

    def append(self, values: np.ndarray) -> None:
        """Add rows (any dtype of this column's item size: its bytes are kept as they are)."""
        values = np.ascontiguousarray(values)
        if values.dtype.itemsize != self.dtype.itemsize:
            raise ValueError(f"{values.dtype} rows in a column of {self.dtype}")
        data = memoryview(values).cast("B")
        if self._buffer is not None:
            self._buffer += data
        elif len(data):
            offset = self.rows * self.dtype.itemsize
            try:
                if hasattr(os, "posix_fallocate"):
                    os.posix_fallocate(self._handle, offset, len(data))
                written = os.pwrite(self._handle, data, offset)
                if written != len(data):
                    raise OSError(28, "No space left on device")
            except OSError as exc:
                self.discard()
                raise _spill_failed(exc, self._directory) from None
        self.rows += len(values)

    def truncate(self, rows: int) -> None:
        """Forget every row from ``rows`` on (a file read again with other types)."""
        if rows >= self.rows:
            return
        if self._buffer is not None:
            del self._buffer[rows * self.dtype.itemsize:]
        elif self._handle is not None:
            os.ftruncate(self._handle, rows * self.dtype.itemsize)
        self.rows = rows

    def finish(self) -> np.ndarray:
        """The rows as one writable array (a view of the buffer, or of the mapped file).
        The column cannot grow after this."""
        if self._buffer is not None:
            out = np.frombuffer(self._buffer, dtype=self.dtype) if self.rows else \
                np.empty(0, self.dtype)
            self._buffer = None
            return out
        handle, self._handle = self._handle, None
        if handle is None or not self.rows:
            if handle is not None:
                os.close(handle)
            return np.empty(0, self.dtype)
        with os.fdopen(handle, "r+b") as file:  # the mapping keeps its own reference
            mapped = np.memmap(file, dtype=self.dtype, mode="r+", shape=(self.rows,))
        return mapped.view(np.ndarray)

    def discard(self) -> None:
        """Free the rows now (an error was found)."""
        self._buffer = None
        if self._handle is not None:
            os.close(self._handle)
            self._handle = None

    def __del__(self) -> None:
        self.discard()


def _spill_file(store: ColumnStore) -> int:
    """An unlinked, open spill file in the store's directory."""
    folder = str(store.directory) if store.directory is not None else None
    try:
        handle, path = tempfile.mkstemp(prefix="calaudit-spill-", suffix=".bin", dir=folder)
    except OSError as exc:
        raise _spill_failed(exc, store.directory) from None
    try:
        os.unlink(path)
    except OSError:  # unlinking an open file is not allowed (Windows): leave it to close
        store._leftovers.append(path)
    store.files += 1
    return handle


def _spill_failed(exc: OSError, directory) -> InputError:
    return InputError(f"cannot write a spill file ({exc.strerror or exc})",
                      source=str(directory or tempfile.gettempdir()), rule="spill_failed",
                      hint="free disk space, give --spill-dir elsewhere, or --spill never")
