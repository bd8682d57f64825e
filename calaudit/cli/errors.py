"""The error boundary: expected errors print one line and exit 2, unexpected ones exit 3
with a bug-report hint (a traceback only with ``CALAUDIT_DEBUG=1``), Ctrl-C exits 130."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

import typer

BUG_URL = "https://github.com/calaudit/calaudit/issues"


def print_error(message: str) -> None:
    """One line on stderr, prefixed ``calaudit: error:``; under GitHub Actions also an
    ``::error`` annotation and a step-summary line (``output.github.report_error``)."""
    sys.stderr.write(f"calaudit: error: {message}\n")
    sys.stderr.flush()
    from calaudit.output.github import report_error

    report_error(message)


@contextmanager
def error_boundary() -> Iterator[None]:
    """Map exceptions raised inside a command to exit codes (design notes 2.4)."""
    from calaudit.audit.gate import ExitCode
    from calaudit.exceptions import CalauditError

    try:
        yield
    except (typer.Exit, typer.Abort):
        raise
    except CalauditError as exc:
        print_error(exc.one_line())
        raise typer.Exit(int(ExitCode.USAGE_ERROR)) from None
    except KeyboardInterrupt:
        print_error("interrupted")
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    except Exception as exc:  # noqa: BLE001 - the boundary for bugs
        if os.environ.get("CALAUDIT_DEBUG"):
            traceback.print_exc()
        print_error(
            f"internal error: {type(exc).__name__}: {exc}. This is a bug in calaudit; "
            f"please report it at {BUG_URL} (set CALAUDIT_DEBUG=1 for a traceback)"
        )
        raise typer.Exit(int(ExitCode.INTERNAL_ERROR)) from None
