"""Where settings come from: config files, ``CALAUDIT_*`` environment variables, flags.

Each source becomes a :class:`Layer` (validated values and the :class:`Origin` of each);
unknown keys are errors that suggest the closest key. Without ``--config``, the first
directory from the working directory upwards holding ``calaudit.toml``, ``.calaudit.toml``
or a ``pyproject.toml`` with ``[tool.calaudit]`` (in that order) wins."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calaudit.exceptions import ConfigError
from calaudit.files import FileProblem, nesting_depth, read_limited
from calaudit.limits import CONFIG_MAX_BYTES, CONFIG_MAX_DEPTH
from calaudit.settings.schema import (
    Leaf,
    Mismatch,
    Path_,
    Section,
    Table,
    all_keys,
    coerce,
    schema_node,
    type_name,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CONFIG_NAMES = ("calaudit.toml", ".calaudit.toml")
ENV_PREFIX = "CALAUDIT_"
ENV_SEPARATOR = "__"
#: Not settings: tracebacks, the config file path, and the switches of calaudit's own test
#: suite (a real browser required; gold files rewritten; the fuzz campaign's size and report;
#: the Azure emulator's path and whether it is required).
RESERVED_ENV = frozenset({"CALAUDIT_DEBUG", "CALAUDIT_CONFIG", "CALAUDIT_REQUIRE_BROWSER",
                          "CALAUDIT_UPDATE_GOLD", "CALAUDIT_FUZZ_EXAMPLES",
                          "CALAUDIT_FUZZ_REPORT", "CALAUDIT_AZURITE",
                          "CALAUDIT_REQUIRE_AZURITE"})


@dataclass(frozen=True)
class Origin:
    """Where a value came from: ``kind`` is default, file, env, flag or command."""

    kind: str
    label: str

    def __str__(self) -> str:
        return self.label


DEFAULT = Origin("default", "default")


@dataclass
class Layer:
    """Values of one source, by path, and where each came from."""

    values: dict[Path_, Any] = field(default_factory=dict)
    origins: dict[Path_, Origin] = field(default_factory=dict)

    def set(self, path: Path_, value: Any, origin: Origin) -> None:
        self.values[path] = value
        self.origins[path] = origin


@dataclass(frozen=True)
class ConfigFile:
    """A config file and its settings table (``[tool.calaudit]`` for pyproject.toml)."""

    path: Path
    table: Mapping[str, Any]
    is_pyproject: bool

    @property
    def label(self) -> str:
        shown = display_path(self.path)
        return f"{shown} [tool.calaudit]" if self.is_pyproject else shown


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it is below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# ------------------------------------------------------------------------------- files


def read_toml(path: Path) -> dict[str, Any]:
    """The TOML document at ``path``: a regular file of at most ``CONFIG_MAX_BYTES``,
    nested at most ``CONFIG_MAX_DEPTH`` deep (``docs/configuration.md``)."""
    shown = display_path(path)
    try:
        raw = read_limited(path, CONFIG_MAX_BYTES, "the config file")
    except FileProblem as exc:
        message = "config file not found" if exc.rule == "file_not_found" else exc.message
        raise ConfigError(f"{shown}: {message} [config_file]", hint=exc.hint) from None
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{shown}: invalid TOML: not UTF-8 text ({exc.reason} at byte "
                          f"{exc.start}) [config_file]") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{shown}: invalid TOML: {exc} [config_file]") from None
    except RecursionError:
        document = None
    if document is None or nesting_depth(document, CONFIG_MAX_DEPTH) > CONFIG_MAX_DEPTH:
        raise ConfigError(f"{shown}: tables and arrays nested deeper than "
                          f"{CONFIG_MAX_DEPTH} levels [config_file]")
    return document


def _tool_table(document: Mapping[str, Any], path: Path) -> Any:
    """``[tool.calaudit]`` of a pyproject.toml document, or ``None``."""
    tool = document.get("tool")
    if tool is None:
        return None
    if not isinstance(tool, Mapping):
        raise ConfigError(f"{display_path(path)}: 'tool' must be a table ([tool.<name>]), "
                          f"not {type_name(tool)}")
    return tool.get("calaudit")


def load_config_file(path: Path) -> ConfigFile:
    """An explicitly named file (``--config``): a pyproject.toml is read for its
    ``[tool.calaudit]`` table, anything else as a calaudit.toml."""
    document = read_toml(path)
    if path.name == "pyproject.toml":
        table = _tool_table(document, path)
        if table is None:
            raise ConfigError(f"{display_path(path)}: no [tool.calaudit] table")
        return ConfigFile(path, table, True)
    return ConfigFile(path, document, False)


def discover_config_file(start: Path) -> ConfigFile | None:
    """The nearest config file from ``start`` upwards (see the module docstring)."""
    for directory in (start, *start.parents):
        for name in CONFIG_NAMES:
            candidate = directory / name
            if candidate.is_file():
                return ConfigFile(candidate, read_toml(candidate), False)
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file():
            document = read_toml(pyproject)
            table = _tool_table(document, pyproject)
            if table is not None:
                return ConfigFile(pyproject, table, True)
            if "calaudit" in document:
                raise ConfigError(f"{display_path(pyproject)}: found a [calaudit] table; "
                                  "settings in pyproject.toml go under [tool.calaudit]")
    return None


def file_layer(config: ConfigFile, schema: Section) -> Layer:
    """The settings of ``config``, validated against ``schema``."""
    layer = Layer()
    origin = Origin("file", config.label)
    if not isinstance(config.table, Mapping):
        raise ConfigError(f"{config.label}: [tool.calaudit] must be a table")
    _flatten(config.table, schema, (), schema, layer, origin, config)
    return layer


def _flatten(table: Mapping[str, Any], node: Section, prefix: Path_, schema: Section,
             layer: Layer, origin: Origin, config: ConfigFile) -> None:
    for key, value in table.items():
        here = (*prefix, key)
        dotted = ".".join(here)
        child = node.children.get(key)
        if child is None:
            raise ConfigError(f"{origin}: unknown key '{dotted}'"
                              + suggestion(here, schema, config))
        if isinstance(child, Section):
            if not isinstance(value, Mapping):
                raise ConfigError(f"{origin}: '{dotted}' is a section: write [{dotted}] with "
                                  f"its keys, not {type_name(value)}")
            _flatten(value, child, here, schema, layer, origin, config)
        elif isinstance(child, Table):
            _flatten_table(value, child, here, schema, layer, origin, config)
        else:
            layer.set(here, _file_value(value, child, dotted, origin, config), origin)


def _flatten_table(value: Any, table: Table, here: Path_, schema: Section, layer: Layer,
                   origin: Origin, config: ConfigFile) -> None:
    dotted = ".".join(here)
    example = f"[{dotted}.<{table.key_field}>]"
    if not isinstance(value, Mapping):
        raise ConfigError(f"{origin}: '{dotted}' is a table of tables: write {example}")
    for name, entry in value.items():
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{origin}: '{dotted}.{name}' must be a table ({example}), "
                              f"not {type_name(entry)}")
        _flatten(entry, table.entry, (*here, name), schema, layer, origin, config)


def _file_value(value: Any, leaf: Leaf, dotted: str, origin: Origin,
                config: ConfigFile) -> Any:
    try:
        coerced = coerce(value, leaf.annotation)
    except Mismatch as exc:
        raise ConfigError(f"{origin}: '{dotted}' expects {exc.expected}, got {value!r} "
                          f"({type_name(value)})") from None
    if leaf.is_path and isinstance(coerced, str) and coerced != "-" and "://" not in coerced:
        coerced = str(config.path.parent / coerced) if not Path(coerced).is_absolute() else (
            coerced)
    return coerced


def suggestion(path: Path_, schema: Section, config: ConfigFile | None = None,
               spell=lambda key: f"'{key}'") -> str:
    """`` (did you mean 'binning.n_bins'?)`` or a hint, or an empty string."""
    if config is not None and not config.is_pyproject and path[0] == "tool":
        return (f" (hint: {config.path.name} takes the settings at top level; "
                "[tool.calaudit] is for pyproject.toml)")
    keys = [_instantiate(k, path) for k in all_keys(schema)]
    dotted = ".".join(path)
    by_leaf = [k for k in keys if k.rsplit(".", 1)[-1] == path[-1] and k != dotted]
    close = by_leaf if len(by_leaf) == 1 else difflib.get_close_matches(dotted, keys, n=1,
                                                                          cutoff=0.6)
    return f" (did you mean {spell(close[0])}?)" if close else ""


def _instantiate(key: str, path: Path_) -> str:
    """Fill a key's ``<placeholder>`` parts with the names the user wrote at that depth."""
    parts = key.split(".")
    return ".".join(path[i] if p.startswith("<") and i < len(path) else p
                    for i, p in enumerate(parts))


# ------------------------------------------------------------------------- environment


def env_name(path: Path_) -> str:
    """``("binning", "n_bins")`` -> ``CALAUDIT_BINNING__N_BINS``."""
    return ENV_PREFIX + ENV_SEPARATOR.join(p.upper() for p in path)


def env_layer(environ: Mapping[str, str], schema: Section) -> tuple[Layer, list[str]]:
    """Settings from ``CALAUDIT_*`` variables, and warnings for unknown variables."""
    layer, warnings = Layer(), []
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX) or name in RESERVED_ENV:
            continue
        path = tuple(name[len(ENV_PREFIX):].lower().split(ENV_SEPARATOR))
        leaf = schema_node(schema, path) if all(path) else None
        if not isinstance(leaf, Leaf):
            hint = suggestion(path, schema, spell=lambda k: env_name(tuple(k.split("."))))
            warnings.append(f"ignoring {name}: not a calaudit setting{hint}")
            continue
        text = environ[name]
        try:
            value = coerce(text, leaf.annotation, from_text=True)
        except Mismatch as exc:
            raise ConfigError(f"{name}={text!r}: expected {exc.expected}") from None
        layer.set(path, value, Origin("env", name))
    return layer, warnings


# ------------------------------------------------------------------------------- flags


def flag_layer(flags: Mapping[str, tuple[Any, str]], schema: Section,
               kind: str = "flag") -> Layer:
    """Settings given on the command line: ``{dotted key: (value, "--option")}``."""
    layer = Layer()
    for key, (value, label) in flags.items():
        path = tuple(key.split("."))
        leaf = schema_node(schema, path)
        if not isinstance(leaf, Leaf):
            raise KeyError(f"{label} maps to '{key}', which is not a setting")
        try:
            coerced = coerce(value, leaf.annotation, from_text=isinstance(value, str))
        except Mismatch as exc:
            raise ConfigError(f"{label} {value!r}: expected {exc.expected}") from None
        layer.set(path, coerced, Origin(kind, label))
    return layer


