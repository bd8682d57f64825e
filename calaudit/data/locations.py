"""Where the data is: one local file, or a dataset of files (a directory, a glob, an
fsspec URL of a supported protocol, :mod:`calaudit.data.remote`); docs/inputs.md.

Files are sorted by path, so global row numbers never depend on listing order; names
starting with ``.`` or ``_`` (``_SUCCESS``, ``.crc``) are skipped, as Spark and pyarrow do.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calaudit import limits
from calaudit.data import remote
from calaudit.data.readers import sha256_stream, suffix_format
from calaudit.deadlines import within
from calaudit.exceptions import InputError, clip
from calaudit.files import FileProblem, check_regular, describe_os_error
from calaudit.limits import DATASET_MAX_DEPTH, DATASET_MAX_FILES

#: Keys of an fsspec ``info()`` entry that hold the object store's ETag.
ETAG_KEYS = ("ETag", "etag", "Etag")
_WILDCARD = re.compile(r"[*?\[]")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: An fsspec chain such as ``simplecache::s3://...`` (refused as a URL, not a file name).
_CHAINED = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::.*://")


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
    ``url``; ``base`` is where hive partitions start."""

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
    """Resolve what the user typed (``file://`` URLs are local paths)."""
    text = os.fspath(spec)
    if _URL.match(text) or _CHAINED.match(text):
        if text.lower().startswith("file://"):
            return _local(text[len("file://"):], text)
        return _remote(text)
    return _local(text, text)


def _local(path: str, spec: str) -> Location:
    if _WILDCARD.search(path) and not os.path.lexists(path):
        files = [_local_file(name) for name in _walk(*_glob_root(path))
                 if not _skipped(name)]
        return _dataset(spec, "glob", files, _fixed_prefix(path), "matches no data file")
    if os.path.isdir(path):
        return _dataset(spec, "directory", [_local_file(name) for name in _walk(path)],
                        path, "holds no data file")
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


def _glob_root(pattern: str) -> tuple[str, tuple[str, ...], str]:
    """``(directory to walk, the pattern's segments below it, the pattern)``."""
    parts = pattern.split("/")
    fixed = 0
    while fixed < len(parts) - 1 and not _WILDCARD.search(parts[fixed]):
        fixed += 1
    root = "/".join(parts[:fixed]) or ("/" if pattern.startswith("/") else "")
    return root, tuple(p for p in parts[fixed:] if p), pattern


def _walk(root: str, pattern: tuple[str, ...] | None = None, spec: str | None = None
          ) -> list[str]:
    """Paths below ``root`` (``""``: the current directory) of every file, or of every
    entry a glob's ``pattern`` segments match (``**``: any number of directories). The walk
    is bounded in depth and entries (:mod:`calaudit.limits`) and follows directory links
    once."""
    if pattern is not None and not os.path.isdir(root or "."):
        return []  # the glob's fixed part is not a directory: nothing matches
    found: list[str] = []
    seen: dict[str, str] = {}
    stack: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [(root, (), ())]
    entries = 0
    while stack:
        folder, below, above = stack.pop()
        real = _check_walk(folder, below, above, seen, spec or root)
        for entry in _entries(folder or "."):
            entries += 1
            if entries > limits.DATASET_MAX_ENTRIES:
                raise InputError(f"more than {limits.DATASET_MAX_ENTRIES:,} files and folders "
                                 "to look at", source=spec or root, rule="dataset_too_large",
                                 hint="narrow the glob or the directory; see 'Ranges and "
                                      "limits' in docs/configuration.md")
            name = entry.name if not folder else f"{folder.rstrip('/')}/{entry.name}"
            parts = (*below, entry.name)
            is_dir = entry.is_dir()
            if pattern is None:  # a directory dataset: every file, skipping ``.``/``_`` names
                kept = not _skipped(entry.name)
                take, walk = kept and not is_dir, kept and is_dir
            else:
                take, walk = _reachable(parts, pattern)[-1], is_dir and _may_match(parts, pattern)
            if take:
                found.append(name)
                _check_count(len(found), spec or root)
            if walk:
                stack.append((name, parts, (*above, real)))
    return sorted(found)


def _check_walk(folder: str, below: tuple[str, ...], above: tuple[str, ...],
                seen: dict[str, str], spec: str) -> str:
    """The real path of ``folder``; refuses a link loop, a directory reached twice and a
    walk too deep."""
    real = os.path.realpath(folder or ".")
    if real in above:
        raise InputError("symbolic link loop in the dataset directory", source=folder,
                         rule="symlink_loop", hint="fix the link")
    if real in seen:
        raise InputError(f"the same directory as {clip(seen[real], 120)} (a symbolic link): "
                         "its files would be read twice", source=folder, rule="symlink_loop",
                         hint="remove the link, or select the files with a narrower glob")
    seen[real] = folder
    if len(below) > DATASET_MAX_DEPTH:
        raise InputError(f"directories nested deeper than {DATASET_MAX_DEPTH} levels",
                         source=spec, rule="dataset_too_deep",
                         hint="see 'Ranges and limits' in docs/configuration.md")
    return real


def _entries(folder: str) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as listing:
            return sorted(listing, key=lambda e: e.name)
    except OSError as exc:
        problem = describe_os_error(exc)
        raise InputError(problem.message, source=folder, rule=problem.rule,
                         hint=problem.hint) from None


def _segment(name: str, pattern: str) -> bool:
    """Whether one path segment matches one glob segment (wildcards skip hidden names)."""
    return (pattern.startswith(".") or not name.startswith(".")) and \
        fnmatch.fnmatchcase(name, pattern)


def _may_match(parts: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    """Whether some path below the directory ``parts`` could match ``pattern``."""
    reach = _reachable(parts, pattern)
    return any(reach[j] and (j < len(pattern) or pattern[j - 1] == "**")
               for j in range(len(pattern) + 1))


def _reachable(parts: tuple[str, ...], pattern: tuple[str, ...]) -> list[bool]:
    """``reach[j]``: the first ``j`` glob segments match all of ``parts``."""
    reach = [True] + [False] * len(pattern)
    for j in range(len(pattern)):  # before any part: only leading ``**`` match nothing
        reach[j + 1] = reach[j] and pattern[j] == "**"
    for name in parts:
        step = [False] * (len(pattern) + 1)
        for j, head in enumerate(pattern):
            if head == "**":
                # ``**`` takes this part (staying on it) or has taken nothing (from j)
                step[j + 1] = (not name.startswith(".")) and (reach[j + 1] or reach[j]) \
                    or step[j]
            else:
                step[j + 1] = reach[j] and _segment(name, head)
        reach = step
    return reach


def _remote(url: str) -> Location:
    """The files of a URL: the protocol checked before any I/O, the first contact within
    ``REMOTE_TIMEOUT`` seconds and the listing within ``REMOTE_LIST_TIMEOUT``."""
    remote.check_supported(url)
    with remote.remote_errors(url, "list the files"):
        filesystem, path = within(limits.REMOTE_TIMEOUT, lambda: _filesystem(url))
        within(limits.REMOTE_TIMEOUT, lambda: _probe(filesystem, path))
        kind, base, empty, entries = within(limits.REMOTE_LIST_TIMEOUT,
                                            lambda: _listing(filesystem, path, url))
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


def _probe(filesystem: Any, path: str) -> None:
    """One request to the store (the path's first part), so a silent store fails here."""
    with contextlib.suppress(FileNotFoundError):
        filesystem.info(path.lstrip("/").split("/", 1)[0] or path)


def _listing(filesystem: Any, path: str, url: str
             ) -> tuple[str, str | None, str, list[dict]]:
    """``(kind, base, what an empty result means, entries)`` of a remote path."""
    try:
        if _WILDCARD.search(path):
            found = filesystem.glob(path, maxdepth=DATASET_MAX_DEPTH, detail=True)
            return "glob", _fixed_prefix(path), "matches no data file", list(found.values())
        if filesystem.isdir(path):
            listing = filesystem.find(path, maxdepth=DATASET_MAX_DEPTH, detail=True)
            return "url", path, "holds no data file", list(listing.values())
        return "url", None, "is not a data file", [filesystem.info(path)]
    except FileNotFoundError:
        raise InputError("file not found", source=url, rule="file_not_found",
                         hint="check the URL") from None
    except ValueError as exc:  # the filesystem package's own complaint about the path
        raise InputError(f"cannot list the files ({_first_line(exc)})", source=url,
                         rule="unreadable_file",
                         hint="check the URL and the credentials") from None


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
    """The fsspec filesystem and path of ``url``, opened with the options that bound its
    waits."""
    protocol = remote.protocol_of(url)
    try:
        import fsspec.core
    except ImportError:
        raise InputError("reading URLs needs the fsspec package", source=url,
                         rule="missing_extra", hint="pip install fsspec") from None
    try:
        return fsspec.core.url_to_fs(url, **remote.bounded_options(protocol))
    except ImportError:
        package, extra = remote.PROTOCOLS.get(protocol) or ("fsspec", "")
        raise InputError(f"reading {protocol}:// URLs needs {package}", source=url,
                         rule="missing_extra", hint=f"pip install 'calaudit[{extra}]'"
                         ) from None
    except (ValueError, TypeError) as exc:  # the package is there: its settings are not
        raise InputError(f"cannot open the {protocol}:// filesystem ({_first_line(exc)})",
                         source=url, rule="unreadable_file",
                         hint="check the URL and the credentials (see 'Remote "
                              "filesystems' in docs/inputs.md)") from None


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
    fmt = suffix_format(name)
    if fmt is not None:
        return fmt
    raise InputError(f"unsupported file type '{''.join(Path(name).suffixes) or name}'",
                     source=source, rule="unsupported_format",
                     hint="use .csv, .tsv (optionally .gz), .parquet or .npz; select data "
                          "files with a glob such as 'preds/*.parquet'")


def _skipped(name: str) -> bool:
    base = name.rstrip("/").rsplit("/", 1)[-1]
    return base.startswith((".", "_"))


def _fixed_prefix(pattern: str) -> str | None:
    """The directory part of a glob before its first wildcard."""
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
    """``(kind, value)``: the object store's ETag when it gives one, else the SHA-256."""
    if file.etag:
        return "etag", file.etag
    if filesystem is not None:
        with remote.remote_errors(file.name), filesystem.open(file.path, "rb") as handle:
            return "sha256", sha256_stream(handle)
    try:
        with open(file.path, "rb") as handle:
            return "sha256", sha256_stream(handle)
    except OSError as exc:
        raise InputError(f"cannot read the file ({_first_line(exc)})", source=file.name,
                         rule="unreadable_file", hint="check the file") from None
