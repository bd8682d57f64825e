"""Where the loader's columns live: anonymous memory, or memory-mapped files in the spill
directory (``--spill``; docs/inputs.md, "Out of core"). Each spill file is unlinked as soon
as it is open (nothing is left on disk however the process ends) and its blocks reserved
before they are written (a full disk is one ``[spill_failed]`` line, never a ``SIGBUS``).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import weakref
from pathlib import Path

import numpy as np

from calaudit.exceptions import ConfigError, InputError

SPILL_MODES = ("auto", "always", "never")
#: Rows converted at a time when the loader fills a column (its temporaries are this size).
BLOCK = 1 << 20
#: ``auto`` spills when the kept columns would take more than this share of the memory
#: available (the audit's stages need the rest).
SPILL_FRACTION = 0.25


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation now, or None when unknown."""
    with contextlib.suppress(OSError, ValueError, IndexError), \
            open("/proc/meminfo", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def should_spill(mode: str, estimated_bytes: int, available: int | None = None) -> bool:
    """``always``, ``never``, or ``auto`` by estimate."""
    if mode != "auto":
        return mode == "always"
    available = available_memory() if available is None else available
    return available is not None and estimated_bytes > SPILL_FRACTION * available


class ColumnStore:
    """Allocates the loader's columns: anonymous, or spilled to memory-mapped files;
    :meth:`decide` fixes the choice before any row is read."""

    def __init__(self, mode: str = "never", directory: str | os.PathLike[str] | None = None):
        if mode not in SPILL_MODES:
            raise ConfigError(f"data.spill must be one of {', '.join(SPILL_MODES)}; "
                              f"got {mode!r}", hint="use --spill auto, always or never")
        self.mode = mode
        self.directory = None if directory is None else Path(directory)
        self.spilling = mode == "always"
        self.decided = mode != "auto"
        self.files = 0  # columns written to disk so far
        self._leftovers: list[str] = []
        weakref.finalize(self, _remove_all, self._leftovers)

    def decide(self, estimated_bytes: int) -> None:
        """Fix whether to spill, from the estimated bytes of the kept columns."""
        self.spilling = should_spill(self.mode, estimated_bytes)
        self.decided = True
        if self.spilling:
            self._check_directory()

    def empty(self, shape: int | tuple[int, ...], dtype) -> np.ndarray:
        """An uninitialised column: ``np.empty``, or a memory-mapped file when spilling."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        dtype = np.dtype(dtype)
        if not self.spilling or int(np.prod(shape)) * dtype.itemsize == 0:
            return np.empty(shape, dtype=dtype)
        from numpy.lib.format import open_memmap

        if not self.files:
            self._check_directory()
        handle, path = self._new_file(".npy")
        try:
            mapped = open_memmap(path, mode="w+", dtype=dtype, shape=shape)
            if hasattr(os, "posix_fallocate"):  # a full disk fails here, not as a SIGBUS
                os.posix_fallocate(handle, 0, os.fstat(handle).st_size)
        except OSError as exc:
            _remove_all([path])
            raise spill_failed(exc, self.directory) from None
        finally:
            os.close(handle)
        self._unlink(path)  # the mapping keeps the data
        return mapped.view(np.ndarray)

    def open_file(self) -> int:
        """An open, unlinked spill file (for a :class:`GrowingColumn`)."""
        handle, path = self._new_file(".bin")
        self._unlink(path)
        return handle

    def _new_file(self, suffix: str) -> tuple[int, str]:
        folder = str(self.directory) if self.directory is not None else None
        try:
            return tempfile.mkstemp(prefix="calaudit-spill-", suffix=suffix, dir=folder)
        except OSError as exc:
            raise spill_failed(exc, self.directory) from None

    def _unlink(self, path: str) -> None:
        try:
            os.unlink(path)
        except OSError:  # not allowed while open (Windows): removed at close
            self._leftovers.append(path)
        self.files += 1

    def close(self) -> None:
        """Remove any file that could not be unlinked while mapped."""
        _remove_all(self._leftovers)

    def _check_directory(self) -> None:
        if self.directory is None:
            return
        try:
            mode = os.stat(self.directory).st_mode
        except FileNotFoundError:
            problem = "the spill directory does not exist"
        except OSError as exc:  # a name too long, a file in the path, no permission
            problem = f"cannot use the spill directory ({exc.strerror or exc})"
        else:
            problem = "" if stat.S_ISDIR(mode) else "the spill directory is not a directory"
        if problem:
            raise InputError(problem, source=str(self.directory), rule="spill_failed",
                             hint="create it or give another --spill-dir")
        if not os.access(self.directory, os.W_OK | os.X_OK):
            raise InputError("the spill directory is not writable", source=str(self.directory),
                             rule="spill_failed", hint="give another --spill-dir")


def spill_failed(exc: OSError, directory) -> InputError:
    return InputError(f"cannot write a spill file ({exc.strerror or exc})",
                      source=str(directory or tempfile.gettempdir()), rule="spill_failed",
                      hint="free disk space, give --spill-dir elsewhere, or --spill never")


def _remove_all(paths: list[str]) -> None:
    while paths:
        with contextlib.suppress(OSError):
            os.unlink(paths.pop())


def in_blocks(store: ColumnStore, shape: int | tuple[int, ...], dtype, fill) -> np.ndarray:
    """A store column of ``shape`` (n rows) filled :data:`BLOCK` rows at a time by
    ``fill(start, stop) -> values`` (so no n-row temporary is built)."""
    out = store.empty(shape, dtype)
    for start in range(0, out.shape[0], BLOCK):
        stop = min(start + BLOCK, out.shape[0])
        out[start:stop] = fill(start, stop)
    return out


class GrowingColumn:
    """Rows of fixed-size items appended in batches: a ``bytearray`` that grows in place
    without spill, else an unlinked spill file, memory-mapped once the last batch is in.
    Numbers of several dtypes of one size can share it (their bytes are kept as given)."""

    def __init__(self, store: ColumnStore, dtype) -> None:
        self.dtype = np.dtype(dtype)
        self.rows = 0
        self._directory = store.directory
        self._handle: int | None = store.open_file() if store.spilling else None
        self._buffer: bytearray | None = None if store.spilling else bytearray()

    def append(self, values: np.ndarray) -> None:
        """Add rows (any dtype of this column's item size)."""
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
                raise spill_failed(exc, self._directory) from None
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
        """The rows as one writable array; the column cannot grow after this."""
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
