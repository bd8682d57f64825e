"""CSV / TSV files read in chunks of rows into growing columns (docs/inputs.md, "Out of
core"), every cell parsed to the same bits as by a whole-file ``pd.read_csv``. pandas infers
a dtype per chunk but a whole-file read one per file, so each file's column is reconciled
at its end (:func:`reconcile`). Errors come in a whole-file read's order: the parser's, the
field counts, then each column's kind against the other files'.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from calaudit.data import spill
from calaudit.data.column_sink import MISSING, STORAGE, ColumnSink
from calaudit.data.readers import NA_STRINGS, read_columns, read_errors
from calaudit.data.spill import ColumnStore, GrowingColumn
from calaudit.data.text_files import check_field_counts, delimiter

#: Rows per chunk parsed from a CSV / TSV file.
BATCH_ROWS = 65_536
#: Largest integer magnitude whose float64 is exact (parsed as text or converted alike).
EXACT_INTEGER = 2**53
#: Integers from this magnitude on overflow int64 (pandas then infers by context).
BIG_INTEGER = 2.0**63
_LONG_INTEGER = r"\s*[+-]?\d{19,}\s*"


def _read_csv(path: Path, fmt: str, columns: list[str], **options):
    return pd.read_csv(path, sep=delimiter(fmt), usecols=columns, na_values=NA_STRINGS,
                       keep_default_na=False, low_memory=False, **options)


def chunks(path: Path, fmt: str, columns: list[str], dtype: dict | None = None
           ) -> Iterator[pd.DataFrame]:
    """The columns of a CSV / TSV file, :data:`BATCH_ROWS` at a time, parsed (and failing)
    as a whole-file read."""
    with read_errors(path, fmt), _read_csv(path, fmt, columns, dtype=dtype,
                                           chunksize=BATCH_ROWS) as reader:
        for chunk in reader:
            yield chunk[columns]


def chunk_class(values: pd.Series) -> tuple[str, int]:
    """What pandas made of a chunk's column (``na``: every cell missing, ``int``, ``uint``,
    ``float``, ``bool``, ``str``, ``other``) and its largest integer magnitude. A chunk that
    may hold an integer beyond int64 is ``other``: only the whole file decides its dtype."""
    kind = values.dtype.kind
    if kind == "f":
        finite = values.to_numpy()
        if np.isnan(finite).all():
            return "na", 0
        big = np.abs(finite[np.isfinite(finite)]) >= BIG_INTEGER
        return ("other" if big.any() else "float"), 0
    if kind == "i":
        array = values.to_numpy()
        return "int", max(abs(int(array.max())), abs(int(array.min()))) if len(array) else 0
    if kind == "b":
        return "bool", 0
    if pd.api.types.is_string_dtype(values.dtype) and not values.dtype == object:
        return ("other" if values.str.fullmatch(_LONG_INTEGER).any() else "str"), 0
    return "other", 0


def reconcile(classes: set[str], missing: bool, largest: int) -> tuple[str, str | None]:
    """The dtype a whole-file read gives a column whose chunks were ``classes``, and how to
    get it: ``None`` (as written; integers beside floats up to 2**53 become float64 in
    place), or read again as ``str`` (text, or booleans beside numbers), ``float``
    (integers beyond 2**53 beside floats) or ``whole`` (one column of the whole file)."""
    if not classes:
        return "float64", None
    if "other" in classes:
        return "", "whole"
    if classes == {"str"}:
        return "str", None
    if classes <= {"int", "float"}:
        if classes == {"int"} and not missing:
            return "int64", None
        return "float64", ("float" if "int" in classes and largest > EXACT_INTEGER else None)
    if classes == {"bool"} and not missing:
        return "bool", None
    if "str" in classes or ("bool" in classes and classes & {"int", "uint", "float"}):
        return "str", "str"
    return "", "whole"


def file_kind(type_name: str, again: str | None) -> str:
    """The kind of a file's column with values whose whole-file dtype is ``type_name``,
    read as written (``again`` None) or again as ``str`` or ``float`` (:func:`reconcile`)."""
    if again is not None:
        return "text" if again == "str" else "numeric"
    return {"bool": "bool", "int64": "numeric", "float64": "numeric"}.get(type_name, "text")


@dataclass
class FileChunks:
    """What one file's column's chunks were, and where its rows start."""

    name: str = ""
    start: int = 0  # rows of the column before this file
    classes: set[str] = field(default_factory=set)
    missing: bool = False
    largest: int = 0
    deferred: bool = False  # stopped writing: the file's column is read again at its end

    def note(self, values: pd.Series) -> str | None:
        """Record a chunk's class (:func:`chunk_class`), missing cells and largest
        integer; its class (None: no rows)."""
        if not len(values):
            return None
        klass, largest = chunk_class(values)
        if klass == "na":
            self.missing = True
            return klass
        self.classes.add(klass)
        self.largest = max(self.largest, largest)
        self.missing = self.missing or bool(values.hasnans)
        return klass

    def reconciled(self) -> tuple[str, str | None]:
        """:func:`reconcile` of the chunks."""
        return reconcile(self.classes, self.missing, self.largest)


_CHUNK_KINDS = {"int": "numeric", "uint": "numeric", "float": "numeric", "bool": "bool",
                "str": "text"}


class CsvColumn:
    """A dataset column read from CSV / TSV files: its :class:`ColumnSink`, and its rows in
    a :class:`GrowingColumn` of the kind's storage. Numbers keep runs of their dtype
    (``segments``: end row, dtype), converted in place at the end."""

    def __init__(self, sink: ColumnSink, store: ColumnStore) -> None:
        self.sink = sink
        self.store = store
        self.missing_rows = 0  # rows before any storage existed (all missing)
        self.grown: GrowingColumn | None = None
        self.storage: str | None = None
        self.segments: list[tuple[int, np.dtype]] = []
        #: a file with no value came while the column was numeric or had no kind yet:
        #: concatenating the files' columns makes the numbers float64
        self.promoted = False

    @property
    def rows(self) -> int:
        return self.grown.rows if self.grown is not None else self.missing_rows

    def begin(self) -> FileChunks:
        return FileChunks(self.sink.name, self.rows)

    # -- writing ------------------------------------------------------------------------
    def add(self, state: FileChunks, values: pd.Series) -> None:
        """One chunk of the file's column."""
        klass = state.note(values)
        if klass == "na" and not state.deferred:
            self._write_missing(len(values))
        if klass in (None, "na") or state.deferred:
            return
        kind = _CHUNK_KINDS.get(klass)
        # another kind than the storage's, after another file's values or within this file
        if kind is None or kind != self.storage and (
                self.storage is not None and self.sink.kind is not None
                or self.rows > state.start):
            state.deferred = True
            self._truncate(state.start)
            return
        self._use_storage(kind, state.start)
        self._put(encoded(self.sink, values, kind))

    def _use_storage(self, kind: str, start: int) -> None:
        """Storage for ``kind``, replacing one of another kind (whose rows are all
        missing)."""
        if self.storage == kind:
            return
        if self.grown is not None:
            self.grown.discard()
        self.grown, self.storage, self.segments = GrowingColumn(self.store, STORAGE[kind]), kind, []
        self.missing_rows = 0
        self._write_missing(start)

    def _put(self, values: np.ndarray) -> None:
        self.grown.append(values)
        if self.storage == "numeric":
            if self.segments and self.segments[-1][1] == values.dtype:
                self.segments[-1] = (self.grown.rows, values.dtype)
            else:
                self.segments.append((self.grown.rows, values.dtype))

    def _write_missing(self, count: int) -> None:
        if count <= 0:
            return
        if self.grown is None:
            self.missing_rows += count
        else:
            self._put(np.full(count, MISSING[self.storage], dtype=STORAGE[self.storage]))

    def _truncate(self, rows: int) -> None:
        """Forget this column's rows from row ``rows`` on."""
        if self.grown is None:
            self.missing_rows = min(self.missing_rows, rows)
            return
        self.grown.truncate(rows)
        kept = []
        for end, dtype in self.segments:
            if end >= rows:
                if not kept or kept[-1][0] < rows:
                    kept.append((rows, dtype))
                break
            kept.append((end, dtype))
        self.segments = [(end, d) for end, d in kept if end > 0]

    # -- the end of a file --------------------------------------------------------------
    def end(self, state: FileChunks, source: str, path: Path, fmt: str) -> None:
        """Check the file's column against the other files' and complete its rows: as
        written, or read again (:func:`reconcile`)."""
        dtype_name, again = state.reconciled()
        if state.deferred and again is None:
            again = {"str": "str", "float64": "float"}.get(dtype_name, "whole")
        parts: Iterator[pd.Series] = iter(())
        kind = file_kind(dtype_name, again) if state.classes and again != "whole" else None
        if again is not None:
            self._truncate(state.start)
        if again == "whole":
            with read_errors(path, fmt):
                values = _read_csv(path, fmt, [state.name])[state.name]
            parts = iter([values])
            dtype_name, kind = str(values.dtype), _pandas_kind(values)
        elif again is not None:
            parts = (c[state.name] for c in chunks(
                path, fmt, [state.name], {state.name: str if again == "str" else np.float64}))
        if kind is None and self.sink.kind in (None, "numeric"):
            self.promoted = True
        self.sink.expect(kind, dtype_name, source)
        for values in parts:
            if kind is None:
                self._write_missing(len(values))
            else:
                self._use_storage(self.sink.kind, state.start)
                self._put(encoded(self.sink, values, self.sink.kind))

    # -- the end of the dataset ---------------------------------------------------------
    def finish(self) -> None:
        """Hand the whole column to the sink (``sink.out``) in its final dtype, numbers
        converted in place a block at a time."""
        if self.grown is None:
            dtype = self.sink.final_dtype() if self.missing_rows else np.float64
            self.sink.out = self.store.empty(self.missing_rows, dtype)
            self.sink.out[:] = MISSING.get(self.sink.kind or "numeric")
            return
        out = self.grown.finish()
        self.grown = None
        if self.storage == "numeric":
            self.sink.dtypes = [dtype for _, dtype in self.segments] + (
                [np.dtype(np.float64)] if self.promoted else [])
            final = self.sink.final_dtype()
            begin = 0
            for end, dtype in self.segments:
                if dtype != final:
                    for a in range(begin, end, spill.BLOCK):
                        b = min(a + spill.BLOCK, end)
                        out[a:b].view(final)[:] = out[a:b].view(dtype).astype(final)
                begin = end
            out = out.view(final)
        self.sink.out = out


def encoded(sink: ColumnSink, values: pd.Series, kind: str) -> np.ndarray:
    """A chunk of a file's column in the storage of ``kind`` (:data:`STORAGE`): numbers as
    parsed (int64 or float64), booleans as int8 (-1 missing), text as ``sink``'s codes."""
    if kind == "numeric":
        if values.dtype.kind in "iu":
            return values.to_numpy()
        return values.to_numpy(dtype=np.float64, na_value=np.nan)
    null = values.isna().to_numpy()
    if kind == "bool":
        filled = values.to_numpy(dtype=object, na_value=False).astype(bool)
        return np.where(null, -1, filled).astype(np.int8)
    codes, uniques = pd.factorize(values.astype(object).where(~null, None))
    return sink.codes([str(u) for u in uniques], np.maximum(codes, 0), null)


def _pandas_kind(values: pd.Series) -> str | None:
    """The kind of a whole file's column as pandas read it (``None``: every cell missing)."""
    if values.isna().all():
        return None
    if pd.api.types.is_bool_dtype(values):
        return "bool"
    if pd.api.types.is_numeric_dtype(values):
        return "numeric"
    return "text"


def read_file(path: Path, fmt: str, names: list[str], columns: dict[str, CsvColumn],
              source: str) -> int:
    """Stream one CSV / TSV file into ``columns``; its rows."""
    states = {name: columns[name].begin() for name in names}
    rows = 0
    for chunk in chunks(path, fmt, names):
        rows += len(chunk)
        for name in names:
            columns[name].add(states[name], chunk[name])
    check_field_counts(path, delimiter(fmt), len(read_columns(path)))
    for name in names:
        columns[name].end(states[name], source, path, fmt)
    return rows


#: Bytes sampled from the first file to estimate the rows of a CSV dataset.
SAMPLE_BYTES = 1 << 20


def estimated_rows(location) -> int:
    """About how many rows the files of ``location`` hold (for the ``auto`` spill rule):
    their bytes over the bytes per line of the first file's first MiB of text."""
    total = sum(f.size or 0 for f in location.files)
    if not total:
        return 0
    first = location.files[0]
    opener = (location.filesystem.open if location.filesystem is not None else open)
    try:
        with opener(first.path, "rb") as raw:
            if first.path.lower().endswith(".gz"):
                with gzip.GzipFile(fileobj=raw) as text:
                    sample = text.read(SAMPLE_BYTES)
                ratio = len(sample) / max(raw.tell(), 1)
            else:
                sample, ratio = raw.read(SAMPLE_BYTES), 1.0
    except (OSError, EOFError):
        return 0  # the reader reports the problem
    lines = sample.count(b"\n") or 1
    return int(total * ratio * lines / max(len(sample), 1)) + 1
