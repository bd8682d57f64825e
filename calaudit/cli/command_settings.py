"""Settings of a running command: the config file, ``CALAUDIT_*`` variables and the
options the user gave, resolved with :func:`calaudit.settings.resolve.resolve`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calaudit.cli.settings_flags import given_flags
from calaudit.cli.ui import Ui
from calaudit.settings import cli_roots
from calaudit.settings.resolve import Resolved, resolve


def command_settings(ctx: Any, overrides: Mapping[str, tuple[Any, str]] | None = None
                     ) -> Resolved:
    """Resolve the settings for the command behind ``ctx`` (a click/Typer context)."""
    return resolve(cli_roots(), config_path=ctx.params.get("config"), flags=given_flags(ctx),
                   overrides=overrides)


def make_ui(ctx: Any, settings: Resolved) -> Ui:
    """Terminal behaviour from ``--quiet``/``--verbose`` and the resolved outputs."""
    outputs = settings["outputs"]
    return Ui(quiet=bool(ctx.params.get("quiet")), verbose=bool(ctx.params.get("verbose")),
              color=outputs.color, json_stdout=outputs.json == "-",
              explain=bool(ctx.params.get("explain")))
