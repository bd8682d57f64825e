"""Windows: rows cut into consecutive windows in time order (rules: ``docs/monitoring.md``).

* a **calendar period** ``'<k>H'``, ``'<k>D'``, ``'<k>W'`` (from Monday), ``'<k>M'``,
  ``'<k>Q'``, ``'<k>Y'``, anchored at fixed dates (1970-01-01, Monday 1970-01-05, January
  1970), never at the data: a window's key is its period number since the anchor, so a row
  falls into the same window whatever else is in the file. Aware times are taken in UTC;
  periods without rows are counted in ``Windows.empty_periods``.
* a **row count** ``N`` (``5000`` or ``'5000rows'``): runs of ``N`` rows in time order; each
  call starts a new window.
* a **batch column**: one window per value, ordered by earliest time (else first
  appearance).

Rows keep time order inside a window (stable sort). At most :data:`MAX_WINDOWS` per call."""

from __future__ import annotations

import datetime
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calaudit.exceptions import ConfigError, InputError, clip

#: Windows in one call at most: each window costs a logistic fit and a bootstrap, and the
#: per-window table and state history grow with the count (10,000 daily windows are 27
#: years). More windows is an input error asking for a longer window.
MAX_WINDOWS = 10_000
#: The largest row count or period count a window rule may give (beyond it a window would
#: span more rows or time than any data set holds).
MAX_WINDOW_SIZE = 10**15

_CALENDAR = re.compile(r"^\s*(\d*)\s*([HhDWMQY])\s*$")
#: The most periods of each unit in one window: 1,000 years.
_MAX_PERIODS = {"H": 8_760_000, "D": 365_000, "W": 52_000, "M": 12_000, "Q": 4_000,
                "Y": 1_000}
_ROWS = re.compile(r"^\s*(\d+)\s*(rows?)?\s*$")
_MONTHS = {"M": 1, "Q": 3, "Y": 12}
_HOURS = {"H": 1, "D": 24, "W": 24 * 7}
_EPOCH = pd.Timestamp("1970-01-01")
_MONDAY = pd.Timestamp("1970-01-05")


@dataclass(frozen=True)
class WindowRule:
    """A parsed window rule: ``kind`` is ``'calendar'`` (``unit`` one of H, D, W, M, Q, Y,
    ``size`` periods per window), ``'rows'`` (``size`` rows) or ``'batch'``."""

    kind: str
    size: int = 1
    unit: str = ""

    def text(self) -> str:
        """The canonical spelling, stored in the monitoring state."""
        if self.kind == "calendar":
            return f"{self.size}{self.unit}"
        return f"{self.size}rows" if self.kind == "rows" else "batch"


def parse_window(spec: str | int) -> WindowRule:
    """The :class:`WindowRule` of ``'1M'``, ``'7D'``, ``'12H'``, ``'W'``, ``5000``,
    ``'5000rows'`` or ``'batch'``; anything else is a :class:`ConfigError`."""
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        return _rows_rule(int(spec), str(spec))
    text = str(spec)
    if text.strip().lower() == "batch":
        return WindowRule("batch")
    rows = _ROWS.match(text)
    if rows:
        return _rows_rule(int(rows.group(1)), text)
    match = _CALENDAR.match(text)
    if not match:
        raise ConfigError(f"--window '{text}': not a window rule [window]",
                          hint="use a period such as 1M, 7D, 12H, W, Q, Y, a row count "
                               "such as 5000, or 'batch' with a batch column")
    size = int(match.group(1) or 1)
    unit = match.group(2).upper()
    if size > _MAX_PERIODS[unit]:
        raise ConfigError(f"--window '{text}': a window longer than 1,000 years [window]",
                          hint="for example 1M or 7D")
    if size < 1:
        raise ConfigError(f"--window '{text}': the period count must be at least 1 "
                          "[window]", hint="for example 1M or 7D")
    return WindowRule("calendar", size, unit)


def _rows_rule(size: int, text: str) -> WindowRule:
    if size < 1:
        raise ConfigError(f"--window '{text}': a window needs at least 1 row [window]",
                          hint="give a positive row count")
    if size > MAX_WINDOW_SIZE:
        raise ConfigError(f"--window '{text}': a window of more than {MAX_WINDOW_SIZE:.0e} "
                          "rows [window]", hint="give a row count such as 5000")
    return WindowRule("rows", size)


@dataclass(frozen=True)
class Windows:
    """Rows assigned to windows: window ``w`` holds ``order[bounds[w]:bounds[w + 1]]``;
    ``keys``, ``labels``, ``starts`` and ``ends`` (ISO times, or None) are per window."""

    order: NDArray[np.int64]
    bounds: NDArray[np.int64]
    keys: tuple
    labels: tuple[str, ...]
    starts: tuple[str | None, ...]
    ends: tuple[str | None, ...]
    empty_periods: int = 0

    @property
    def count(self) -> int:
        """The number of windows."""
        return len(self.keys)

    def rows(self, w: int) -> NDArray[np.int64]:
        """The row indices of window ``w`` in time order."""
        return self.order[self.bounds[w]:self.bounds[w + 1]]

    def of_rows(self) -> NDArray[np.int64]:
        """Each row's window number (in file order)."""
        out = np.empty(self.order.size, dtype=np.int64)
        out[self.order] = np.repeat(np.arange(self.count), np.diff(self.bounds))
        return out


def assign_windows(rule: WindowRule, n: int, *, times: Sequence | None = None,
                   batch: Sequence | None = None, first_key: int = 0,
                   first_row: int = 0, source: str = "data", time_col: str = "time",
                   batch_col: str = "batch") -> Windows:
    """Assign ``n`` rows to windows by ``rule``. ``times``/``batch``: the time and batch
    columns; ``first_key``, ``first_row``: a continued run's first row-window number and rows
    before; errors name ``source`` and the column."""
    if n < 1:
        raise InputError("no rows to assign to windows", source=source, rule="window")
    if rule.kind == "calendar":
        if times is None:
            raise ConfigError(f"--window {rule.text()} needs a time column [window]",
                              hint="give --time-col, or a row count or batch column")
        stamps = _datetimes(times, n, source, time_col)
        return _calendar(rule, stamps, source)
    order = _time_order(times, n, source, time_col)
    if rule.kind == "rows":
        return _by_rows(rule.size, order, first_key, first_row, source)
    if batch is None:
        raise ConfigError("--window batch needs a batch column [window]",
                          hint="give --batch-col")
    return _by_batch(np.asarray(batch, dtype=object), order, n, source, batch_col)


def _datetimes(times: Sequence, n: int, source: str, column: str) -> pd.Series:
    """``times`` as naive UTC datetimes: strings (ISO 8601, else parsed one by one),
    datetimes or dates; numbers and other types are refused, so are missing times."""
    values = pd.Series(times) if not isinstance(times, pd.Series) else times
    values = values.reset_index(drop=True)
    if len(values) != n:
        raise InputError(f"{len(values)} times for {n} rows", source=source, column=column,
                         rule="window")
    _refuse_missing(values.isna().to_numpy(), source, column)
    if not pd.api.types.is_datetime64_any_dtype(values):
        odd = [v for v in values if not isinstance(v, (str, datetime.date, np.datetime64))]
        if odd:
            raise InputError(f"cannot be read as dates and times (a value of type "
                             f"{type(odd[0]).__name__}: {clip(repr(odd[0]), 40)})",
                             source=source, column=column, rule="window_times",
                             hint="use ISO 8601 times such as 2024-03-31T12:00:00")
    stamps = _parsed(values, source, column)
    _refuse_missing(stamps.isna().to_numpy(), source, column)
    return stamps.dt.tz_convert("UTC").dt.tz_localize(None)


def _parsed(values: pd.Series, source: str, column: str) -> pd.Series:
    problem: Exception | None = None
    for how in ("ISO8601", "mixed"):
        try:
            return pd.to_datetime(values, utc=True, format=how)
        except (ValueError, TypeError, OverflowError) as exc:
            problem = problem or exc
    raise InputError(f"cannot be read as dates and times ({_first_line(problem)})",
                     source=source, column=column, rule="window_times",
                     hint="use ISO 8601 times such as 2024-03-31T12:00:00")


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__


def _refuse_missing(missing: NDArray[np.bool_], source: str, column: str) -> None:
    if missing.any():
        first = int(np.flatnonzero(missing)[0])
        raise InputError(f"{int(missing.sum())} missing or unreadable times (first at row "
                         f"{first})", source=source, column=column, rule="window_times",
                         hint="drop or fill the rows without a time")


def _time_order(times: Sequence | None, n: int, source: str,
                column: str) -> NDArray[np.int64]:
    if times is None:
        return np.arange(n, dtype=np.int64)
    values = pd.Series(times) if not isinstance(times, pd.Series) else times
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        numbers = values.to_numpy(dtype=np.float64)
        if len(numbers) != n:
            raise InputError(f"{len(numbers)} times for {n} rows", source=source,
                             column=column, rule="window")
        _refuse_missing(~np.isfinite(numbers), source, column)
        return np.argsort(numbers, kind="stable").astype(np.int64)
    stamps = _datetimes(values, n, source, column)
    return np.argsort(stamps.to_numpy(), kind="stable").astype(np.int64)


def _calendar(rule: WindowRule, stamps: pd.Series, source: str) -> Windows:
    keys = _period_numbers(rule, stamps)
    order = np.argsort(stamps.to_numpy(), kind="stable").astype(np.int64)
    sorted_keys = keys[order]
    unique, first = np.unique(sorted_keys, return_index=True)
    _check_count(unique.size, source, rule.text())
    bounds = np.append(first, order.size).astype(np.int64)
    try:
        starts = tuple(_period_start(rule, int(k)) for k in unique)
        ends = tuple(_period_start(rule, int(k) + 1) for k in unique)
        labels = tuple(_label(rule, s) for s in starts)
        iso = tuple(s.isoformat() for s in starts), tuple(e.isoformat() for e in ends)
    except (ValueError, OverflowError, NotImplementedError):
        # pandas' OutOfBounds* are ValueErrors; strftime before year 1 is NotImplemented
        raise InputError(f"the windows of {rule.text()} reach beyond the years 1-9999 "
                         "that window bounds can have", source=source, rule="window",
                         hint="use a shorter window") from None
    empty = int(unique[-1] - unique[0] + 1 - unique.size)
    return Windows(order, bounds, tuple(int(k) for k in unique), labels, *iso, empty)


def _period_numbers(rule: WindowRule, stamps: pd.Series) -> NDArray[np.int64]:
    """The period number of every time: months since January 1970 (or hours since the
    epoch, weeks since Monday 1970-01-05) floor-divided by the periods per window."""
    if rule.unit in _MONTHS:
        months = (stamps.dt.year.to_numpy(np.int64) - 1970) * 12 + \
            stamps.dt.month.to_numpy(np.int64) - 1
        return np.floor_divide(months, _MONTHS[rule.unit] * rule.size)
    anchor = _MONDAY if rule.unit == "W" else _EPOCH
    step = pd.Timedelta(hours=_HOURS[rule.unit] * rule.size)
    return ((stamps - anchor) // step).to_numpy(np.int64)


def _period_start(rule: WindowRule, key: int) -> pd.Timestamp:
    if rule.unit in _MONTHS:
        months = key * _MONTHS[rule.unit] * rule.size
        return pd.Timestamp(year=1970 + months // 12, month=months % 12 + 1, day=1)
    anchor = _MONDAY if rule.unit == "W" else _EPOCH
    return anchor + key * pd.Timedelta(hours=_HOURS[rule.unit] * rule.size)


def _label(rule: WindowRule, start: pd.Timestamp) -> str:
    if rule.unit == "Y" and rule.size == 1:
        return start.strftime("%Y")
    if rule.unit in _MONTHS:
        return start.strftime("%Y-%m")
    return start.strftime("%Y-%m-%d %H:00" if rule.unit == "H" else "%Y-%m-%d")


def _by_rows(size: int, order: NDArray[np.int64], first_key: int, first_row: int,
             source: str) -> Windows:
    count = -(-order.size // size)
    _check_count(count, source, f"{size}rows")
    bounds = np.minimum(np.arange(count + 1, dtype=np.int64) * size, order.size)
    keys = tuple(first_key + w for w in range(count))
    labels = tuple(f"rows {first_row + int(bounds[w]) + 1}-{first_row + int(bounds[w + 1])}"
                   for w in range(count))
    return Windows(order, bounds, keys, labels, (None,) * count, (None,) * count)


def _by_batch(batch: NDArray, order: NDArray[np.int64], n: int, source: str,
              column: str) -> Windows:
    if batch.size != n:
        raise InputError(f"{batch.size} batch values for {n} rows", source=source,
                         column=column, rule="window")
    missing = pd.isna(batch)
    if missing.any():
        raise InputError(f"{int(missing.sum())} rows without a batch (first at row "
                         f"{int(np.flatnonzero(missing)[0])})", source=source,
                         column=column, rule="window_batch", hint="fill the batch column")
    names = np.array([str(b) for b in batch[order]], dtype=object)
    first_seen: dict[str, int] = {}
    for position, name in enumerate(names):
        first_seen.setdefault(name, position)
    keys = sorted(first_seen, key=first_seen.__getitem__)
    _check_count(len(keys), source, "batch")
    rank = {name: w for w, name in enumerate(keys)}
    window_of = np.fromiter((rank[name] for name in names), dtype=np.int64, count=n)
    within = np.argsort(window_of, kind="stable")
    bounds = np.searchsorted(window_of[within], np.arange(len(keys) + 1)).astype(np.int64)
    return Windows(order[within], bounds, tuple(keys), tuple(keys), (None,) * len(keys),
                   (None,) * len(keys))


def _check_count(count: int, source: str, rule: str) -> None:
    if count > MAX_WINDOWS:
        raise InputError(f"window rule {rule} gives {count:,} windows, more than the "
                         f"limit of {MAX_WINDOWS:,}", source=source, rule="window_count",
                         hint="use a longer window")
