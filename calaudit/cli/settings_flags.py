"""Which command-line options are settings, and which the user actually gave.

An option is a setting when its parameter name is (in this order) in ``EXPLICIT``, a
top-level field of ``AuditConfig``, a field of ``[data]`` or ``[outputs]``, or the name of
exactly one setting anywhere (so ``--bandwidth`` finds ``skce.bandwidth`` once that
section exists). Options in ``NOT_SETTINGS`` only steer the command. Only options given
on the command line count (``ctx.get_parameter_source``): Typer defaults never override
the config file.
"""

from __future__ import annotations

import os
from typing import Any

from calaudit.settings.schema import Leaf, Section, iter_leaves

EXPLICIT = {
    "n_bins": "binning.n_bins",
    "binning": "binning.strategy",
    "baseline": "baseline.path",
    "regression_tolerance": "baseline.tolerance",
    "local_tests": "local.tests",
    "local_resamples": "local.n_resamples",
    "kite_width": "local.kite_prob_kernel_width",
    "kite_gamma": "local.kite_cov_gamma",
    "squared": "squared.enabled",  # composite: see _squared_flags
    "squared_estimators": "squared.estimators",
    "dask": "dask.scheduler",
    "workers": "dask.workers",
    "memory_limit": "dask.memory_limit",
    "threads": "dask.threads",
}
NOT_SETTINGS = frozenset({"data", "config", "quiet", "verbose", "old", "new", "show_json",
                          "show_config", "pyproject", "force", "path", "directory",
                          "results", "explain"})
ROOT_SECTIONS = ("", "data", "outputs")
#: Options that set several settings at once (their meaning lives in the config class).
COMPOSITE = frozenset({"squared", "squared_estimators"})


def setting_key(name: str, schema: Section) -> str | None:
    """The dotted setting an option parameter ``name`` sets, or ``None``."""
    if name in EXPLICIT:
        return EXPLICIT[name]
    for section in ROOT_SECTIONS:
        key = f"{section}.{name}" if section else name
        node = schema.children.get(section) if section else schema
        if isinstance(node, Section) and isinstance(node.children.get(name), Leaf):
            return key
    matches = [leaf.key for leaf in iter_leaves(schema)
               if leaf.path[-1] == name and "<" not in leaf.key]
    return matches[0] if len(matches) == 1 else None


def given_flags(ctx: Any, schema: Section) -> dict[str, tuple[Any, str]]:
    """``{dotted key: (value, "--option")}`` for the setting options given on the command
    line. Raises ``LookupError`` for an option that maps to no setting (a bug)."""
    flags = {}
    for param in ctx.command.params:
        name = param.name
        if name in NOT_SETTINGS or not _given(ctx, name):
            continue
        if name in COMPOSITE:
            continue
        key = setting_key(name, schema)
        if key is None:
            raise LookupError(f"option {param.opts[0]} maps to no setting; add it to "
                              "calaudit.cli.settings_flags.EXPLICIT or NOT_SETTINGS")
        value = ctx.params[name]
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        flags[key] = (value, max(param.opts, key=len))
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
