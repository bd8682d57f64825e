"""The settings schema, derived by walking configuration dataclasses (no setting named here).

Field shapes: a **section** (a dataclass type: a TOML table), a **keyed table**
(``tuple[Dataclass, ...]`` with ``metadata={"key": ...}``: ``[thresholds.ece]``) and a
**leaf** (``int``, ``float``, ``str``, ``bool``, ``X | None``, ``tuple[X, ...]``).
Metadata: ``help``, ``path`` (resolved against the config file's directory), ``key``,
``setting`` (``False``: not a setting)."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Union

Path_ = tuple[str, ...]


@dataclass(frozen=True)
class _Node:
    """A node of the schema at ``path``; ``key``: the dotted path."""

    path: Path_

    @property
    def key(self) -> str:
        return ".".join(self.path)


@dataclass(frozen=True)
class Leaf(_Node):
    """One scalar setting."""

    annotation: Any
    default: Any
    help: str = ""
    is_path: bool = False


@dataclass(frozen=True)
class Section(_Node):
    """A dataclass: its fields by name."""

    cls: type
    children: dict[str, Leaf | Section | Table]


@dataclass(frozen=True)
class Table(_Node):
    """A keyed table of ``entry`` sections; ``entry`` paths hold a ``<key>`` placeholder."""

    key_field: str
    entry: Section
    help: str = ""


def build_schema(cls: type, path: Path_ = ()) -> Section:
    """The schema of dataclass ``cls`` (recursively)."""
    hints = typing.get_type_hints(cls)
    children: dict[str, Leaf | Section | Table] = {}
    for f in dataclasses.fields(cls):
        if f.metadata.get("setting") is False:  # a run-time object (AuditConfig.executor)
            continue
        annotation = hints[f.name]
        here = (*path, f.name)
        entry_cls = _table_entry(annotation)
        if dataclasses.is_dataclass(annotation):
            children[f.name] = build_schema(annotation, here)
        elif entry_cls is not None:
            key_field = f.metadata.get("key") or dataclasses.fields(entry_cls)[0].name
            entry = build_schema(entry_cls, (*here, f"<{key_field}>"))
            del entry.children[key_field]
            children[f.name] = Table(here, key_field, entry, f.metadata.get("help", ""))
        else:
            children[f.name] = Leaf(here, annotation, _default(f), f.metadata.get("help", ""),
                                    bool(f.metadata.get("path")))
    return Section(path, cls, children)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _table_entry(annotation: Any) -> type | None:
    if typing.get_origin(annotation) is tuple:
        args = typing.get_args(annotation)
        if len(args) == 2 and args[1] is Ellipsis and dataclasses.is_dataclass(args[0]):
            return args[0]
    return None


def iter_leaves(section: Section) -> Iterator[Leaf]:
    """Every leaf, depth first, keyed tables through their ``<key>`` placeholder entry."""
    for child in section.children.values():
        if isinstance(child, Leaf):
            yield child
        elif isinstance(child, Section):
            yield from iter_leaves(child)
        else:
            yield from iter_leaves(child.entry)


def all_keys(section: Section) -> list[str]:
    """Dotted keys of every leaf (``thresholds.<metric>.warn`` for keyed tables)."""
    return [leaf.key for leaf in iter_leaves(section)]


def schema_node(section: Section, path: Path_) -> Leaf | Section | Table | None:
    """The node at ``path``; inside a keyed table any entry name matches the placeholder."""
    node: Leaf | Section | Table = section
    for part in path:
        if isinstance(node, Section):
            child = node.children.get(part)
            if child is None:
                return None
            node = child
        elif isinstance(node, Table):
            node = node.entry
        else:
            return None
    return node


# ---------------------------------------------------------------------------- coercion


class Mismatch(ValueError):
    """A value of the wrong type; ``expected`` says what was expected."""

    def __init__(self, expected: str) -> None:
        super().__init__(expected)
        self.expected = expected


TRUE = ("true", "1", "yes", "on")
FALSE = ("false", "0", "no", "off")
NONE = ("", "none", "null")


def describe_type(annotation: Any) -> str:
    """What a value of ``annotation`` looks like, for error messages."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (Union, types.UnionType):
        inner = [describe_type(a) for a in args if a is not type(None)]
        return " or ".join(inner) + (" (or nothing)" if type(None) in args else "")
    if origin is tuple:
        return f"a list of {_plural(describe_type(args[0]))}"
    return {bool: "true or false", int: "an integer", float: "a number",
            str: "a string"}.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _plural(description: str) -> str:
    for article in ("an ", "a "):
        if description.startswith(article):
            return description[len(article):] + "s"
    return description


def coerce(value: Any, annotation: Any, *, from_text: bool = False) -> Any:
    """``value`` as ``annotation`` requires, or :class:`Mismatch`.

    ``from_text``: ``value`` is a string from an environment variable or a command-line
    flag (``"0.05"``, ``"true"``, ``"FAIL,ERROR"``); otherwise it comes from TOML and must
    already have the right type (an int is accepted for a float).
    """
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (Union, types.UnionType):
        if value is None or (from_text and isinstance(value, str)
                             and value.strip().lower() in NONE):
            if type(None) in args:
                return None
        for arg in (a for a in args if a is not type(None)):
            try:
                return coerce(value, arg, from_text=from_text)
            except Mismatch:
                continue
        raise Mismatch(describe_type(annotation))
    if origin is tuple:
        return _coerce_sequence(value, args, annotation, from_text)
    return _coerce_scalar(value, annotation, from_text)


def _coerce_sequence(value: Any, args: tuple, annotation: Any, from_text: bool) -> tuple:
    if from_text and isinstance(value, str):
        items: Any = [part.strip() for part in value.split(",") if part.strip()]
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        raise Mismatch(describe_type(annotation))
    element = args[0]
    try:
        return tuple(coerce(item, element, from_text=from_text) for item in items)
    except Mismatch:
        raise Mismatch(describe_type(annotation)) from None


def _coerce_scalar(value: Any, annotation: Any, from_text: bool) -> Any:
    if from_text and isinstance(value, str) and annotation is not str:
        return _parse_text(value.strip(), annotation)
    if annotation is bool:
        if isinstance(value, bool):
            return value
    elif annotation is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif annotation is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif annotation is str:
        if isinstance(value, str):
            return value
        if from_text and hasattr(value, "__fspath__"):
            return str(value)
    elif isinstance(annotation, type) and isinstance(value, annotation):
        return value
    raise Mismatch(describe_type(annotation))


def _parse_text(text: str, annotation: Any) -> Any:
    lowered = text.lower()
    if annotation is bool:
        if lowered in TRUE:
            return True
        if lowered in FALSE:
            return False
    elif annotation is int:
        try:
            return int(text)
        except ValueError:
            pass
    elif annotation is float:
        try:
            number = float(text)
        except ValueError:
            pass
        else:
            if math.isfinite(number):
                return number
    raise Mismatch(describe_type(annotation))


def type_name(value: Any) -> str:
    """How TOML would call the type of ``value``."""
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
             list: "an array", dict: "a table"}
    return names.get(type(value), type(value).__name__)
