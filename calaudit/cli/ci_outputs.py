"""GitHub Actions integration of a command (``outputs.github``: ``auto`` or ``off``): the step
summary when ``GITHUB_STEP_SUMMARY`` is set, annotations when ``GITHUB_ACTIONS=true`` (on
stderr when stdout carries JSON)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from calaudit.audit.gate import Check
from calaudit.cli.ui import Ui
from calaudit.output.checklist import check_lines
from calaudit.output.github import (
    annotations,
    append_step_summary,
    summary_budget,
    summary_markdown,
)


def emit_github(payload: Mapping[str, Any], checks: Sequence[Check], fail_on: Sequence[str],
                outputs: Any, ui: Ui, environ: Mapping[str, str] | None = None) -> None:
    """Write the step summary and the annotations when running in GitHub Actions."""
    environ = os.environ if environ is None else environ
    if outputs.github == "off":
        return
    summary_path = environ.get("GITHUB_STEP_SUMMARY")
    if summary_path and os.path.exists(summary_path) and not os.path.isfile(summary_path):
        ui.warn(f"GITHUB_STEP_SUMMARY {summary_path} is not a regular file: summary skipped")
        summary_path = None
    if summary_path:
        try:
            markdown = summary_markdown(payload, list(checks), fail_on,
                                        budget=summary_budget(summary_path))
            if append_step_summary(summary_path, markdown):
                ui.log(f"appended the step summary to {summary_path}")
            else:
                ui.warn("GITHUB_STEP_SUMMARY is nearly full (1 MiB limit): summary skipped")
        except OSError as exc:
            ui.warn(f"cannot write the step summary {summary_path}: {exc.strerror or exc}")
    if environ.get("GITHUB_ACTIONS") == "true":
        stream = sys.stderr if ui.json_stdout else sys.stdout
        for line in annotations(check_lines(payload, checks), fail_on):
            stream.write(line + "\n")
        stream.flush()
