"""Presenting settings: ``calaudit config show`` (every resolved value and its source) and
``calaudit config init`` (a commented template generated from the schema)."""

from __future__ import annotations

import json
from typing import Any

from calaudit.settings.resolve import Resolved, combined_schema
from calaudit.settings.schema import Leaf, Section, Table, describe_type
from calaudit.settings.sources import env_name


def _json_value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def show_text(resolved: Resolved) -> str:
    """Aligned ``key  value  source`` lines; values in JSON notation (``null`` = unset)."""
    rows = [(key, json.dumps(_json_value(value)), origin.label)
            for key, value, origin in resolved.items()]
    width_key = max(len(r[0]) for r in rows)
    width_value = min(max(len(r[1]) for r in rows), 28)  # long lists overflow their column
    head = (f"config file: {resolved.file.label}" if resolved.file else
            "config file: none found (searched calaudit.toml, .calaudit.toml and "
            "pyproject.toml [tool.calaudit] from the working directory upwards)")
    lines = [head, "precedence: flags > CALAUDIT_* environment variables > file > defaults", ""]
    lines += [f"{k:<{width_key}}  {v:<{width_value}}  {s}".rstrip() for k, v, s in rows]
    lines += [f"warning: {w}" for w in resolved.warnings]
    return "\n".join(lines) + "\n"


def show_json(resolved: Resolved) -> str:
    """The same as JSON: ``{"config_file", "settings": [{key, value, source, env}]}``."""
    settings = [{"key": key, "value": _json_value(value), "source": origin.label,
                 "source_kind": origin.kind, "env": env_name(tuple(key.split(".")))}
                for key, value, origin in resolved.items()]
    payload = {"config_file": resolved.file.label if resolved.file else None,
               "settings": settings, "warnings": list(resolved.warnings)}
    return json.dumps(payload, indent=2) + "\n"


def toml_literal(value: Any) -> str:
    """A TOML literal for a default value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    return json.dumps(str(value))


def init_template(roots: dict[str, type], pyproject: bool = False) -> str:
    """Every setting, commented out at its default, with its help and variable name."""
    schema = combined_schema(roots)
    lines = ["# calaudit configuration: every setting at its default.",
             "# Precedence: command-line flags > CALAUDIT_* environment variables > this file"
             " > defaults.",
             "# `calaudit config show` prints the resolved values and where each came from."]
    if pyproject:
        lines += ["", "[tool.calaudit]"]
    lines += _section_lines(schema, "tool.calaudit" if pyproject else "")
    return "\n".join(lines) + "\n"


def _leaf_lines(section: Section) -> list[str]:
    lines = []
    for child in section.children.values():
        if not isinstance(child, Leaf):
            continue
        name = child.path[-1]
        default = "" if child.default is None else toml_literal(child.default)
        assignment = f"# {name} = {default}".rstrip()
        note = f"{child.help}; " if child.help else ""
        env = env_name(child.path) if "<" not in child.key else ""
        lines.append(f"{assignment:<34} # {note}{describe_type(child.annotation)}"
                     + (f"; {env}" if env else ""))
    return lines


def _section_lines(section: Section, header: str) -> list[str]:
    """The leaves of ``section`` (the table ``header``, ``""`` at the top), then its
    sections and keyed tables, each under its own header."""
    lines = _leaf_lines(section)
    for name, child in section.children.items():
        full = f"{header}.{name}" if header else name
        if isinstance(child, Section):
            lines += ["", f"[{full}]", *_section_lines(child, full)]
        elif isinstance(child, Table):
            lines += _table_lines(child, full)
    return lines


def _table_lines(table: Table, header: str) -> list[str]:
    example = "ece" if table.key_field == "metric" else "name"
    lines = ["", f"# {table.help} (one table per {table.key_field}); for example:",
             f"# [{header}.{example}]"]
    lines += _leaf_lines(table.entry)
    return lines
