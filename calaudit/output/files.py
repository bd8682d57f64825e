"""Atomic file output: write to a temporary file in the target directory, then rename,
so a reader never sees half a report and a failed run leaves nothing behind."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


def write_atomic(path: str | Path, content: str | bytes) -> None:
    """Write ``content`` to ``path`` atomically; ``"-"`` writes text to stdout."""
    if str(path) == "-":
        text = content.decode("utf-8") if isinstance(content, bytes) else content
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8") if isinstance(content, str) else content
    handle, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temp, _file_mode(target))
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _file_mode(target: Path) -> int:
    """The mode a plain ``open(target, "w")`` would give: the existing file's mode, else
    ``0o666`` less the umask (``mkstemp`` alone would leave ``0o600``)."""
    try:
        return target.stat().st_mode & 0o777
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask
