"""``calaudit config show`` and ``calaudit config init``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from calaudit.cli.settings_flags import command_settings
from calaudit.exceptions import ConfigError
from calaudit.output.files import write_atomic
from calaudit.settings import cli_roots
from calaudit.settings.show import init_template, show_json, show_text


def show(ctx: Any, *, as_json: bool) -> None:
    """Print the resolved settings and the source of each value on stdout."""
    settings = command_settings(ctx)
    sys.stdout.write(show_json(settings) if as_json else show_text(settings))


def init(path: Path, *, pyproject: bool, force: bool) -> None:
    """Write the commented template to ``path`` (``-``: stdout); never overwrite silently."""
    text = init_template(cli_roots(), pyproject=pyproject)
    if str(path) == "-":
        sys.stdout.write(text)
        return
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory [output]",
                          hint=f"give a file name, e.g. {path / 'calaudit.toml'}")
    if path.exists() and not force:
        raise ConfigError(f"{path} exists; use --force to overwrite it")
    write_atomic(path, text)
    sys.stderr.write(f"calaudit: wrote {path}\n")
