"""The progress API: silent by default, pluggable reporters, used by the runner."""

from __future__ import annotations

import io

import numpy as np
import pytest

from calaudit import progress
from calaudit.audit.runner import run_audit
from calaudit.audit.stages import StageOutput
from calaudit.cli.ui import LogReporter, Ui
from calaudit.data.dataset import CalibrationData


class Recorder:
    def __init__(self):
        self.events = []

    def start(self, name, total):
        self.events.append(("start", name, total))
        return name

    def advance(self, handle, amount):
        self.events.append(("advance", handle, amount))

    def stop(self, handle):
        self.events.append(("stop", handle))

    def note(self, message):
        self.events.append(("note", message))


def test_default_is_silent_and_task_still_yields_advance():
    assert isinstance(progress.current_reporter(), progress.NullReporter)
    with progress.task("loop", total=3) as advance:
        advance()
        advance(2)


def test_reporting_installs_and_restores_a_reporter():
    recorder = Recorder()
    with progress.reporting(recorder):
        with progress.task("resampling", total=10) as advance:
            advance(4)
            advance()
        progress.note("hello")
    assert isinstance(progress.current_reporter(), progress.NullReporter)
    assert recorder.events == [("start", "resampling", 10), ("advance", "resampling", 4),
                               ("advance", "resampling", 1), ("stop", "resampling"),
                               ("note", "hello")]


def test_task_is_closed_when_the_block_raises():
    recorder = Recorder()
    with progress.reporting(recorder), pytest.raises(KeyboardInterrupt):
        with progress.task("slow"):
            raise KeyboardInterrupt
    assert recorder.events[-1] == ("stop", "slow")


class LongStage:
    name = "long_stage"

    def run(self, data, config, rng):
        with progress.task("inner_resampling", total=5) as advance:
            for _ in range(5):
                advance()
        return StageOutput()


def test_runner_reports_each_stage_and_inner_tasks():
    data = CalibrationData.from_arrays(np.array([0, 1] * 50), np.full(100, 0.5))
    recorder = Recorder()
    with progress.reporting(recorder):
        run_audit(data, stages=(LongStage(),))
    starts = [e for e in recorder.events if e[0] == "start"]
    assert starts == [("start", "audit", 1), ("start", "long_stage", None),
                      ("start", "inner_resampling", 5)]
    assert ("advance", "inner_resampling", 1) in recorder.events
    assert any(e[0] == "note" and e[1].startswith("stage long_stage:") for e in recorder.events)


def test_rich_reporter_draws_on_its_console():
    from rich.console import Console

    from calaudit.cli.progress_display import RichReporter

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=80)
    with RichReporter(console=console, verbose=True) as reporter:
        with progress.reporting(reporter):
            with progress.task("skce_consistency", total=4) as advance:
                advance(4)
            progress.note("a verbose note")
    output = buffer.getvalue()
    assert "skce_consistency" in output and "a verbose note" in output


def test_log_reporter_and_ui_choose_by_terminal(capsys):
    lines = []
    reporter = LogReporter(lines.append)
    with progress.reporting(reporter):
        with progress.task("resampling", total=3):
            pass
    assert lines[0] == "resampling: started (3 steps)"
    assert lines[1].startswith("resampling: done in ")
    # Not a terminal (pytest captures stderr): no bars; --verbose gives log lines.
    with Ui(verbose=True).progress():
        assert isinstance(progress.current_reporter(), LogReporter)
    with Ui().progress():
        assert isinstance(progress.current_reporter(), progress.NullReporter)
    with Ui(quiet=True, verbose=True).progress():
        assert isinstance(progress.current_reporter(), progress.NullReporter)


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_ui_shows_rich_bars_on_a_terminal_only(monkeypatch):
    from calaudit.cli.progress_display import RichReporter

    monkeypatch.setattr("sys.stderr", FakeTerminal())
    with Ui().progress():
        assert isinstance(progress.current_reporter(), RichReporter)
        with progress.task("bootstrap", total=2) as advance:
            advance(2)
    assert isinstance(progress.current_reporter(), progress.NullReporter)
    with Ui(quiet=True).progress():
        assert isinstance(progress.current_reporter(), progress.NullReporter)
