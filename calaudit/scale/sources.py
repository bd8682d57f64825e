"""Row sources: where the partials of a row reduction read their rows.

A partial that takes a row source in ``shared`` reads the columns of its own range through
``source.read(start, stop, names) -> {name: ndarray of stop - start rows}``, whether the
rows are held in memory (:class:`ArrayRows`) or stay in their files until a task reads
them (``calaudit.data.row_source.ParquetRows``). A source is picklable and read-only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray


def column_of(values: Any) -> Any:
    """``values`` as an :class:`ArrayRows` column: an array, or kept as it is when it is an
    array-like that builds the rows asked for (an object with ``shape`` whose ``[lo:hi]``
    is an array, e.g. :class:`calaudit.local.kernel.ScaledRows`), so it is never
    materialised whole."""
    if isinstance(values, np.ndarray) or not (hasattr(values, "shape")
                                              and hasattr(values, "__getitem__")):
        return np.asarray(values)
    return values


class DerivedRows:
    """Base of a row source whose columns each task computes from the rows of its
    ``source`` (a source that reads its own rows, e.g. a dataset's files): it travels
    inside each task, so nothing is placed and Dask reruns a lost task from its spec."""

    reads_own_rows = True

    @property
    def n(self) -> int:
        return int(self.source.n)


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


class BlockTable:
    """A table with one entry per fixed block of ``block`` rows (entry ``k`` for rows
    ``[k block, (k + 1) block)`` of ``n``), read as ``table[k]`` with the global entry
    number and ``shape`` of the whole table. Row-blocked: on Dask a task holds only the
    entries of its range (:meth:`row_block`, :meth:`joined`)."""

    def __init__(self, values: NDArray, block: int, n: int, first: int = 0,
                 entries: int | None = None) -> None:
        self.values, self.block, self.n, self.first = values, int(block), int(n), int(first)
        self.entries = values.shape[0] if entries is None else int(entries)

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.entries, *self.values.shape[1:])

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes)

    def __getitem__(self, k: int) -> NDArray:
        if not self.first <= k < self.first + self.values.shape[0]:
            raise IndexError(f"entry {k} is not held here (entries {self.first}-"
                             f"{self.first + self.values.shape[0] - 1})")
        return self.values[k - self.first]

    def row_block(self, lo: int, hi: int) -> BlockTable:
        """The entries of the rows ``[lo, hi)``."""
        a, b = lo // self.block, -(-hi // self.block)
        return BlockTable(self.values[a - self.first:b - self.first], self.block, self.n,
                          a, self.entries)

    @staticmethod
    def joined(n: int, blocks: list[list[Any]]) -> BlockTable:
        """The entries of consecutive blocks ``[[lo, hi, BlockTable], ...]`` (two blocks
        may share the entry their boundary falls in)."""
        tables = [block[2] for block in blocks]
        if len(tables) == 1:
            return tables[0]
        parts, end = [], tables[0].first
        for table in tables:
            skip = end - table.first
            parts.append(table.values[skip:])
            end = table.first + table.values.shape[0]
        first = tables[0]
        return BlockTable(np.concatenate(parts), first.block, n, first.first, first.entries)

    def __repr__(self) -> str:
        return (f"BlockTable(entries {self.first}-{self.first + self.values.shape[0] - 1} "
                f"of {self.entries}, {self.block} rows each)")
