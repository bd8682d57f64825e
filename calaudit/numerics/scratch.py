"""Per-row working arrays of the audit's stages: anonymous memory, or spilled to disk.

Every stage after the load needs some arrays of ``n`` rows while it runs (residuals, bin
and cell indices, orders, per-row kernel sums...). They are allocated here, through one
allocator: :func:`empty` is ``np.empty`` unless an audit runs with spill on
(``--spill``, :mod:`calaudit.data.spill`), in which case it returns a memory-mapped,
already unlinked file of the spill directory (the same mechanism as the loaded columns).
So with spill the stages' working arrays are page-cache pages the system can write back
and drop, not anonymous memory, and an input larger than memory runs with anonymous
memory bounded by the row blocks (:data:`BLOCK` rows of temporaries) and the statistics'
state (bins, grids, resample matrices).

Spilled or not, an array holds the same bits: the arrays are filled a block of rows at a
time with the same elementwise operations (:func:`filled`, :func:`copy`), and reductions
then run over the whole array as before, so the summation order never changes.

The allocator is installed by the audit runner for the duration of the stages
(:func:`spilling`); it is a module-level setting, not a context variable, so the stages'
worker threads see it too. Arrays smaller than :data:`MIN_BYTES` stay anonymous.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

#: Rows of one block of temporaries when an array is filled.
BLOCK = 1 << 18
#: Arrays below this size are always ``np.empty`` (a file per small array saves nothing).
MIN_BYTES = 1 << 20

Allocator = Callable[[tuple[int, ...], np.dtype], np.ndarray]
_ALLOCATOR: list[Allocator | None] = [None]


@contextmanager
def spilling(allocate: Allocator | None) -> Iterator[None]:
    """Allocate the working arrays with ``allocate(shape, dtype)`` (a spill store's
    ``empty``) inside the block; ``None`` keeps them anonymous."""
    previous = _ALLOCATOR[0]
    _ALLOCATOR[0] = allocate
    try:
        yield
    finally:
        _ALLOCATOR[0] = previous


def active() -> bool:
    """Whether working arrays are spilled now."""
    return _ALLOCATOR[0] is not None


def empty(shape: int | tuple[int, ...], dtype=np.float64) -> np.ndarray:
    """An uninitialised working array: spilled when :func:`active` and large enough."""
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
    dtype = np.dtype(dtype)
    allocate = _ALLOCATOR[0]
    if allocate is None or int(np.prod(shape)) * dtype.itemsize < MIN_BYTES:
        return np.empty(shape, dtype=dtype)
    return allocate(shape, dtype)


def zeros(shape: int | tuple[int, ...], dtype=np.float64) -> np.ndarray:
    """A working array of zeros (a spill file is created zero-filled)."""
    out = empty(shape, dtype)
    if not active() or out.nbytes < MIN_BYTES:
        out.fill(0)
    return out


def filled(n: int, fill: Callable[[int, int], np.ndarray], dtype=np.float64,
           tail: tuple[int, ...] = (), block: int | None = None) -> np.ndarray:
    """A working array of ``n`` rows (each of shape ``tail``) whose rows
    ``start:stop`` are ``fill(start, stop)``, one block at a time: the temporaries of
    ``fill`` are at most ``block`` rows."""
    out = empty((n, *tail), dtype)
    block = block or BLOCK
    for start in range(0, n, block):
        stop = min(start + block, n)
        out[start:stop] = fill(start, stop)
    return out


def copy(array: np.ndarray, dtype=None) -> np.ndarray:
    """A working (C-contiguous) copy of ``array``, converted to ``dtype`` if given
    (``array.astype(dtype)``'s values), copied a block of rows at a time."""
    array = np.asarray(array)
    dtype = array.dtype if dtype is None else np.dtype(dtype)
    if array.ndim == 0:
        return array.astype(dtype)
    return filled(array.shape[0], lambda a, b: array[a:b], dtype, array.shape[1:])


def take(array: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``array[rows]`` (an integer index) as a working array, gathered a block of rows at
    a time."""
    return filled(rows.shape[0], lambda a, b: array[rows[a:b]], array.dtype, array.shape[1:])


def converted(array: np.ndarray, dtype) -> np.ndarray:
    """``np.asarray(array, dtype)``: ``array`` itself when it already has that dtype, else
    a working copy (:func:`copy`)."""
    array = np.asarray(array)
    return array if array.dtype == np.dtype(dtype) else copy(array, dtype)


def blocks(n: int, block: int | None = None) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of consecutive row blocks covering ``range(n)``."""
    block = block or BLOCK
    for start in range(0, n, block):
        yield start, min(start + block, n)
