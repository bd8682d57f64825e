"""What the file readers share: formats by suffix, provenance (:class:`SourceFile`,
SHA-256), a file's column names, and the errors that name the file."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from calaudit.data.text_files import READ_ERRORS as _READ_ERRORS
from calaudit.data.text_files import check_header, check_readable, delimiter, encoding_error
from calaudit.data.text_files import unreadable as _unreadable
from calaudit.exceptions import InputError

SUFFIXES = {".csv": "csv", ".csv.gz": "csv", ".tsv": "tsv", ".tsv.gz": "tsv",
            ".parquet": "parquet", ".pq": "parquet", ".npz": "npz"}
#: Strings read as missing in CSV/TSV.
NA_STRINGS = ["", "NA", "N/A", "NaN", "nan", "NULL", "null", "#N/A"]


@dataclass(frozen=True)
class SourceFile:
    """Provenance of one input file: ``rows`` read from it, its ``size`` in bytes and its
    fingerprint (``fingerprint_kind`` ``sha256`` of the bytes, or ``etag`` when an object
    store gives one; ``sha256`` is then ``None``)."""

    role: str
    path: str
    format: str
    sha256: str | None
    rows: int
    size: int | None = None
    fingerprint_kind: str = "sha256"
    fingerprint: str | None = None

    def to_dict(self) -> dict[str, object]:
        fingerprint = self.fingerprint if self.fingerprint is not None else self.sha256
        return {**asdict(self), "fingerprint": fingerprint}


def suffix_format(name: str) -> str | None:
    """``csv``, ``tsv``, ``parquet`` or ``npz`` from the end of ``name``, else None."""
    lowered = name.lower()
    return next((fmt for suffix, fmt in sorted(SUFFIXES.items(), key=lambda i: -len(i[0]))
                 if lowered.endswith(suffix)), None)


def file_format(path: Path) -> str:
    fmt = suffix_format(path.name)
    if fmt is not None:
        return fmt
    raise InputError(f"unsupported file type '{''.join(path.suffixes) or path.name}'",
                     source=str(path), rule="unsupported_format",
                     hint="use .csv, .tsv (optionally .gz), .parquet or .npz")


def sha256_of(path: Path) -> str:
    with path.open("rb") as handle:
        return sha256_stream(handle)


def sha256_stream(handle) -> str:
    """Hex SHA-256 of what is left in a binary file object, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    for chunk in iter(lambda: handle.read(1 << 20), b""):
        digest.update(chunk)
    return digest.hexdigest()


def _arrow_errors() -> tuple[type[BaseException], ...]:
    import pyarrow as pa

    return (pa.ArrowException,)


def read_columns(path: Path) -> list[str]:
    """Column names of a file, without reading its data."""
    check_readable(path)
    fmt = file_format(path)
    with read_errors(path, fmt):
        if fmt in ("csv", "tsv"):
            header = pd.read_csv(path, sep=delimiter(fmt), nrows=1, header=None, dtype=str,
                                 keep_default_na=False)
            names = [str(c) for c in header.iloc[0]] if len(header) else []
            return check_header(names, path, fmt)
        if fmt == "parquet":
            import pyarrow.parquet as pq

            return check_header(list(pq.read_schema(path).names), path, fmt)
        from calaudit.data.npz import NpzArchive

        return list(NpzArchive(path).columns())


@contextlib.contextmanager
def read_errors(path: Path, fmt: str) -> Iterator[None]:
    """Inside the block, a failure of the file's parser is one :class:`InputError`."""
    try:
        yield
    except InputError:
        raise
    except UnicodeDecodeError:
        raise encoding_error(path) from None
    except _READ_ERRORS + _arrow_errors() as exc:
        raise _unreadable(path, fmt, exc) from None


def refuse_nested(schema, columns: list[str], source: str) -> None:
    """Refuse list, map and struct columns among ``columns`` of a Parquet ``schema``."""
    import pyarrow as pa

    for name in columns:
        kind = schema.field(name).type
        if pa.types.is_nested(kind):
            raise InputError(f"holds {kind} values; calaudit reads one value per cell",
                             source=source, column=name, rule="unsupported_type",
                             hint="flatten the column before the audit")
