"""The error boundary: expected errors print one line and exit 2, unexpected ones exit 3 with
a bug-report hint (a traceback only with ``CALAUDIT_DEBUG=1``), Ctrl-C exits 130 and
SIGTERM/SIGHUP 143, both unwinding the command so every ``with`` block closes what it
opened. :func:`print_error` escapes control characters and shortens an over-long line in
the middle; warnings inside a command are swallowed, so an error is one line on stderr."""

from __future__ import annotations

import os
import re
import sys
import traceback
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import typer

BUG_URL = "https://github.com/calaudit/calaudit/issues"
#: Longest error line printed (characters); longer ones lose their middle.
MAX_LINE = 600
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def clean_line(message: str, limit: int = MAX_LINE) -> str:
    """``message`` on one printable line of at most ``limit`` characters."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if m.group() != "\n" else " ",
                        message)
    if len(text) > limit:
        keep = (limit - 5) // 2
        text = f"{text[:keep]} ... {text[-keep:]}"
    return text


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread like Ctrl-C's ``KeyboardInterrupt``
    so that the same cleanup runs (:func:`terminate_as_interrupt`)."""


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Inside the block (main thread only), SIGTERM and SIGHUP raise :class:`Terminated`;
    after the first, further ones are ignored so the cleanup they started can finish."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        for number in numbers:
            signal.signal(number, signal.SIG_IGN)
        raise Terminated(signal.Signals(signum).name)

    numbers = [n for n in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if n is not None]
    previous = {n: signal.signal(n, handler) for n in numbers}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def interrupted(exc: BaseException) -> int:
    """Print the line of an interrupt (Ctrl-C, or :class:`Terminated`) and return its exit
    code: 130, or 143 for SIGTERM/SIGHUP."""
    from calaudit.audit.gate import ExitCode

    if isinstance(exc, Terminated):
        print_error(f"terminated ({exc.args[0] if exc.args else 'SIGTERM'})")
        return int(ExitCode.TERMINATED)
    print_error("interrupted")
    return int(ExitCode.INTERRUPTED)


#: Error lines printed by this process (lets the entry point tell whether an interrupt
#: was already reported).
printed = [0]


def print_error(message: str) -> None:
    """One line on stderr, prefixed ``calaudit: error:``; under GitHub Actions also an
    ``::error`` annotation and a step-summary line (``output.github.report_error``)."""
    printed[0] += 1
    message = clean_line(message)
    sys.stderr.write(f"calaudit: error: {message}\n")
    sys.stderr.flush()
    from calaudit.output.github import report_error

    report_error(message)


def usage_message(exc: Exception) -> str:
    """A Click/Typer usage error (unknown option, bad value, missing argument) as the
    text of one error line: the command, Click's message and a hint."""
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "calaudit"
    text = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    text = " ".join(text.split())
    hint = f"see '{command} --help'"
    if type(exc).__name__ == "NoSuchOption":
        name = getattr(exc, "option_name", "") or ""
        if not name.startswith("--"):
            hint += "; a file name starting with '-' is written ./-name"
    return f"{command}: {text} [usage] (hint: {hint})"


@contextmanager
def error_boundary() -> Iterator[None]:
    """Map exceptions raised inside a command to exit codes (README, 'Exit codes')."""
    from calaudit.audit.gate import ExitCode
    from calaudit.exceptions import CalauditError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    except (typer.Exit, typer.Abort):
        raise
    except CalauditError as exc:
        print_error(exc.one_line())
        raise typer.Exit(int(ExitCode.USAGE_ERROR)) from None
    except KeyboardInterrupt as exc:
        raise typer.Exit(interrupted(exc)) from None
    except MemoryError:
        print_error("out of memory: the input or a setting asks for more memory than this "
                    "machine has (hint: check the sizes and counts given; --spill always "
                    "keeps the loaded columns on disk; --dask spreads the rows over "
                    "workers) [memory]")
        raise typer.Exit(int(ExitCode.USAGE_ERROR)) from None
    except Exception as exc:  # noqa: BLE001 - the boundary for bugs
        if os.environ.get("CALAUDIT_DEBUG"):
            traceback.print_exc()
        print_error(
            f"internal error: {type(exc).__name__}: {exc}. This is a bug in calaudit; "
            f"please report it at {BUG_URL} (set CALAUDIT_DEBUG=1 for a traceback)"
        )
        raise typer.Exit(int(ExitCode.INTERNAL_ERROR)) from None
