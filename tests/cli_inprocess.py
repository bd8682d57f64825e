"""Running the command line in-process (``calaudit.cli.app.run``) with captured streams:
what the fuzz suite and the hostile-input tests use instead of a subprocess per case."""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def run_cli(*args: object, cwd: Path | None = None, env: dict[str, str] | None = None
            ) -> Outcome:
    """``calaudit ARGS`` in this process; ``cwd`` and ``env`` apply for the call only."""
    from calaudit.cli.app import run

    out, err = io.StringIO(), io.StringIO()
    old_cwd, old_env = os.getcwd(), dict(os.environ)
    try:
        if cwd is not None:
            os.chdir(cwd)
        if env:
            os.environ.update(env)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = run([str(a) for a in args])
    finally:
        os.chdir(old_cwd)
        os.environ.clear()
        os.environ.update(old_env)
    return Outcome(code, out.getvalue(), err.getvalue())


def assert_one_line_error(outcome: Outcome, *fragments: str) -> str:
    """Exit 2 and exactly one stderr line ``calaudit: error: ...`` holding ``fragments``."""
    lines = outcome.error_lines
    assert outcome.code == 2, (outcome.code, outcome.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("calaudit: error: "), outcome.stderr[-2000:]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]
