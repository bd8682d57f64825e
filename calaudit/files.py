"""Opening the files calaudit reads, safely: only regular files (a FIFO, device or
directory is refused before it is opened, so nothing blocks or reads forever), errors
described in words (not found, permission denied, symbolic link loop), and a size limit
for the small files (config, saved results). Standard library only."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any


class FileProblem(Exception):
    """Why a file cannot be read: ``message`` (words) and ``rule`` (an identifier)."""

    def __init__(self, message: str, rule: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message, self.rule, self.hint = message, rule, hint


def describe_os_error(exc: OSError) -> FileProblem:
    """An ``OSError`` from opening or reading a file, in words."""
    code = exc.errno
    if code == errno.ENOENT:
        return FileProblem("file not found", "file_not_found", "check the path")
    if code in (errno.EACCES, errno.EPERM):
        return FileProblem("permission denied (the file or a directory above it cannot be "
                           "read)", "permission_denied", "check the permissions")
    if code == errno.ELOOP:
        return FileProblem("symbolic link loop", "symlink_loop", "fix the link")
    if code == errno.ENOTDIR:
        return FileProblem("a part of the path is not a directory", "file_not_found",
                           "check the path")
    if code == errno.EISDIR:
        return FileProblem("is a directory, not a file", "not_a_file")
    if code == errno.ENAMETOOLONG:
        return FileProblem("file name too long", "file_not_found")
    return FileProblem(f"cannot read the file: {exc.strerror or exc}", "unreadable_file")


def check_regular(path: str | Path) -> os.stat_result:
    """The ``stat`` of ``path`` when it is a regular file (symlinks followed), else
    :class:`FileProblem`."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise describe_os_error(exc) from None
    except ValueError:  # embedded NUL byte
        raise FileProblem("invalid file name", "file_not_found") from None
    mode = info.st_mode
    if stat.S_ISREG(mode):
        return info
    if stat.S_ISDIR(mode):
        raise FileProblem("is a directory, not a file", "not_a_file")
    kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else
            "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    raise FileProblem(f"is {kind}, not a regular file", "not_a_file",
                      "copy the stream to a regular file first")


def read_limited(path: str | Path, limit: int, what: str) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them."""
    info = check_regular(path)
    if info.st_size > limit:
        raise _too_large(info.st_size, limit, what)
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise describe_os_error(exc) from None
    if len(data) > limit:
        raise _too_large(len(data), limit, what)
    return data


def _too_large(size: int, limit: int, what: str) -> FileProblem:
    return FileProblem(f"{what} is larger than the limit of {limit:,} bytes", "file_too_large",
                       "see 'Ranges and limits' in docs/configuration.md")


def nesting_depth(value: Any, limit: int) -> int:
    """Nesting depth of decoded dicts and lists (JSON objects and arrays, TOML tables and
    arrays), without recursion; stops early and returns ``limit + 1`` past ``limit``."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            if level > limit:
                return level
            stack.extend((child, level + 1) for child in
                         (item.values() if isinstance(item, dict) else item))
    return deepest
