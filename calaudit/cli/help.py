"""``--help`` of the commands: options grouped in panels, one line per option where it fits.

``--name METAVAR`` beside the plain-text help line and its default; names are never cut
(the help column wraps); at most :data:`MAX_WIDTH` columns. Only typer, rich and the
standard library are imported."""

from __future__ import annotations

import shutil
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from typer.core import TyperCommand, TyperGroup

#: Widest help layout (wider terminals get the same lines).
MAX_WIDTH = 100
ARGUMENTS = "Arguments"
OTHER = "Options"
COMMANDS = "Commands"


class _PrintHelp:
    """``--help`` is :func:`print_help`."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        print_help(self, ctx)


class HelpCommand(_PrintHelp, TyperCommand):
    """A typer command whose ``--help`` is :func:`print_help`."""


class HelpGroup(_PrintHelp, TyperGroup):
    """A typer command group whose ``--help`` is :func:`print_help` (with its commands)."""


def print_help(command: Any, ctx: Any, console: Console | None = None) -> None:
    """Usage, the command's description, its arguments, then its options by panel."""
    console = console or Console(width=help_width(), highlight=False)
    parts: list[Any] = [Padding(_usage(command, ctx), (1, 1, 0, 1))]
    if command.help:
        parts.append(Padding(_description(command.help), (1, 1, 0, 1)))
    panels = _panels(command, ctx)
    if hasattr(command, "list_commands"):
        panels[COMMANDS] = _commands(command, ctx)
    name_width = max((len(row[0]) for rows in panels.values() for row in rows), default=0)
    for title, rows in panels.items():
        parts.append(_panel(title, rows, name_width))
    console.print(Group(*parts))


def help_width() -> int:
    """The terminal's width (``COLUMNS`` first), at most :data:`MAX_WIDTH`."""
    return min(shutil.get_terminal_size((MAX_WIDTH, 24)).columns, MAX_WIDTH)


def _usage(command: Any, ctx: Any) -> Text:
    """``Usage: calaudit test [OPTIONS] PATH`` (optional arguments in brackets)."""
    pieces = [f"{ctx.command_path} [OPTIONS]"]
    pieces += [_argument_name(p) if p.required else f"[{_argument_name(p)}]"
               for p in command.get_params(ctx) if p.param_type_name == "argument"]
    if hasattr(command, "list_commands"):
        pieces.append("COMMAND [ARGS]...")
    return Text("Usage: " + " ".join(pieces), style="bold")


def _argument_name(param: Any) -> str:
    return str(param.metavar or param.name).upper()


def _description(help_text: str) -> Text:
    """The docstring's paragraphs (rich markup escapes such as ``\\[tool.calaudit]`` are
    read as the group's command list reads them)."""
    paragraphs = [" ".join(p.split()) for p in help_text.split("\n\n") if p.strip()]
    return Text.from_markup("\n".join(paragraphs))


def _panels(command: Any, ctx: Any) -> dict[str, list[tuple[str, Text]]]:
    """``{panel title: [(name and metavar, help)]}``, arguments first, in declaration order."""
    panels: dict[str, list[tuple[str, Text]]] = {}
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        if param.param_type_name == "argument":
            title, name = ARGUMENTS, _argument_name(param)
        else:
            title = getattr(param, "rich_help_panel", None) or _last(panels) or OTHER
            name = ", ".join(sorted(param.opts, key=len, reverse=True))
            if not param.is_flag:
                name += f" {param.metavar or 'VALUE'}"
        panels.setdefault(title, []).append((name, _help_text(param, ctx)))
    return panels


def _commands(group: Any, ctx: Any) -> list[tuple[str, Text]]:
    """Each command with the first paragraph of its help."""
    rows = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is not None and not command.hidden:
            first = (command.help or "").split("\n\n")[0]
            rows.append((name, Text.from_markup(" ".join(first.split()))))
    return rows


def _last(panels: dict[str, Any]) -> str | None:
    """The last options panel (``--help`` joins it rather than opening one of its own)."""
    titles = [title for title in panels if title != ARGUMENTS]
    return titles[-1] if titles else None


def _help_text(param: Any, ctx: Any) -> Text:
    words = " ".join(str(param.help or "").split())
    default = _default(param, ctx)
    if not default:
        text = Text(words)
    else:  # the default inside the sentence: "Bins of ... (default 15)."
        stop = "." if words.endswith(".") else ""
        text = Text(words.removesuffix("."))
        text.append(f" (default {default})", style="dim")
        text.append(stop)
    if param.required:
        text.append(" [required]", style="dim red")
    return text


def _default(param: Any, ctx: Any) -> str:
    if param.param_type_name == "argument" or getattr(param, "is_flag", False) \
            or not getattr(param, "show_default", False):
        return ""
    value = param.default
    return "" if value is None or value is False or value == "" else str(value)


def _panel(title: str, rows: list[tuple[str, Text]], name_width: int) -> Panel:
    table = Table.grid(padding=(0, 2), expand=True)
    table.add_column(no_wrap=True, min_width=name_width, style="bold cyan")
    table.add_column(ratio=1, overflow="fold")
    for name, text in rows:
        table.add_row(name, text)
    return Panel(table, title=Text(title), title_align="left", border_style="dim",
                 box=box.ROUNDED)
