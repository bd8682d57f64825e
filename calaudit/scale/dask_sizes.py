"""Bytes as Dask counts them: ``dask.sizeof`` taught the row sources and block tables,
and an estimate for objects Dask knows nothing about (for the ``--verbose`` traffic
lines and the workers' memory accounting)."""

from __future__ import annotations

from typing import Any


def register_sizes() -> None:
    """Teach ``dask.sizeof`` the size of an in-memory row source (the sum of its columns)
    and of a block table."""
    try:
        from dask.sizeof import sizeof
    except ImportError:
        return
    from calaudit.scale.sources import ArrayRows, BlockTable

    @sizeof.register(ArrayRows)
    def _rows(rows: ArrayRows) -> int:  # a compact piece (``row_block``) by its nbytes
        return int(sum(int(getattr(column, "nbytes", 0)) or sizeof(column)
                       for column in rows.columns.values()))

    @sizeof.register(BlockTable)
    def _table(table: BlockTable) -> int:
        return table.nbytes


def size_of(value: Any) -> int:
    """Bytes of ``value`` as Dask counts them (``dask.sizeof``; 0 if it cannot say). An
    object Dask knows nothing about (a kernel's rows, curve requests) counts the arrays it
    holds (:func:`held_bytes`), not the few bytes of its own header."""
    try:
        from dask.sizeof import sizeof
    except ImportError:
        return 0
    try:
        return held_bytes(value, sizeof, sizeof.dispatch(object), set(), 0)
    except Exception:  # noqa: BLE001 - an estimate for the progress lines only
        return 0


def held_bytes(value: Any, sizeof: Any, default: Any, seen: set[int], depth: int) -> int:
    """``dask.sizeof`` of ``value`` where Dask has a rule for its type; else the sum over
    the items or attributes it holds (each object once, a few levels deep)."""
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if sizeof.dispatch(type(value)) is not default or depth > 6:
        if isinstance(value, (list, tuple, dict)) and depth <= 6:
            items = value.values() if isinstance(value, dict) else value
            return sum(held_bytes(v, sizeof, default, seen, depth + 1) for v in items)
        return int(sizeof(value))
    attributes = getattr(value, "__dict__", None)
    if attributes is None or isinstance(value, type):
        return int(sizeof(value))
    return sum(held_bytes(v, sizeof, default, seen, depth + 1) for v in attributes.values())
