"""Where the loaded columns live: anonymous memory, or memory-mapped files on disk (spill).

The loader allocates every column it keeps (the raw columns a dataset is read into, and
the final ``y_proba``, ``y_true`` and covariates of
:class:`~calaudit.data.dataset.CalibrationData`) through one :class:`ColumnStore`. Without
spill a column is ``np.empty``. With spill it is a ``numpy.lib.format.open_memmap`` file in
the spill directory, returned as a plain ``ndarray`` view: every stage works on it
unchanged, and the operating system pages its rows in and out of the page cache instead of
holding them in anonymous memory.

The rule (``data.spill``, ``--spill``):

* ``never``: anonymous arrays (the behaviour before spill existed);
* ``always``: memory-mapped files;
* ``auto`` (default): spill when the estimated bytes of the kept columns exceed
  :data:`SPILL_FRACTION` of the memory available now (``MemAvailable`` of
  ``/proc/meminfo``, else ``os.sysconf`` free pages).

The spill directory is ``data.spill_dir`` (``--spill-dir``), else the system temporary
directory. Each file is unlinked as soon as it is mapped, so nothing is left on disk
whatever way the process ends (success, error, Ctrl-C, even ``kill -9``); the disk space
is returned when the last view of the column is freed. Where unlinking an open file is not
allowed (Windows), the file is removed when the store is closed or at exit.
"""

from __future__ import annotations

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
#: available when the load starts (the audit's stages need the rest).
SPILL_FRACTION = 0.25


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation now, or None when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def should_spill(mode: str, estimated_bytes: int, available: int | None = None) -> bool:
    """The documented rule above: ``always``, ``never``, or ``auto`` by estimate."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    available = available_memory() if available is None else available
    return available is not None and estimated_bytes > SPILL_FRACTION * available


class ColumnStore:
    """Allocates the loader's columns: anonymous, or spilled to memory-mapped files.

    ``mode`` and ``directory`` are the settings; :meth:`decide` fixes the choice once the
    number of rows is known (before any row is read).
    """

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

    def decide(self, estimated_bytes: int) -> bool:
        """Fix whether to spill, from the estimated bytes of the kept columns."""
        self.spilling = should_spill(self.mode, estimated_bytes)
        self.decided = True
        if self.spilling:
            self._check_directory()
        return self.spilling

    def empty(self, shape: int | tuple[int, ...], dtype) -> np.ndarray:
        """An uninitialised column: ``np.empty``, or a memory-mapped file when spilling."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        dtype = np.dtype(dtype)
        if not self.spilling or int(np.prod(shape)) * dtype.itemsize == 0:
            return np.empty(shape, dtype=dtype)
        from numpy.lib.format import open_memmap

        if not self.files:
            self._check_directory()
        folder = str(self.directory) if self.directory is not None else None
        path = None
        try:
            handle, path = tempfile.mkstemp(prefix="calaudit-spill-", suffix=".npy",
                                            dir=folder)
            os.close(handle)
            mapped = open_memmap(path, mode="w+", dtype=dtype, shape=shape)
            _reserve(path)
        except OSError as exc:
            if path is not None:
                _remove(path)
            raise InputError(f"cannot write a spill file ({exc.strerror or exc})",
                             source=str(self.directory or tempfile.gettempdir()),
                             rule="spill_failed",
                             hint="free disk space, give --spill-dir elsewhere, or --spill "
                                  "never") from None
        try:
            os.unlink(path)  # the mapping keeps the data; no file is left behind
        except OSError:
            self._leftovers.append(path)
        self.files += 1
        return mapped.view(np.ndarray)

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


def _reserve(path: str) -> None:
    """Allocate the file's disk blocks now: a full disk is then an error here, not a
    ``SIGBUS`` when a page of the mapping is first written."""
    if not hasattr(os, "posix_fallocate"):
        return
    handle = os.open(path, os.O_RDWR)
    try:
        os.posix_fallocate(handle, 0, os.fstat(handle).st_size)
    finally:
        os.close(handle)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _remove_all(paths: list[str]) -> None:
    while paths:
        _remove(paths.pop())


def in_blocks(store: ColumnStore, n: int, dtype, fill) -> np.ndarray:
    """A store column of ``n`` rows filled :data:`BLOCK` rows at a time by
    ``fill(start, stop) -> values`` (so no n-row temporary is built)."""
    out = store.empty(n, dtype)
    for start in range(0, n, BLOCK):
        stop = min(start + BLOCK, n)
        out[start:stop] = fill(start, stop)
    return out
