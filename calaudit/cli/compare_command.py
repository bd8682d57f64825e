"""``calaudit compare OLD.json NEW.json``: gate a new result against a baseline result.

The verdict counts only the comparison. Output paths come from the flags only: a config
file's ``outputs.json`` names the audit's result, which a comparison must not overwrite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calaudit._version import __version__
from calaudit.audit.gate import Check, ExitCode, baseline_checks, exit_code, gate_counts, verdict
from calaudit.audit.gate.baseline import LoadedResult, compare_results, read_result
from calaudit.cli.audit_command import write_documents
from calaudit.cli.ci_outputs import emit_github
from calaudit.cli.settings_flags import command_settings, make_ui
from calaudit.output.files import check_targets
from calaudit.output.junit import junit_xml
from calaudit.output.summary import print_baseline
from calaudit.results import to_json


def run_compare(ctx: Any) -> ExitCode:
    """Compare, write the requested outputs, print the delta table, return the exit code."""
    from calaudit.audit.runner import created_at

    settings = command_settings(ctx)
    ui = make_ui(ctx, settings)
    json_path, junit_path = ctx.params.get("json"), ctx.params.get("junit")
    ui.json_stdout = json_path == "-"
    config = settings[""]
    check_targets([("--json", json_path), ("--junit", junit_path)])
    old, new = read_result(Path(ctx.params["old"])), read_result(Path(ctx.params["new"]))
    section = compare_results(old, new.payload, config)
    checks = baseline_checks(section)
    payload = comparison_payload(old, new, section, config, created_at(), checks)
    documents = []
    if json_path:
        documents.append((str(json_path), to_json(payload)))
    if junit_path:
        documents.append((str(junit_path), junit_xml(payload, config.fail_on, checks)))
    write_documents(documents, ui)
    emit_github(payload, checks, config.fail_on, settings["outputs"], ui)
    if ui.show_summary:
        print_baseline(section, color=ui.color_flag())
    return exit_code([c.status for c in checks], config.fail_on, config.exit_zero)


def comparison_payload(old: LoadedResult, new: LoadedResult, section: dict[str, Any],
                       config: Any, now: str, checks: list[Check]) -> dict[str, Any]:
    """The JSON of ``calaudit compare --json``: ``kind = "comparison"``, the two files, the
    ``baseline`` section, the gate over ``checks`` and the verdict."""
    return {
        "schema_version": 1,
        "kind": "comparison",
        "calaudit_version": __version__,
        "created_at": now,
        "old": _describe(old),
        "new": _describe(new),
        "inputs": (new.payload.get("inputs") or {}),
        "data": (new.payload.get("data") or {}),
        "config": config.to_dict(),
        "baseline": section,
        "gate": {"fail_on": list(config.fail_on), "exit_zero": config.exit_zero,
                 **gate_counts(checks, config.fail_on)},
        "verdict": verdict([c.status for c in checks], config.fail_on).value,
    }


def _describe(result: LoadedResult) -> dict[str, Any]:
    return {"path": result.path, "sha256": result.sha256,
            "calaudit_version": result.payload.get("calaudit_version"),
            "created_at": result.payload.get("created_at"),
            "verdict": result.payload.get("verdict")}
