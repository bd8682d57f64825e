"""Resolving settings: defaults < config file < ``CALAUDIT_*`` variables < flags, with the
origin of every value (``calaudit config show``); a validation failure names the source
that set the value. Roots: ``{"": AuditConfig, "data": DataConfig, ...}`` (``""``: the
top-level keys)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calaudit.exceptions import ConfigError
from calaudit.settings.schema import Leaf, Path_, Section, Table, build_schema
from calaudit.settings.sources import (
    DEFAULT,
    ConfigFile,
    Layer,
    Origin,
    discover_config_file,
    env_layer,
    file_layer,
    flag_layer,
    load_config_file,
)


def combined_schema(roots: Mapping[str, type]) -> Section:
    """One schema for all roots: the ``""`` root's fields at the top, others as sections."""
    top = build_schema(roots[""])
    children = dict(top.children)
    for name, cls in roots.items():
        if name:
            if name in children:
                raise ValueError(f"settings root '{name}' clashes with a field of "
                                 f"{roots[''].__name__}")
            children[name] = build_schema(cls, (name,))
    return Section((), roots[""], children)


@dataclass(frozen=True)
class Resolved:
    """The resolved settings: one instance per root, and the origin of every value."""

    schema: Section
    roots: Mapping[str, type]
    sections: Mapping[str, Any]
    origins: Mapping[Path_, Origin]
    file: ConfigFile | None
    warnings: tuple[str, ...] = ()

    def __getitem__(self, root: str) -> Any:
        return self.sections[root]

    def items(self) -> Iterator[tuple[str, Any, Origin]]:
        """``(dotted key, value, origin)`` for every resolved value, in schema order."""
        for root, instance in self.sections.items():
            section = self.schema if not root else self.schema.children[root]
            for path, value in _walk(instance, section, () if not root else (root,)):
                if not root and path[0] in self.roots:
                    continue
                yield ".".join(path), value, self.origins.get(path, DEFAULT)

    def sources(self) -> dict[str, str]:
        """``{dotted key: origin}`` for the values that are not defaults."""
        return {key: origin.label for key, _, origin in self.items() if origin.kind != "default"}


def _walk(instance: Any, section: Section, prefix: Path_) -> Iterator[tuple[Path_, Any]]:
    for name, child in section.children.items():
        if not hasattr(instance, name):
            continue
        value = getattr(instance, name)
        here = (*prefix, name)
        if isinstance(child, Section):
            yield from _walk(value, child, here)
        elif isinstance(child, Table):
            for entry in value:
                key = getattr(entry, child.key_field)
                yield from _walk(entry, child.entry, (*here, key))
        else:
            yield here, value


def resolve(roots: Mapping[str, type], *, config_path: str | Path | None = None,
            flags: Mapping[str, tuple[Any, str]] | None = None,
            overrides: Mapping[str, tuple[Any, str]] | None = None,
            environ: Mapping[str, str] | None = None, cwd: Path | None = None,
            discover: bool = True) -> Resolved:
    """Resolve settings for ``roots``.

    ``config_path`` (``--config``; else ``CALAUDIT_CONFIG``) replaces discovery from
    ``cwd``. ``flags`` are ``{dotted key: (value, "--option")}``; ``overrides`` are set by
    the command itself (``calaudit metrics`` turns tests off) and win over everything.
    """
    environ = os.environ if environ is None else environ
    schema = combined_schema(roots)
    config_path = config_path or environ.get("CALAUDIT_CONFIG") or None
    if config_path is not None:
        config = load_config_file(Path(config_path))
    else:
        config = discover_config_file(cwd or Path.cwd()) if discover else None
    env, warnings = env_layer(environ, schema)
    layers = [file_layer(config, schema) if config else Layer(), env,
              flag_layer(flags or {}, schema),
              flag_layer(overrides or {}, schema, kind="command")]
    values: dict[Path_, Any] = {}
    origins: dict[Path_, Origin] = {}
    for layer in layers:
        values.update(layer.values)
        origins.update(layer.origins)
    sections = {}
    for root in roots:
        node = schema if not root else schema.children[root]
        assert isinstance(node, Section)
        sections[root] = build_section(node, values, origins, skip=set(roots) - {""})
    return Resolved(schema, dict(roots), sections, origins, config, tuple(warnings))


def build_section(section: Section, values: Mapping[Path_, Any],
                  origins: Mapping[Path_, Origin], prefix: Path_ | None = None,
                  fixed: Mapping[str, Any] | None = None, skip: set[str] = frozenset()
                  ) -> Any:
    """Construct ``section.cls`` from the values under ``prefix`` (defaults elsewhere)."""
    prefix = section.path if prefix is None else prefix
    kwargs: dict[str, Any] = dict(fixed or {})
    paths: dict[str, Path_] = {}
    for name, child in section.children.items():
        if not prefix and name in skip:
            continue
        here = (*prefix, name)
        if isinstance(child, Leaf):
            if here in values:
                kwargs[name], paths[name] = values[here], here
        elif isinstance(child, Section):
            kwargs[name] = build_section(child, values, origins, here)
        else:
            entries = _table_entries(child, values, origins, here)
            if entries is not None:
                kwargs[name] = entries
    return _construct(section, kwargs, paths, origins, fixed or {})


def _table_entries(table: Table, values: Mapping[Path_, Any], origins: Mapping[Path_, Origin],
                   here: Path_) -> tuple[Any, ...] | None:
    depth = len(here)
    names = list(dict.fromkeys(p[depth] for p in values if len(p) > depth and p[:depth] == here))
    if not names:
        return None
    return tuple(build_section(table.entry, values, origins, (*here, name),
                               fixed={table.key_field: name}) for name in names)


def _construct(section: Section, kwargs: dict[str, Any], paths: Mapping[str, Path_],
               origins: Mapping[Path_, Origin], fixed: Mapping[str, Any]) -> Any:
    try:
        return section.cls(**kwargs)
    except ConfigError as exc:
        for name, path in paths.items():
            try:
                section.cls(**fixed, **{name: kwargs[name]})
            except ConfigError:
                dotted = ".".join(path)
                named = exc.message.startswith(dotted)
                where = f"{origins[path]}: " + ("" if named else f"{dotted}: ")
                raise ConfigError(where + exc.message, hint=exc.hint) from None
        labels = sorted({str(origins[p]) for p in paths.values()}) or ["default"]
        raise ConfigError(f"{', '.join(labels)}: {exc.message}", hint=exc.hint) from None
