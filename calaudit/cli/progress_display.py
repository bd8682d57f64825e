"""The rich progress display on stderr (a :class:`calaudit.progress.Reporter`)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)


class RichReporter:
    """Transient bars on ``console`` (default stderr): a spinner for steps of unknown size, a
    bar for resampling loops; ``verbose`` notes print above them."""

    def __init__(self, console_options: dict[str, Any] | None = None, *,
                 verbose: bool = False, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True, **(console_options or {}))
        self.verbose = verbose
        self._progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
            MofNCompleteColumn(), TimeElapsedColumn(),
            console=self.console, transient=True)

    def __enter__(self) -> RichReporter:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def start(self, name: str, total: int | None) -> object:
        return self._progress.add_task(name, total=total)

    def advance(self, handle: object, amount: int) -> None:
        self._progress.advance(handle, amount)  # type: ignore[arg-type]

    def stop(self, handle: object) -> None:
        self._progress.remove_task(handle)  # type: ignore[arg-type]

    def note(self, message: str) -> None:
        if self.verbose:
            self.console.print(f"calaudit: {message}", markup=False, highlight=False)
