"""Exception types: everything a user can cause raises a :class:`CalauditError` (one line on
stderr, exit code 2); any other exception is a bug (exit code 3)."""

from __future__ import annotations

import copy


class CalauditError(Exception):
    """Base class of every error a user can cause."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        """The message and hint on one line, as printed on stderr."""
        text = self.message.replace("\n", " ")
        if self.hint:
            text += f" (hint: {self.hint})"
        return text

    def __reduce__(self) -> tuple:
        """Pickled with its fields (an error found by a task travels to the client)."""
        return _restored, (type(self), self.args, dict(self.__dict__))


def _restored(cls: type, args: tuple, fields: dict) -> CalauditError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(fields)
    return error


class InputError(CalauditError, ValueError):
    """A data file or array that cannot be used as given; the message names ``source``,
    ``column`` and the validation ``rule``."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        column: str | None = None,
        rule: str,
        hint: str | None = None,
    ) -> None:
        where = ": ".join(
            part
            for part in (source, f"column '{clip(column)}'" if column is not None else None)
            if part
        )
        full = f"{where}: {message} [{rule}]" if where else f"{message} [{rule}]"
        super().__init__(full, hint=hint)
        self.source = source
        self.column = column
        self.rule = rule

    def renamed(self, old: str, new: str) -> InputError:
        """This error naming the file ``new`` where it names ``old`` (a temporary copy's
        or an absolute path, replaced by the name the user gave)."""
        out = copy.copy(self)
        out.message = self.message.replace(old, new)
        out.args = (out.message,)
        out.source = new if self.source == old else self.source
        return out


def clip(text: str, limit: int = 80) -> str:
    """``text`` shortened to ``limit`` characters for an error message."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit - 15]}...{text[-12:]}"


class ConfigError(CalauditError, ValueError):
    """An option or configuration value that is not valid."""


class ClusterError(CalauditError):
    """A Dask cluster that cannot be used: unreachable, the ``calaudit[dask]`` extra missing, or
    losing the workers that run a task."""
