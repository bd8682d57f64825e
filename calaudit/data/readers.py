"""Reading CSV / TSV (optionally gzipped), Parquet and NPZ files into pandas tables.

Each reader offers ``columns(path)`` (the names, read cheaply: a CSV header, a Parquet
schema) and ``read(path, columns)`` (only the requested columns). NPZ archives are read
with ``allow_pickle=False`` and flattened into named columns (``probs`` or
``probs_<class>``, ``labels``, one column per covariate). Every failure becomes an
:class:`~calaudit.exceptions.InputError` naming the file.
"""

from __future__ import annotations

import hashlib
import math
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from calaudit.data.text_files import check_field_counts, check_header, encoding_error
from calaudit.exceptions import InputError
from calaudit.files import FileProblem, check_regular

SUFFIXES = {
    ".csv": "csv",
    ".csv.gz": "csv",
    ".tsv": "tsv",
    ".tsv.gz": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".npz": "npz",
}

#: Strings read as missing in CSV/TSV (pandas' defaults minus words like "None"/"NA"
#: that could be genuine category names are *not* removed: these are the usual ones).
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
        return {
            "role": self.role,
            "path": self.path,
            "format": self.format,
            "sha256": self.sha256,
            "rows": self.rows,
            "size": self.size,
            "fingerprint_kind": self.fingerprint_kind,
            "fingerprint": self.fingerprint if self.fingerprint is not None else self.sha256,
        }


def file_format(path: Path) -> str:
    """``csv``, ``tsv``, ``parquet`` or ``npz`` from the file name's suffix."""
    name = path.name.lower()
    for suffix, fmt in sorted(SUFFIXES.items(), key=lambda item: -len(item[0])):
        if name.endswith(suffix):
            return fmt
    raise InputError(
        f"unsupported file type '{''.join(path.suffixes) or path.name}'",
        source=str(path),
        rule="unsupported_format",
        hint="use .csv, .tsv (optionally .gz), .parquet or .npz",
    )


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    with path.open("rb") as handle:
        return sha256_stream(handle)


def sha256_stream(handle) -> str:
    """Hex SHA-256 of everything left in a binary file object, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    for chunk in iter(lambda: handle.read(1 << 20), b""):
        digest.update(chunk)
    return digest.hexdigest()


def check_readable(path: Path) -> None:
    """Raise a clear error unless ``path`` is a readable regular file (a FIFO, device or
    directory is refused before it is opened, so nothing blocks)."""
    try:
        check_regular(path)
    except FileProblem as exc:
        raise InputError(exc.message, source=str(path), rule=exc.rule, hint=exc.hint) from None


def _unreadable(path: Path, fmt: str, exc: BaseException) -> InputError:
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return InputError(
        f"cannot read this {fmt} file ({detail})",
        source=str(path),
        rule="unreadable_file",
        hint="the file may be truncated or not in the format its suffix says",
    )


_READ_ERRORS = (
    OSError,
    EOFError,
    ValueError,
    UnicodeDecodeError,
    zipfile.BadZipFile,
    pd.errors.ParserError,
    pd.errors.EmptyDataError,
)


def _arrow_errors() -> tuple[type[BaseException], ...]:
    import pyarrow as pa

    return (pa.ArrowException,)


def read_columns(path: Path) -> list[str]:
    """Column names of a file, without reading its data."""
    check_readable(path)
    fmt = file_format(path)
    try:
        if fmt in ("csv", "tsv"):
            header = pd.read_csv(path, sep="," if fmt == "csv" else "\t", nrows=1,
                                 header=None, dtype=str, keep_default_na=False)
            names = [str(c) for c in header.iloc[0]] if len(header) else []
            return check_header(names, path, fmt)
        if fmt == "parquet":
            import pyarrow.parquet as pq

            return check_header(list(pq.read_schema(path).names), path, fmt)
        return list(_npz_frame(path).columns)
    except InputError:
        raise
    except UnicodeDecodeError:
        raise encoding_error(path) from None
    except _READ_ERRORS + _arrow_errors() as exc:
        raise _unreadable(path, fmt, exc) from None


def read_table(path: Path, columns: list[str]) -> pd.DataFrame:
    """The requested columns of a file, in the requested order."""
    check_readable(path)
    fmt = file_format(path)
    try:
        if fmt in ("csv", "tsv"):
            frame = pd.read_csv(
                path,
                sep="," if fmt == "csv" else "\t",
                usecols=columns,
                na_values=NA_STRINGS,
                keep_default_na=False,
                low_memory=False,
            )
            check_field_counts(path, "," if fmt == "csv" else "\t", len(read_columns(path)))
        elif fmt == "parquet":
            frame = _parquet_frame(path, columns)
        else:
            frame = _npz_frame(path)[columns]
    except InputError:
        raise
    except UnicodeDecodeError:
        raise encoding_error(path) from None
    except _READ_ERRORS + _arrow_errors() as exc:
        raise _unreadable(path, fmt, exc) from None
    return frame[columns]


def _npz_frame(path: Path) -> pd.DataFrame:
    """Flatten an NPZ archive into named columns (see the module docstring)."""
    columns: dict[str, np.ndarray] = {}
    arrays = _npz_arrays(path)
    names = _npz_names(arrays, "class_names")
    covariate_names = _npz_names(arrays, "covariate_names")
    for key, array in arrays.items():
        if key in ("class_names", "covariate_names"):
            continue
        if key == "covariates" and array.ndim == 2:
            if covariate_names is None or len(covariate_names) != array.shape[1]:
                raise InputError(
                    "array 'covariates' is 2-D but 'covariate_names' is missing or has the "
                    "wrong length",
                    source=str(path),
                    rule="npz_layout",
                    hint="store covariate_names (d,) next to covariates (n, d)",
                )
            columns.update({name: array[:, j] for j, name in enumerate(covariate_names)})
        elif array.ndim == 1:
            columns[key] = array
        elif array.ndim == 2:
            suffixes = (names if key == "probs" and names
                        else [str(j) for j in range(array.shape[1])])
            if len(suffixes) != array.shape[1]:
                raise InputError(
                    f"'class_names' has {len(suffixes)} entries but '{key}' has "
                    f"{array.shape[1]} columns",
                    source=str(path),
                    rule="npz_layout",
                )
            columns.update({f"{key}_{s}": array[:, j] for j, s in enumerate(suffixes)})
        else:
            raise InputError(
                f"array '{key}' has {array.ndim} dimensions; expected 1 or 2",
                source=str(path),
                rule="npz_layout",
            )
    lengths = {key: len(col) for key, col in columns.items()}
    if len(set(lengths.values())) > 1:
        raise InputError(
            f"arrays have different lengths: {lengths}",
            source=str(path),
            rule="length_mismatch",
        )
    return pd.DataFrame(columns)


def _parquet_frame(path: Path, columns: list[str]) -> pd.DataFrame:
    """The requested Parquet columns; nested types (lists, maps, structs) are refused:
    one value per cell."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=columns)
    refuse_nested(table.schema, columns, str(path))
    return table.to_pandas()


def refuse_nested(schema, columns: list[str], source: str) -> None:
    """Refuse list, map and struct columns among ``columns`` of a Parquet ``schema``."""
    import pyarrow as pa

    for name in columns:
        kind = schema.field(name).type
        if pa.types.is_nested(kind):
            raise InputError(f"holds {kind} values; calaudit reads one value per cell",
                             source=source, column=name, rule="unsupported_type",
                             hint="flatten the column before the audit")


def _npz_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of an NPZ archive, each ``.npy`` member checked before it is read: a
    numeric, boolean or string dtype (never objects), a header whose shape matches the
    member's size."""
    if not zipfile.is_zipfile(path):
        raise InputError("not an NPZ archive (a zip file of .npy arrays)", source=str(path),
                         rule="npz_layout", hint="save the arrays with numpy.savez")
    arrays: dict[str, np.ndarray] = {}
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            if not info.filename.endswith(".npy"):
                raise InputError(f"member '{info.filename}' is not a .npy array",
                                 source=str(path), rule="npz_layout",
                                 hint="an NPZ archive holds only arrays: write it with numpy.savez")
            key = info.filename[:-len(".npy")]
            with archive.open(info) as member:
                arrays[key] = _read_npy(member, key, info.file_size, path)
    return arrays


def _read_npy(handle, key: str, size: int, path: Path) -> np.ndarray:
    """One ``.npy`` member of ``size`` bytes, its header checked against its size."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(handle)
        reader = {(1, 0): fmt.read_array_header_1_0,
                  (2, 0): fmt.read_array_header_2_0}.get(version)
        if reader is None:
            raise ValueError(f"unsupported .npy version {version}")
        shape, fortran, dtype = reader(handle)
    except (ValueError, SyntaxError, TypeError, OverflowError) as exc:
        detail = str(exc) if "version" in str(exc) else "it cannot be parsed"
        raise _npy_error(key, path, f"bad .npy header: {detail}") from None
    if dtype.hasobject:
        raise InputError(f"array '{key}' is an object array, which calaudit never unpickles",
                         source=str(path), rule="npz_object_array",
                         hint="save numeric or fixed-width string arrays (e.g. .astype(str))")
    if dtype.kind not in "biufUSM" or dtype.fields is not None:
        raise _npy_error(key, path, f"dtype {dtype} is not supported (complex, structured "
                         "and raw arrays are not predictions)", "npz_dtype")
    data_size = size - handle.tell()
    expected = math.prod(shape) * dtype.itemsize
    if expected != data_size:
        raise _npy_error(key, path, f"header declares shape {shape} ({expected:,} bytes) "
                         f"but the member holds {data_size:,} bytes")
    data = handle.read(expected)
    array = np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
    return array.copy()


def _npy_error(key: str, path: Path, message: str, rule: str = "npz_layout") -> InputError:
    return InputError(f"array '{key}': {message}", source=str(path), rule=rule,
                      hint="write the archive with numpy.savez")


def _npz_names(arrays: dict[str, np.ndarray], key: str) -> list[str] | None:
    if key not in arrays:
        return None
    return [str(v) for v in np.asarray(arrays[key]).reshape(-1)]
