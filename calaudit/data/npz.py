"""NPZ archives read member by member into the column store (docs/inputs.md, "Out of
core"): each ``.npy`` header checked before anything is allocated (no object arrays; a shape
the member and the archive can hold), then the array filled in chunks through zipfile's
streaming decompression (its CRC check kept)."""

from __future__ import annotations

import math
import os
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from calaudit.data.spill import ColumnStore
from calaudit.data.text_files import READ_ERRORS, check_readable, unreadable
from calaudit.exceptions import InputError

#: Bytes read from a member at a time.
CHUNK_BYTES = 1 << 20
#: The most a deflate stream can expand (the format's limit is about 1032:1).
DEFLATE_RATIO = 1032
#: The most columns one 2-D member may have (its columns become named columns).
MAX_COLUMNS = 1 << 20
#: Bytes kept per byte of the members (the raw array and its final column), for spill.
KEPT_FACTOR = 2


class NpzArchive:
    """One ``.npz`` file, read once (on the first call) into ``store``."""

    def __init__(self, path: Path, store: ColumnStore | None = None) -> None:
        self.path = path
        self.store = store if store is not None else ColumnStore()
        self._columns: dict[str, np.ndarray] | None = None

    def columns(self) -> dict[str, np.ndarray]:
        """Every named column (1-D arrays, views of the members)."""
        if self._columns is None:
            check_readable(self.path)
            try:
                self._columns = layout(read_members(self.path, self.store), self.path)
            except InputError:
                raise
            except READ_ERRORS as exc:
                raise unreadable(self.path, "npz", exc) from None
        return self._columns

    def frame(self, names: list[str]) -> pd.DataFrame:
        """The requested columns, without copying them; the others are released."""
        columns = self.columns()
        frame = pd.DataFrame({name: pd.Series(columns[name], name=name, copy=False)
                              for name in names}, copy=False)
        self._columns = {name: columns[name] for name in names}
        return frame


def read_members(path: Path, store: ColumnStore) -> dict[str, np.ndarray]:
    """The arrays of an NPZ archive, each member checked before it is read."""
    if not zipfile.is_zipfile(path):
        raise InputError("not an NPZ archive (a zip file of .npy arrays)", source=str(path),
                         rule="npz_layout", hint="save the arrays with numpy.savez")
    arrays: dict[str, np.ndarray] = {}
    size = os.stat(path).st_size
    with zipfile.ZipFile(path) as archive:
        members = [info for info in archive.infolist() if not info.is_dir()]
        store.decide(KEPT_FACTOR * sum(info.file_size for info in members))
        for info in members:
            if not info.filename.endswith(".npy"):
                raise InputError(f"member '{info.filename}' is not a .npy array",
                                 source=str(path), rule="npz_layout",
                                 hint="an NPZ archive holds only arrays: write it with numpy.savez")
            key = info.filename[:-len(".npy")]
            with archive.open(info) as member:
                shape, fortran, dtype = _header(member, key, info.file_size, path)
                _check_declared(archive, info, key, path, size)
                arrays[key] = _fill(member, shape, fortran, dtype, store)
    return arrays


def _header(handle, key: str, size: int, path: Path):
    """Shape, Fortran order and dtype of a member of ``size`` bytes, checked."""
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
    if len(shape) == 2 and shape[1] > MAX_COLUMNS:
        raise _npy_error(key, path, f"header declares {shape[1]:,} columns; at most "
                         f"{MAX_COLUMNS:,} are read")
    return shape, fortran, dtype


def _check_declared(archive: zipfile.ZipFile, info: zipfile.ZipInfo, key: str, path: Path,
                    size: int) -> None:
    """The member's declared size is one the archive can hold (before it is allocated)."""
    if info.compress_type == zipfile.ZIP_STORED:
        possible = info.compress_size == info.file_size and (
            info.header_offset + info.compress_size <= size)
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        possible = info.compress_size <= size and (
            info.file_size <= DEFLATE_RATIO * info.compress_size + CHUNK_BYTES)
    else:  # bzip2 / lzma: count the decompressed bytes once, keeping none
        with archive.open(info) as member:
            count = sum(len(chunk) for chunk in iter(lambda: member.read(CHUNK_BYTES), b""))
        possible = count == info.file_size
    if not possible:
        raise _npy_error(key, path, f"the zip directory declares {info.file_size:,} bytes, "
                         f"which its {info.compress_size:,} stored bytes cannot hold")


def _fill(member, shape: tuple[int, ...], fortran: bool, dtype: np.dtype,
          store: ColumnStore) -> np.ndarray:
    """The member's array in ``store``, read :data:`CHUNK_BYTES` at a time."""
    stored = tuple(reversed(shape)) if fortran else shape
    out = store.empty(stored, dtype)
    flat = out.reshape(-1).view(np.uint8)
    done = 0
    while done < flat.size:
        chunk = member.read(min(CHUNK_BYTES, flat.size - done))
        if not chunk:
            raise ValueError(f"cannot reshape array of size {done // dtype.itemsize} into "
                             f"shape {shape}")
        flat[done:done + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
        done += len(chunk)
    return out.T if fortran else out


def _npy_error(key: str, path: Path, message: str, rule: str = "npz_layout") -> InputError:
    return InputError(f"array '{key}': {message}", source=str(path), rule=rule,
                      hint="write the archive with numpy.savez")


def layout(arrays: dict[str, np.ndarray], path: Path) -> dict[str, np.ndarray]:
    """The members as named columns: ``probs`` or ``probs_<class>``, ``labels``, one column
    per covariate."""
    columns: dict[str, np.ndarray] = {}
    names = _names(arrays, "class_names")
    covariate_names = _names(arrays, "covariate_names")
    for key, array in arrays.items():
        if key in ("class_names", "covariate_names"):
            continue
        if key == "covariates" and array.ndim == 2:
            if covariate_names is None or len(covariate_names) != array.shape[1]:
                raise InputError("array 'covariates' is 2-D but 'covariate_names' is missing "
                                 "or has the wrong length", source=str(path), rule="npz_layout",
                                 hint="store covariate_names (d,) next to covariates (n, d)")
            columns.update({name: array[:, j] for j, name in enumerate(covariate_names)})
        elif array.ndim == 1:
            columns[key] = array
        elif array.ndim == 2:
            suffixes = (names if key == "probs" and names
                        else [str(j) for j in range(array.shape[1])])
            if len(suffixes) != array.shape[1]:
                raise InputError(f"'class_names' has {len(suffixes)} entries but '{key}' has "
                                 f"{array.shape[1]} columns", source=str(path), rule="npz_layout")
            columns.update({f"{key}_{s}": array[:, j] for j, s in enumerate(suffixes)})
        else:
            raise InputError(f"array '{key}' has {array.ndim} dimensions; expected 1 or 2",
                             source=str(path), rule="npz_layout")
    lengths = {key: len(col) for key, col in columns.items()}
    if len(set(lengths.values())) > 1:
        raise InputError(f"arrays have different lengths: {lengths}", source=str(path),
                         rule="length_mismatch")
    return columns


def _names(arrays: dict[str, np.ndarray], key: str) -> list[str] | None:
    return [str(v) for v in np.asarray(arrays[key]).reshape(-1)] if key in arrays else None
