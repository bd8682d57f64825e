"""Terminal behaviour of a command: stdout carries the summary (or only JSON with ``--json
-``), stderr everything else; progress bars only on a terminal and not ``--quiet`` (plain
log lines with ``--verbose`` otherwise); colour ``auto``, ``always`` or ``never``."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO


@dataclass
class Ui:
    """How one command talks to the terminal."""

    quiet: bool = False
    verbose: bool = False
    color: str = "auto"
    json_stdout: bool = False
    explain: bool = False

    @property
    def show_summary(self) -> bool:
        """Print the human summary on stdout (never when stdout carries JSON)."""
        return not self.quiet and not self.json_stdout

    def console_options(self) -> dict[str, Any]:
        """Keyword arguments of ``rich.console.Console`` for the chosen colour mode."""
        if self.color == "always":
            return {"force_terminal": True, "no_color": False}
        if self.color == "never":
            return {"no_color": True}
        return {}

    def color_flag(self) -> bool | None:
        """``True``/``False`` when forced, ``None`` for auto."""
        return {"always": True, "never": False}.get(self.color)

    def log(self, message: str) -> None:
        """A ``--verbose`` line on stderr."""
        if self.verbose and not self.quiet:
            _write(sys.stderr, f"calaudit: {message}")

    def warn(self, message: str) -> None:
        """A warning line on stderr (shown unless ``--quiet``)."""
        if not self.quiet:
            _write(sys.stderr, f"calaudit: warning: {message}")

    @contextmanager
    def progress(self) -> Iterator[None]:
        """Install the progress reporter that suits the terminal for the block."""
        from calaudit import progress

        if self.quiet:
            yield
            return
        if _is_terminal(sys.stderr):
            from calaudit.cli.progress_display import RichReporter

            with RichReporter(self.console_options(), verbose=self.verbose) as reporter:
                with progress.reporting(reporter):
                    yield
        elif self.verbose:
            with progress.reporting(LogReporter(self.log)):
                yield
        else:
            yield


def _write(stream: TextIO, line: str) -> None:
    stream.write(line + "\n")
    stream.flush()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class LogReporter:
    """Progress as plain log lines (``--verbose`` without a terminal): one line when a
    step with a known size starts and one when any step ends, with its duration."""

    def __init__(self, log) -> None:
        self._log = log

    def start(self, name: str, total: int | None) -> object:
        if total is not None:
            self._log(f"{name}: started ({total} steps)")
        return (name, time.perf_counter())

    def advance(self, handle: object, amount: int) -> None:
        return None

    def stop(self, handle: object) -> None:
        name, started = handle  # type: ignore[misc]
        self._log(f"{name}: done in {time.perf_counter() - started:.2f} s")

    def note(self, message: str) -> None:
        self._log(message)
