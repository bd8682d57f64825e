"""All-or-nothing file output: a command's outputs are written together by :func:`write_all`.

1. **check** every target (:func:`check_targets`, also run before any work): a valid name,
   not a directory, device, FIFO or socket, creatable, no two outputs on one path, only
   ``--json`` on stdout;
2. **stage**: create missing parents, write each file to a temporary file beside it;
3. **commit**: rename each onto its target (an existing one kept as a hard-link backup
   until all renames succeed).

On failure everything this run created is removed and overwritten files are restored."""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from calaudit.exceptions import ConfigError

STDOUT = "-"


def check_targets(targets: Iterable[tuple[str, str | os.PathLike[str] | None]]) -> None:
    """Check ``(option, path)`` pairs before any work (step 1 of the module docstring);
    ``None`` paths (option not given) are skipped."""
    seen: dict[str, str] = {}
    for option, path in targets:
        if path is None:
            continue
        text = os.fspath(path)
        if text == "":
            raise _error(f"{option} ''", "the path is empty", "give a file name")
        if text == STDOUT:
            if option != "--json":
                raise _error(f"{option} -", "only --json can write to stdout",
                             f"give {option} a file name")
            key = STDOUT
        else:
            _check_path(Path(text), option, probe=True)
            key = os.path.normcase(os.path.abspath(text))
        if key in seen:
            raise _error(f"{option} {text}", f"the same path as {seen[key]}",
                         "give each output its own file")
        seen[key] = option


def _check_path(target: Path, option: str | None = None, probe: bool = False) -> None:
    """``target`` can be a file: a valid name, not a directory, no part of its parent a regular
    file; ``probe``: a file can be created (and removed) in the nearest existing folder above."""
    where = f"{option} {target}" if option else str(target)
    try:
        _check_names(target, where)
        _check_kind(target, where)
        folder = _existing_folder(target, where)
        if probe:
            os.unlink(tempfile.mkstemp(dir=folder, prefix=".calaudit-probe-")[1])
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise _error(where, "cannot write output: the path or a name in it is longer "
                         "than the file system allows", "choose a shorter name") from None
        raise _error(where, f"cannot write output: {exc.strerror or exc}",
                     "check the folder exists and is writable") from None


def _check_kind(target: Path, where: str) -> None:
    """An existing ``target`` (links followed) is a regular file, which the committing rename
    may replace (not a directory, device, FIFO or socket)."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        raise _error(where, "cannot write output: it is a directory",
                     "give a file name inside it")
    if not stat.S_ISREG(mode):
        raise _error(where, "cannot write output: it is a device, FIFO or socket, not a "
                     "regular file", "give a file name (--json - writes to stdout)")


def _existing_folder(target: Path, where: str) -> Path:
    """The nearest existing folder above ``target`` (a regular file there is an error)."""
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise _error(where, f"cannot write output: '{parent}' is a file, not a "
                             "directory", "choose another folder")
            return parent
    return Path(".")


def _check_names(target: Path, where: str) -> None:
    """Every part of ``target`` (and of a Markdown report's ``<stem>_files`` folder)
    within the file system's longest name, the whole path within its longest path."""
    folder = _existing_folder(target, where)
    longest_name = _pathconf(folder, "PC_NAME_MAX", 255)
    longest_path = _pathconf(folder, "PC_PATH_MAX", 4096)
    names = [*target.parts, f"{target.stem}_files"] if target.suffix == ".md" \
        else list(target.parts)
    for name in names:
        if len(os.fsencode(name)) > longest_name:
            raise _error(where, f"cannot write output: a name in the path is longer than "
                         f"the {longest_name} bytes the file system allows",
                         "choose a shorter name")
    if len(os.fsencode(os.path.abspath(target))) >= longest_path:
        raise _error(where, f"cannot write output: the path is longer than the "
                     f"{longest_path} bytes the file system allows", "choose a shorter path")


def _pathconf(folder: Path, name: str, default: int) -> int:
    try:
        return int(os.pathconf(folder, name))
    except (OSError, ValueError, AttributeError):
        return default


def write_atomic(path: str | os.PathLike[str], content: str | bytes) -> None:
    """Write one file atomically; ``"-"`` writes text to stdout."""
    write_all([(path, content)])


def write_all(documents: Sequence[tuple[str | os.PathLike[str], str | bytes]]) -> list[str]:
    """Write every ``(path, content)`` or none of them (see the module docstring).
    Returns the paths written to files. Raises :class:`ConfigError` (exit code 2)."""
    files = [(Path(p), c) for p, c in documents if os.fspath(p) != STDOUT]
    created_dirs: list[Path] = []
    staged: list[tuple[Path, Path]] = []
    committed: list[tuple[Path, Path | None]] = []
    current = None
    try:
        for current, content in files:
            _check_path(current)
            created_dirs += _make_parents(current.parent)
            staged.append((_stage(current, content), current))
        for temp, target in staged:
            current = target
            backup = _backup(target)
            os.replace(temp, target)
            committed.append((target, backup))
    except BaseException as exc:
        _undo(staged, committed, created_dirs)
        if isinstance(exc, OSError):
            raise _error(str(current), f"cannot write output: {exc.strerror or exc}",
                         "check the folder exists and is writable") from None
        raise
    for _, backup in committed:
        if backup is not None:
            backup.unlink(missing_ok=True)
    for path, content in documents:
        if os.fspath(path) == STDOUT:
            sys.stdout.write(content.decode("utf-8") if isinstance(content, bytes)
                             else content)
            sys.stdout.flush()
    return [str(target) for target, _ in files]


def _make_parents(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing ancestors; the ones created, outermost first."""
    missing = []
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            break
        missing.append(candidate)
    created = []
    for candidate in reversed(missing):
        try:
            candidate.mkdir()
        except FileExistsError:
            if not candidate.is_dir():
                raise
            continue
        created.append(candidate)
    return created


def _stage(target: Path, content: str | bytes) -> Path:
    data = content.encode("utf-8") if isinstance(content, str) else content
    handle, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                    suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temp, _file_mode(target))
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return Path(temp)


def _backup(target: Path) -> Path | None:
    """A hard link to an existing ``target`` (``None`` if there is none or links are not
    supported: then a failure later cannot restore it, only leave the new version)."""
    if not target.is_file():
        return None
    backup = target.with_name(f".{target.name}.{os.getpid()}.bak")
    try:
        backup.unlink(missing_ok=True)
        os.link(target, backup)
    except OSError:
        return None
    return backup


def _undo(staged: list[tuple[Path, Path]], committed: list[tuple[Path, Path | None]],
          created_dirs: list[Path]) -> None:
    done = {target for target, _ in committed}
    for temp, target in staged:
        if target not in done:
            temp.unlink(missing_ok=True)
    for target, backup in reversed(committed):
        try:
            if backup is not None:
                os.replace(backup, target)
            else:
                target.unlink(missing_ok=True)
        except OSError:
            pass
    for folder in reversed(created_dirs):
        try:
            folder.rmdir()
        except OSError:
            pass


def _file_mode(target: Path) -> int:
    """The mode a plain ``open(target, "w")`` would give: the existing file's mode, else
    ``0o666`` less the umask (``mkstemp`` alone would leave ``0o600``)."""
    try:
        return target.stat().st_mode & 0o777
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _error(where: str, message: str, hint: str) -> ConfigError:
    return ConfigError(f"{where}: {message} [output]", hint=hint)
