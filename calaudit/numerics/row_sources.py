"""Row sources: where the partials of a row reduction read their rows (issue 14).

A reduction (:mod:`calaudit.numerics.row_blocks`) evaluates ``partial(start, stop,
**shared)`` on fixed row ranges. A partial that takes a *row source* in ``shared`` reads
the columns of its own range through

    source.read(start, stop, names) -> {name: ndarray of stop - start rows}

so the same partial runs on rows held in memory (:class:`ArrayRows`, the trivial source:
slices of arrays) or on rows that stay in their files until a task reads them
(:class:`calaudit.data.row_source.ParquetRows`: a list of files and their row counts,
a few hundred bytes however many rows, so a Dask task loads its range on the worker
instead of receiving the whole column). A source is picklable and read-only.

:func:`resident` places a source on the executor's workers once for a block of several
reductions (an iterative fit runs one reduction per Newton step): a no-op in one process;
on Dask (``DaskExecutor.keep``) an :class:`ArrayRows` is placed as row blocks, each held by
one worker (``calaudit.execution.shards``; a task receives its range's blocks), any other
source as one broadcast, released when the block exits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray


class RowSource(Protocol):
    """Rows ``[start, stop)`` of named columns (global row numbers, ``0 <= start <=
    stop <= n``)."""

    n: int

    def read(self, start: int, stop: int, names: Iterable[str]) -> dict[str, NDArray]:
        ...


def column_of(values: Any) -> Any:
    """``values`` as an :class:`ArrayRows` column: an array, or kept as it is when it is an
    array-like that builds the rows asked for (an object with ``shape`` whose ``[lo:hi]``
    is an array, e.g. :class:`calaudit.local.kernel.ScaledRows`), so it is never
    materialised whole."""
    if isinstance(values, np.ndarray) or not (hasattr(values, "shape")
                                              and hasattr(values, "__getitem__")):
        return np.asarray(values)
    return values


class ArrayRows:
    """In-memory columns of equal length: ``read`` returns slices (views, no copies; a
    row-built column (:func:`column_of`) builds the rows of the range)."""

    def __init__(self, columns: Mapping[str, NDArray]) -> None:
        self.columns = {name: column_of(values) for name, values in columns.items()}
        sizes = {values.shape[0] for values in self.columns.values()}
        if len(sizes) > 1:
            raise ValueError(f"columns of different lengths {sorted(sizes)}")
        self.n = sizes.pop() if sizes else 0

    def read(self, start: int, stop: int, names: Iterable[str]) -> dict[str, NDArray]:
        return {name: self.columns[name][start:stop] for name in names}

    def __repr__(self) -> str:
        return f"ArrayRows({sorted(self.columns)}, n={self.n})"


@contextlib.contextmanager
def resident(executor: Any, source: Any) -> Iterator[Any]:
    """``source`` as the executor's reductions should receive it for the block: the
    source itself in one process; a handle to one copy per worker on an executor that
    has ``keep`` / ``release`` (Dask), dropped when the block exits."""
    keep = getattr(executor, "keep", None)
    if keep is None:
        yield source
        return
    handle = keep(source)
    try:
        yield handle
    finally:
        executor.release(handle)
