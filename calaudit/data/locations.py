"""Where the data is: one local file, or a dataset of files (a directory, a glob, an
fsspec URL).

``locate(spec)`` turns what the user typed into a :class:`Location`:

- a local file (no wildcard, not a directory): ``single`` (read by :mod:`calaudit.data.readers`);
- a local directory: every ``.parquet``/``.pq`` or ``.csv``/``.tsv`` (optionally ``.gz``) file
  below it; hive directories ``key=value/`` become columns;
- a glob (``'preds/*.parquet'``, ``'part-*.csv'``, ``'preds/**/*.parquet'``): the files it
  matches; the directories below its fixed prefix may be hive partitions;
- an fsspec URL (``s3://``, ``gs://``, ``abfs://``, ``memory://`` ...): the same, on that
  filesystem; ``file://`` URLs are local paths.

Files are sorted by path, so global row numbers never depend on listing order. Names
starting with ``.`` or ``_`` (``_SUCCESS``, ``.crc``) are skipped, as Spark and pyarrow do.
Every local file must be a regular file (:func:`calaudit.files.check_regular`); the number of
files and the depth of the directory walk are bounded (:mod:`calaudit.limits`).
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calaudit.data.readers import SUFFIXES, sha256_stream
from calaudit.exceptions import InputError
from calaudit.files import FileProblem, check_regular, describe_os_error
from calaudit.limits import DATASET_MAX_DEPTH, DATASET_MAX_FILES

#: fsspec protocols that need an extra package, with the calaudit extra that installs it.
EXTRAS = {
    "s3": ("s3fs", "s3"), "s3a": ("s3fs", "s3"),
    "gs": ("gcsfs", "gcs"), "gcs": ("gcsfs", "gcs"),
    "abfs": ("adlfs", "azure"), "abfss": ("adlfs", "azure"), "az": ("adlfs", "azure"),
}
#: Keys of an fsspec ``info()`` entry that hold the object store's entity tag.
ETAG_KEYS = ("ETag", "etag", "Etag")
_WILDCARD = re.compile(r"[*?\[]")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset: ``name`` as shown to the user, ``path`` on ``filesystem``."""

    name: str
    path: str
    size: int
    etag: str | None = None


@dataclass(frozen=True)
class Location:
    """The resolved input: ``kind`` is ``file`` (one local file), ``directory``, ``glob`` or
    ``url``; ``files`` are sorted by path; ``base`` is where hive partitions start."""

    spec: str
    kind: str
    format: str
    files: tuple[DataFile, ...] = ()
    base: str | None = None
    filesystem: Any = None  # fsspec filesystem for URLs, None for local paths

    @property
    def is_dataset(self) -> bool:
        return self.kind != "file"


def locate(spec: str | os.PathLike[str]) -> Location:
    """Resolve ``spec`` (see the module docstring)."""
    text = os.fspath(spec)
    if _URL.match(text):
        if text.lower().startswith("file://"):
            return _local(text[len("file://"):], text)
        return _remote(text)
    return _local(text, text)


def _local(path: str, spec: str) -> Location:
    if _WILDCARD.search(path) and not os.path.lexists(path):
        matched = sorted(glob.glob(path, recursive=True))
        files = [_local_file(name) for name in matched if not _skipped(name)]
        return _dataset(spec, "glob", files, _fixed_prefix(path), "matches no data file")
    if os.path.isdir(path):
        return _dataset(spec, "directory", _walk(path), path, "holds no data file")
    return Location(path, "file", "")


def _local_file(name: str) -> DataFile:
    try:
        info = check_regular(name)
    except FileProblem as exc:
        if exc.rule == "not_a_file" and os.path.isdir(name):
            raise InputError("the pattern matches a directory", source=name, rule="not_a_file",
                             hint="match files, e.g. 'preds/*/*.parquet', or give the "
                                  "directory itself") from None
        raise InputError(exc.message, source=name, rule=exc.rule, hint=exc.hint) from None
    return DataFile(name, name, int(info.st_size))


def _walk(root: str) -> list[DataFile]:
    """Data files below ``root``, following directory links once (a loop is an error)."""
    found: list[DataFile] = []
    seen: set[str] = set()
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        real = os.path.realpath(folder)
        if real in seen:
            raise InputError("symbolic link loop in the dataset directory", source=folder,
                             rule="symlink_loop", hint="fix the link")
        seen.add(real)
        if depth > DATASET_MAX_DEPTH:
            raise InputError(f"directories nested deeper than {DATASET_MAX_DEPTH} levels",
                             source=root, rule="dataset_too_deep",
                             hint="see 'Ranges and limits' in docs/configuration.md")
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            problem = describe_os_error(exc)
            raise InputError(problem.message, source=folder, rule=problem.rule,
                             hint=problem.hint) from None
        for entry in entries:
            if _skipped(entry.name):
                continue
            if entry.is_dir():
                stack.append((entry.path, depth + 1))
            else:
                found.append(_local_file(entry.path))
                _check_count(len(found), root)
    return sorted(found, key=lambda file: file.name)


def _remote(url: str) -> Location:
    filesystem, path = _filesystem(url)
    try:
        if _WILDCARD.search(path):
            entries = [filesystem.info(p) for p in filesystem.glob(path)]
            kind, base, empty = "glob", _fixed_prefix(path), "matches no data file"
        elif filesystem.isdir(path):
            listing = filesystem.find(path, maxdepth=DATASET_MAX_DEPTH, detail=True)
            entries = list(listing.values())
            kind, base, empty = "url", path, "holds no data file"
        else:
            entries = [filesystem.info(path)]
            kind, base, empty = "url", None, "is not a data file"
    except FileNotFoundError:
        raise InputError("file not found", source=url, rule="file_not_found",
                         hint="check the URL") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot list the files ({_first_line(exc)})", source=url,
                         rule="unreadable_file", hint="check the URL and the credentials"
                         ) from None
    files = []
    for entry in sorted(entries, key=lambda e: str(e.get("name"))):
        name = str(entry.get("name"))
        if entry.get("type") == "directory" or _skipped(name):
            continue
        etag = next((str(entry[k]) for k in ETAG_KEYS if entry.get(k)), None)
        files.append(DataFile(_shown(url, path, base, name, filesystem), name,
                              int(entry.get("size") or 0), etag))
        _check_count(len(files), url)
    return _dataset(url, kind, files, base, empty, filesystem)


def _shown(url: str, path: str, base: str | None, name: str, filesystem: Any) -> str:
    """``name`` (a path on the filesystem) as a URL spelled like the user's ``url``."""
    if base is None:
        return url if name.rstrip("/") == path.rstrip("/") else filesystem.unstrip_protocol(name)
    tail = path[len(base):]
    if path.startswith(base) and url.endswith(tail) and name.startswith(base):
        return (url[:len(url) - len(tail)] if tail else url).rstrip("/") + "/" + \
            name[len(base):].lstrip("/")
    return filesystem.unstrip_protocol(name)


def _filesystem(url: str) -> tuple[Any, str]:
    """The fsspec filesystem and path of ``url``; a missing filesystem package is one line
    naming the calaudit extra that installs it."""
    protocol = url.split("://", 1)[0].lower()
    try:
        import fsspec.core
    except ImportError:
        raise InputError("reading URLs needs the fsspec package", source=url,
                         rule="missing_extra", hint="pip install fsspec") from None
    try:
        return fsspec.core.url_to_fs(url)
    except ImportError:
        package, extra = EXTRAS.get(protocol, (f"the {protocol}:// filesystem", None))
        hint = f"pip install 'calaudit[{extra}]'" if extra else "install its fsspec package"
        raise InputError(f"reading {protocol}:// URLs needs {package}", source=url,
                         rule="missing_extra", hint=hint) from None
    except ValueError as exc:
        if _known_protocol(protocol):  # the package is there: its settings are not
            raise InputError(f"cannot open the {protocol}:// filesystem ({_first_line(exc)})",
                             source=url, rule="unreadable_file",
                             hint="check the URL and the credentials (see 'Remote "
                                  "filesystems' in docs/inputs.md)") from None
        raise InputError(f"unknown URL protocol '{protocol}' ({_first_line(exc)})", source=url,
                         rule="unsupported_url",
                         hint="use a local path or an fsspec URL such as s3://, gs://, "
                              "abfs://, memory://") from None


def _known_protocol(protocol: str) -> bool:
    """Whether fsspec knows ``protocol`` (registered, or a known implementation)."""
    from fsspec.registry import known_implementations, registry

    return protocol in registry or protocol in known_implementations


def _dataset(spec: str, kind: str, files: list[DataFile], base: str | None, empty: str,
             filesystem: Any = None) -> Location:
    if not files:
        raise InputError(f"the {'pattern' if kind == 'glob' else kind} {empty}", source=spec,
                         rule="empty_dataset",
                         hint="a dataset is .parquet/.pq or .csv/.tsv (optionally .gz) files")
    formats = {file.name: _format_of(file.name, file.name) for file in files}
    kinds = sorted(set(formats.values()))
    if "npz" in kinds:
        name = next(n for n, f in formats.items() if f == "npz")
        raise InputError("NPZ archives are read from one local file only, not from a "
                         "dataset or a URL", source=name, rule="unsupported_format",
                         hint="copy it to a local .npz file, or write the data as Parquet")
    if len(kinds) > 1:
        raise InputError(f"the dataset mixes {' and '.join(kinds)} files", source=spec,
                         rule="mixed_formats", hint="select one format with a glob")
    return Location(spec, kind, kinds[0], tuple(files), base, filesystem)


def _format_of(name: str, source: str) -> str:
    lowered = name.lower()
    for suffix, fmt in sorted(SUFFIXES.items(), key=lambda item: -len(item[0])):
        if lowered.endswith(suffix):
            return fmt
    raise InputError(f"unsupported file type '{''.join(Path(name).suffixes) or name}'",
                     source=source, rule="unsupported_format",
                     hint="use .csv, .tsv (optionally .gz), .parquet or .npz; select data "
                          "files with a glob such as 'preds/*.parquet'")


def _skipped(name: str) -> bool:
    base = name.rstrip("/").rsplit("/", 1)[-1]
    return base.startswith((".", "_"))


def _fixed_prefix(pattern: str) -> str | None:
    """The directory part of a glob before its first wildcard (hive partitions start
    below it)."""
    parts = pattern.split("/")
    fixed = []
    for part in parts[:-1]:
        if _WILDCARD.search(part):
            break
        fixed.append(part)
    return "/".join(fixed) if fixed else None


def _check_count(count: int, spec: str) -> None:
    if count > DATASET_MAX_FILES:
        raise InputError(f"more than {DATASET_MAX_FILES:,} files", source=spec,
                         rule="dataset_too_large",
                         hint="see 'Ranges and limits' in docs/configuration.md")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def fingerprint(file: DataFile, filesystem: Any = None) -> tuple[str, str]:
    """``(kind, value)``: the object store's ETag when it gives one, else the SHA-256 of
    the bytes (read in 1 MiB chunks)."""
    if file.etag:
        return "etag", file.etag
    opener = filesystem.open if filesystem is not None else open
    try:
        with opener(file.path, "rb") as handle:
            return "sha256", sha256_stream(handle)
    except OSError as exc:
        raise InputError(f"cannot read the file ({_first_line(exc)})", source=file.name,
                         rule="unreadable_file", hint="check the file") from None
