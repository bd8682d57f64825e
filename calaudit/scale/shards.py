"""Rows held in memory, placed on a Dask cluster as row blocks: each block on one worker.

An in-memory row source (:class:`calaudit.scale.ArrayRows`, row-built columns included)
is cut into fixed blocks keyed by global row index, block ``k`` = rows ``[k B, min(n,
(k + 1) B))`` with ``B`` = :func:`block_rows`, and block ``k`` is made by a task that
holds its rows, on the worker Dask chooses (one copy). A task for ``[a,
b)`` receives only the blocks covering it and reads them through :class:`BlockRows`,
with the same ``n`` and ``read`` contract on global row numbers; ranges and the in-order
fold are unchanged, so the bytes are the same. A row-blocked value (``row_block`` /
``joined``, :func:`row_blocked`) is placed the same way. Every block is a task, never
scattered data: the scheduler keeps its rows in the task, so Dask makes a block lost with
its worker again on another worker, and the tasks reading it wait for it (the cost: the
scheduler's process holds a copy of the placed rows). Small shared values are made by a
task too, and sources that read their own rows travel inside the tasks.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.scale.blocks import TASK_ROWS
from calaudit.scale.sources import ArrayRows

#: Rows per placed block (the reductions' task ranges, so a task reads one block).
BLOCK_ROWS = TASK_ROWS


def shardable(value: Any) -> bool:
    """An in-memory row source, or a row-blocked value (:func:`row_blocked`), of at least
    one row: placed as blocks, not broadcast (a source whose tasks read their own rows
    travels inside each task instead)."""
    return ((isinstance(value, ArrayRows) or row_blocked(value)) and value.n > 0
            and not getattr(value, "reads_own_rows", False))


def row_blocked(value: Any) -> bool:
    """A value of ``n`` rows that cuts itself into blocks and joins them again on the
    worker: ``value.row_block(lo, hi)`` (rows ``[lo, hi)`` only, picklable) and
    ``type(block).joined(n, [[lo, hi, block], ...])`` (used by the partial as it would
    use ``value``, for global rows within the blocks)."""
    return hasattr(value, "row_block") and hasattr(value, "joined") and hasattr(value, "n")


def block_rows(executor: Any) -> int:
    """The executor's rows per block (attribute ``block_rows``, else :data:`BLOCK_ROWS`)."""
    rows = int(getattr(executor, "block_rows", BLOCK_ROWS))
    if rows <= 0:
        raise ValueError(f"block rows must be positive; got {rows}")
    return rows


def _block_of(column: Any, lo: int, hi: int) -> Any:
    """Rows ``[lo, hi)`` of a column: a view of an array (pickled, only these rows'
    bytes); a row-built column's ``row_block(lo, hi)`` when it has one (read with local
    row numbers), else the rows it builds."""
    if hasattr(column, "row_block"):
        return column.row_block(lo, hi)
    return np.asarray(column[lo:hi])


class Shards:
    """Client-side handle of a source placed as row blocks (see the module docstring).

    ``futures[k]`` holds block ``k`` = rows ``bounds[k]``; ``nbytes`` counts the bytes
    placed (one copy of every block)."""

    def __init__(self, client: Any, source: ArrayRows, rows: int) -> None:
        self.client, self.source, self.n = client, source, int(source.n)
        self.bounds = [(lo, min(self.n, lo + rows)) for lo in range(0, self.n, rows)]
        self.rows = int(rows)
        self.futures: list[Any] = [None] * len(self.bounds)
        self.nbytes = 0
        self.place(range(len(self.bounds)))

    def __repr__(self) -> str:
        return f"Shards({self.source!r}, {len(self.bounds)} blocks of {self.rows} rows)"

    def block(self, k: int) -> Any:
        """Block ``k``'s rows of every column (of a row-blocked value: its
        ``row_block``), as the worker stores it."""
        lo, hi = self.bounds[k]
        if not isinstance(self.source, ArrayRows):
            return self.source.row_block(lo, hi)
        return ArrayRows({name: _block_of(column, lo, hi)
                          for name, column in self.source.columns.items()})

    def place(self, indices: Iterable[int]) -> None:
        """Submit the tasks holding blocks ``indices`` (:func:`held`)."""
        token = uuid.uuid4().hex[:12]
        for k in indices:
            block = self.block(k)
            self.futures[k] = held(self.client, block, f"calaudit-block-{token}-{k}")
            self.nbytes += _nbytes(block)

    def covering(self, start: int, stop: int) -> range:
        """Indices of the blocks holding rows ``[start, stop)`` (one block for an empty
        range, so a task always has a block to read zero rows from)."""
        first = min(start // self.rows, len(self.bounds) - 1)
        return range(first, max(first + 1, -(-stop // self.rows)))

    def argument(self, start: int, stop: int) -> dict[str, Any]:
        """What the task of rows ``[start, stop)`` receives: ``n`` and ``[lo, hi,
        future]`` of its blocks (Dask replaces the futures by the blocks' values)."""
        return {"n": self.n, "blocks": [[*self.bounds[k], self.futures[k]]
                                        for k in self.covering(start, stop)]}

    def release(self) -> None:
        """Drop every block from the cluster."""
        forget(self.client, [f for f in self.futures if f is not None])


def identity(value: Any) -> Any:
    """``value`` itself: a task that makes a value the tasks of a pass read."""
    return value


def held(client: Any, value: Any, key: str) -> Any:
    """A task holding ``value`` (in the graph, so Dask can make it again); Dask's warning
    about a large graph is expected here. No worker is named: Dask spreads the blocks by
    the workers' queued work, and a task restricted to a worker, even loosely, waits
    forever when every worker is lost at once (it is not sent to the restarted ones)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sending large graph")
        return client.submit(identity, value, key=key, pure=False)


class BlockRows:
    """Worker-side, read-only row source over the blocks a task received: global rows
    ``[start, stop)`` within them, with ``n`` the whole source's row count."""

    def __init__(self, n: int, blocks: list[list[Any]]) -> None:
        self.n = int(n)
        self.blocks = [(int(lo), int(hi), rows) for lo, hi, rows in blocks]

    def read(self, start: int, stop: int, names: Iterable[str]) -> dict[str, NDArray]:
        names = list(names)
        pieces = [(lo, hi, rows) for lo, hi, rows in self.blocks if lo < stop and start < hi]
        if not pieces and start == stop:
            pieces = [self.blocks[0]]
        covered = sum(min(hi, stop) - max(lo, start) for lo, hi, _ in pieces)
        if covered != stop - start:
            held = ", ".join(f"{lo:,}-{hi:,}" for lo, hi, _ in self.blocks)
            raise ValueError(f"rows {start:,}-{stop:,} are outside this task's blocks "
                             f"(rows {held}); a partial reads only its own range")
        parts = [rows.read(max(lo, start) - lo, min(hi, stop) - lo, names)
                 for lo, hi, rows in pieces]
        if len(parts) == 1:
            return parts[0]
        return {name: np.concatenate([part[name] for part in parts]) for name in names}

    def __repr__(self) -> str:
        return f"BlockRows(n={self.n}, blocks={[(lo, hi) for lo, hi, _ in self.blocks]})"


def call_with_blocks(call: Callable[..., Any], partial: Any, start: int, stop: int,
                     shared: Mapping[str, Any], blocks: Mapping[str, Mapping[str, Any]]
                     ) -> Any:
    """One task on a worker: ``call(partial, start, stop, shared)`` with each sharded
    source of ``blocks`` rebuilt as a :class:`BlockRows` under its name."""
    rows = {name: joined(spec["n"], spec["blocks"]) for name, spec in blocks.items()}
    return call(partial, start, stop, {**shared, **rows})


def joined(n: int, blocks: list[list[Any]]) -> Any:
    """The value a task's partial reads from its blocks ``[[lo, hi, block], ...]``: a
    :class:`BlockRows` over row-source blocks, else the row-blocked type's ``joined``."""
    first = blocks[0][2]
    if isinstance(first, ArrayRows):
        return BlockRows(n, blocks)
    return type(first).joined(n, blocks)


def task(call: Callable[..., Any], partial: Any, start: int, stop: int,
         arguments: Mapping[str, Any]) -> tuple[Callable[..., Any], tuple]:
    """``(function, args)`` of the task for rows ``[start, stop)``: ``call(partial,
    start, stop, arguments)`` as it is when nothing is sharded, else
    :func:`call_with_blocks` with each :class:`Shards` replaced by its range's blocks."""
    sharded = {name: value for name, value in arguments.items() if isinstance(value, Shards)}
    if not sharded:
        return call, (partial, start, stop, arguments)
    rest = {name: value for name, value in arguments.items() if name not in sharded}
    blocks = {name: value.argument(start, stop) for name, value in sharded.items()}
    return call_with_blocks, (call, partial, start, stop, rest, blocks)


def place(client: Any, shared: Mapping[str, Any], rows: int) -> dict[str, Shards]:
    """The in-memory row sources given directly in a reduction's ``shared`` (not through
    ``keep``), placed as blocks for this reduction: ``{name: Shards}``."""
    return {name: Shards(client, value, rows) for name, value in shared.items()
            if shardable(value)}


def _nbytes(block: Any) -> int:
    """Bytes of a block: its columns' (an array's or a compact piece's ``nbytes``)."""
    if not isinstance(block, ArrayRows):
        return int(block.nbytes)
    return int(sum(column.nbytes for column in block.columns.values()))


def forget(client: Any, futures: list[Any]) -> None:
    """Cancel pending tasks and drop the cluster's copies of results and placed values
    (best effort: a client whose scheduler is gone has nothing left to release)."""
    try:
        client.cancel(futures)
    except Exception:  # noqa: BLE001, S110 - cleanup after the real outcome
        pass
