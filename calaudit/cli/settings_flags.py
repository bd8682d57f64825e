"""The settings of a running command: config file, ``CALAUDIT_*`` variables and the options
given on the command line (each names its setting: :class:`calaudit.cli.options.Flag`),
resolved with :func:`calaudit.settings.resolve.resolve`; an option's default never
overrides the config file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from calaudit.cli.options import COMPOSITE, FLAGS
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


def given_flags(ctx: Any) -> dict[str, tuple[Any, str]]:
    """``{dotted key: (value, "--option")}`` for the setting options given on the command line."""
    flags = {}
    for param in ctx.command.params:
        flag = FLAGS.get(param.name)
        if flag is None or flag.setting is None or param.name in COMPOSITE \
                or not _given(ctx, param.name):
            continue
        value = ctx.params[param.name]
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        flags[flag.setting] = (value, max(param.opts, key=len))
    flags.update(_squared_flags(ctx))
    return flags


def _squared_flags(ctx: Any) -> dict[str, tuple[Any, str]]:
    """``--squared`` (targets, ``all`` or ``off``) and ``--squared-estimators`` (alone it
    means ``--squared all``) as ``squared.*`` settings (``SquaredConfig.from_options``)."""
    from calaudit.audit.config import SquaredConfig

    given = [name for name in ("squared", "squared_estimators")
             if name in ctx.params and _given(ctx, name)]
    if not given:
        return {}
    chosen = SquaredConfig.from_options(ctx.params.get("squared") if "squared" in given
                                        else None,
                                        ctx.params.get("squared_estimators")
                                        if "squared_estimators" in given else None)
    flag = "--" + given[0].replace("_", "-")
    out = {"squared.enabled": (chosen.enabled, flag)}
    if "squared" in given and chosen.enabled:
        out["squared.targets"] = (chosen.targets, "--squared")
    if "squared_estimators" in given:
        out["squared.estimators"] = (chosen.estimators, "--squared-estimators")
    return out


def _given(ctx: Any, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT", "PROMPT")
