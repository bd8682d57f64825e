"""The scale layer: where row reductions run, behind one interface.

A statistic that is a sum over rows is written as a *partial* over fixed row ranges
(:mod:`calaudit.scale.blocks`) and run through :func:`map_sum`, :func:`map_exact_sum`,
:func:`map_combine`, :func:`map_rows` or :func:`map_pairs`; :func:`resident` and
:func:`made` place a row source or a made value once where the partials run, and
:func:`kept` keeps a per-row map's results there as a row source. The executor
(:class:`ThreadExecutor`, the default; :class:`SerialExecutor`; :class:`DaskExecutor`) is
chosen once by the owner of the run with :func:`using`. Every executor folds the partials
in range order, so a result is the same bytes on every one. A reduction started inside
another reduction's task runs in that task, one range after another.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from numpy.typing import NDArray

from calaudit.scale.blocks import (
    ROW_BLOCK,
    TASK_ROWS,
    Partial,
    block_rng,
    blocks,
    fold,
    n_blocks,
    stack_rows,
    stream_key,
    stream_seed,
    task_ranges,
)
from calaudit.scale.context import CHOSEN, IN_TASK, in_task
from calaudit.scale.dask_executor import DaskExecutor, fold_in_order
from calaudit.scale.sources import ArrayRows, BlockTable, DerivedRows, column_of
from calaudit.scale.threads import (
    SerialExecutor,
    ThreadExecutor,
    one_blas_thread,
    release_free_memory,
    usable_cores,
)

__all__ = [
    "ArrayRows", "BlockTable", "DaskExecutor", "DerivedRows", "Partial", "ROW_BLOCK",
    "SerialExecutor", "TASK_ROWS", "ThreadExecutor", "block_rng", "blocks", "column_of",
    "current",
    "fold", "fold_in_order", "in_task", "kept", "made", "map_combine", "map_exact_sum",
    "map_pairs", "map_rows", "map_sum", "n_blocks", "one_blas_thread", "open_executor",
    "release_free_memory", "resident", "stack_rows", "stream_key", "stream_seed",
    "task_ranges", "usable_cores", "using",
]


def current() -> Any:
    """The executor reductions run on here: the one chosen by the innermost
    :func:`using`, else a :class:`ThreadExecutor` on the usable cores (inside a task of a
    reduction: :class:`SerialExecutor`)."""
    chosen = CHOSEN.get()
    if chosen is None:
        return ThreadExecutor()
    return _SERIAL if chosen is IN_TASK else chosen


@contextlib.contextmanager
def using(executor: Any) -> Iterator[Any]:
    """Run the reductions of the block on ``executor`` (an object with ``map_sum``,
    ``map_rows`` and ``map_pairs``; ``None``: keep the one in force)."""
    if executor is None:
        yield current()
        return
    if not callable(getattr(executor, "map_sum", None)):
        raise TypeError(f"an executor needs a map_sum(partial, ranges, shared) method; "
                        f"got {type(executor).__name__}")
    token = CHOSEN.set(executor)
    try:
        yield executor
    finally:
        CHOSEN.reset(token)


def map_sum(partial: Partial, ranges: Sequence[tuple[int, int]],
            shared: Mapping[str, Any]) -> dict[str, NDArray]:
    """``partial(start, stop, **shared)`` for every range, summed in range order, on the
    executor in force (:func:`current`)."""
    return current().map_sum(partial, ranges, shared)


def map_exact_sum(partial: Partial, ranges: Sequence[tuple[int, int]],
                  shared: Mapping[str, Any]) -> dict[str, NDArray]:
    """:func:`map_sum` of a partial whose sums are exact (integer counts, values on fixed
    grids that never round, rows in disjoint slots): any order of addition gives the same
    bytes, so an executor may add them where they are computed (Dask: on the workers)."""
    executor = current()
    exact = getattr(executor, "map_exact_sum", None)
    return (exact if exact is not None else executor.map_sum)(partial, ranges, shared)


def map_combine(partial: Partial, ranges: Sequence[tuple[int, int]],
                shared: Mapping[str, Any], combine: Callable[[Iterator[Any]], Any]) -> Any:
    """``combine`` of ``partial(start, stop, **shared)`` for every range, handed over in
    range order as they arrive, on the executor in force (a reduction whose partials are
    not added: laws multiplied, sparse tables merged; the result is the same whoever
    computes the partials)."""
    return current().map_combine(partial, ranges, shared, combine)


def map_rows(partial: Partial, ranges: Sequence[tuple[int, int]],
             shared: Mapping[str, Any]) -> dict[str, NDArray]:
    """``partial(start, stop, **shared)`` for every range, each giving arrays of
    ``stop - start`` rows: their rows in range order, on the executor in force."""
    return current().map_rows(partial, ranges, shared)


def map_pairs(partial: Callable[..., Any], pairs: Sequence[tuple[int, int]],
              blocks: Sequence[Any], shared: Mapping[str, Any],
              combine: Callable[[Iterator[Any]], Any]) -> Any:
    """``combine`` of ``partial(i, j, blocks[i], blocks[j], **shared)`` for every pair,
    in the given order, on the executor in force (a task sees its two blocks only)."""
    return current().map_pairs(partial, pairs, blocks, shared, combine)


@contextlib.contextmanager
def resident(source: Any) -> Iterator[Any]:
    """``source`` as the reductions of the block should receive it: the source itself in
    this process, and everywhere for a source whose tasks read their own rows
    (``reads_own_rows``: files, not rows); on an executor with ``keep`` / ``release``
    (Dask) a handle to its copy on the workers, dropped when the block exits."""
    executor = current()
    keep = getattr(executor, "keep", None)
    if keep is None or getattr(source, "reads_own_rows", False):  # tasks read their rows
        yield source
        return
    with _released(executor, keep(source)) as handle:
        yield handle


@contextlib.contextmanager
def made(function: Callable[..., Any], *args: Any) -> Iterator[Any]:
    """``function(*args)`` (a pure function of small arguments, e.g. a seeded draw) as the
    reductions of the block should receive it in ``shared``: the value itself in this
    process; on an executor with ``make`` (Dask) a handle to the value made by one task
    on a worker (the caller never holds it; Dask makes it again from its arguments if the
    worker is lost), dropped when the block exits."""
    executor = current()
    make = getattr(executor, "make", None)
    if make is None:
        yield function(*args)
        return
    with _released(executor, make(function, args)) as handle:
        yield handle


@contextlib.contextmanager
def kept(partial: Partial, ranges: Sequence[tuple[int, int]],
         shared: Mapping[str, Any]) -> Iterator[Any]:
    """``partial(start, stop, **shared)`` of every range (arrays of ``stop - start`` rows,
    as :func:`map_rows`), kept where they were computed, as a row source a later
    reduction receives in ``shared`` (``read(start, stop, names)`` within its range):
    in this process the rows of :func:`map_rows` (an :class:`ArrayRows`, the same bytes);
    on an executor with ``keep_rows`` (Dask) a handle to the tasks' results on the
    workers (never fetched here; Dask makes a lost one again from its task), dropped when
    the block exits. ``ranges``: :func:`task_ranges` of the rows."""
    executor = current()
    keep_rows = getattr(executor, "keep_rows", None)
    if keep_rows is None:
        yield ArrayRows(executor.map_rows(partial, ranges, shared))
        return
    with _released(executor, keep_rows(partial, ranges, shared)) as handle:
        yield handle


@contextlib.contextmanager
def _released(executor: Any, handle: Any) -> Iterator[Any]:
    """``handle``, released from ``executor`` when the block exits."""
    try:
        yield handle
    finally:
        executor.release(handle)


def open_executor(settings: Any, warn: Callable[[str], None] | None = None) -> Any:
    """The executor the ``[dask]`` settings ask for (:func:`calaudit.scale.cluster.
    open_executor`): a context manager giving a Dask executor, or ``None`` for this
    process."""
    from calaudit.scale.cluster import open_executor as open_cluster

    return open_cluster(settings, warn=warn)


_SERIAL = SerialExecutor()
