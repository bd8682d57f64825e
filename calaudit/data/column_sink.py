"""One requested column of a dataset (:class:`calaudit.data.partitioned.Dataset`), filled
file by file and batch by batch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from calaudit.data.spill import ColumnStore
from calaudit.exceptions import InputError, clip


@dataclass
class ColumnSink:
    """One requested column over every file read so far: its kind fixed by the first file
    with values, its text levels in order of appearance. A Parquet dataset's column is
    preallocated from the footers (:meth:`allocate`) and each batch written in place
    (:meth:`put`); a CSV dataset's is grown by
    :class:`~calaudit.data.csv_stream.CsvColumn`, which sets ``out`` at the end."""

    name: str
    kind: str | None = None  # "numeric", "text", "bool"; None until a file has values
    first: str = ""  # the file that fixed the kind
    chunks: list[np.ndarray] = field(default_factory=list)
    levels: dict[Any, int] = field(default_factory=dict)
    #: numpy dtypes the files' batches convert to (numeric columns; for the final dtype)
    dtypes: list[np.dtype] = field(default_factory=list)
    out: np.ndarray | None = None
    filled: int = 0

    def expect(self, kind: str | None, type_name: str, source: str) -> None:
        if kind is None:
            return
        if self.kind is None:
            self.kind, self.first = kind, source
        elif kind != self.kind:
            raise InputError(f"holds {type_name} values but {clip(self.first, 200)} holds "
                             f"{_KIND_WORDS[self.kind]}", source=source, column=self.name,
                             rule="schema_mismatch",
                             hint="every file of a dataset needs the same column types")

    def final_dtype(self) -> np.dtype:
        """The dtype the concatenated batches would have: int32 text codes, int8 booleans,
        for numbers numpy's result type of the files' when an integer type, else float64."""
        if self.kind in ("text", "bool"):
            return STORAGE[self.kind]
        if self.kind is None or not self.dtypes:
            return np.dtype(np.float64)
        kind = np.result_type(*self.dtypes)
        return kind if kind.kind in "iu" else np.dtype(np.float64)

    def allocate(self, rows: int, store: ColumnStore) -> None:
        self.out = store.empty(rows, self.final_dtype())

    def put(self, values: np.ndarray) -> None:
        """The next rows of the column (converted to its final dtype as they are written)."""
        if self.out is None:
            self.chunks.append(values)
            return
        stop = self.filled + len(values)
        self.out[self.filled:stop] = values
        self.filled = stop

    def codes(self, values: list[Any], indices: np.ndarray, null: np.ndarray) -> np.ndarray:
        """Global int32 codes of dictionary ``values`` indexed by ``indices``; -1 where null."""
        mapping = np.array([self.levels.setdefault(v, len(self.levels)) for v in values] or [0],
                           dtype=np.int32)
        out = mapping[np.where(null, 0, indices)]
        out[null] = -1
        return out

    def series(self) -> pd.Series:
        """The column as a pandas Series (categorical for text)."""
        if self.out is not None:
            values, self.out = self.out, None
        else:
            values = np.concatenate(self.chunks) if self.chunks else np.zeros(0)
        self.chunks = []
        if self.kind == "text":
            categories = pd.Index(list(self.levels), dtype=object)
            return pd.Series(pd.Categorical.from_codes(values.astype(np.int32, copy=False),
                                                       categories),
                             name=self.name, copy=False)
        if self.kind == "bool":
            null = values < 0
            if not null.any():
                return pd.Series(values.astype(bool), name=self.name, copy=False)
            return pd.Series(pd.arrays.BooleanArray(values > 0, null), name=self.name)
        if self.kind is None:
            values = np.full(values.shape, np.nan)
        elif values.dtype.kind not in "iu":
            values = values.astype(np.float64, copy=False)
        return pd.Series(values, name=self.name, copy=False)


#: Storage of each kind: numbers as 8-byte words, text as int32 codes, booleans as int8.
STORAGE = {"numeric": np.dtype(np.float64), "text": np.dtype(np.int32),
           "bool": np.dtype(np.int8)}
MISSING = {"numeric": np.nan, "text": -1, "bool": -1}
_KIND_WORDS = {"numeric": "numbers", "text": "text", "bool": "booleans"}


def append_arrow(sink: ColumnSink, array, pa) -> None:
    """One batch of a column, appended as compact numpy."""
    import pyarrow.compute as pc

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_null(array.type) or sink.kind is None:
        kind = sink.kind or "numeric"
        sink.put(np.full(len(array), MISSING[kind], dtype=STORAGE[kind]))
    elif sink.kind == "text":
        encoded = array if pa.types.is_dictionary(array.type) else pc.dictionary_encode(array)
        null = np.asarray(encoded.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        indices = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False)
        sink.put(sink.codes(encoded.dictionary.to_pylist(), indices, null))
    elif sink.kind == "bool":
        null = np.asarray(array.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        values = np.asarray(array.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.int8)
        values[null] = -1
        sink.put(values)
    elif sink.kind == "numeric":
        if pa.types.is_dictionary(array.type):
            array = array.dictionary_decode()
        if pa.types.is_integer(array.type) and array.null_count == 0:
            sink.put(array.to_numpy(zero_copy_only=False))  # exact, even 2**63 - 1
        else:
            sink.put(pc.cast(array, pa.float64()).to_numpy(zero_copy_only=False))
