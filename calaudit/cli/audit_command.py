"""What ``calaudit test`` and ``calaudit metrics`` do once options are parsed:
settings -> executor (in-process, or a Dask cluster closed after the audit) -> load ->
audit -> render every output in memory -> write them atomically ->
CI outputs (step summary, annotations) -> summary -> exit code. Heavy modules are
imported here, not at CLI start-up."""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

from calaudit import progress
from calaudit.audit.gate import Check, ExitCode, exit_code, gating
from calaudit.cli.ci_outputs import emit_github
from calaudit.cli.options import SIGNOFF_FLAGS
from calaudit.cli.settings_flags import command_settings, make_ui
from calaudit.cli.ui import Ui
from calaudit.data.load import load
from calaudit.exceptions import ConfigError
from calaudit.output.files import check_targets, write_all
from calaudit.output.junit import junit_xml
from calaudit.output.summary import print_summary
from calaudit.results import to_json
from calaudit.settings.resolve import Resolved
from calaudit.settings.show import show_text

#: The output options, in the order their documents are rendered.
OUTPUTS = ("json", "junit", "md", "html", "pdf")


def run_command(ctx: Any, *, metrics_only: bool) -> ExitCode:
    """Resolve the settings of ``calaudit test``/``metrics`` and run the audit."""
    overrides = {"run_tests": (False, "calaudit metrics")} if metrics_only else None
    check_targets([(f"--{name}", ctx.params.get(name)) for name in OUTPUTS])
    settings = command_settings(ctx, overrides=overrides)
    if shown_config(ctx, settings):
        return ExitCode.OK
    return run_audit_command(str(ctx.params["data"]), settings, make_ui(ctx, settings))


def run_audit_command(data_path: str, settings: Resolved, ui: Ui) -> ExitCode:
    """Run one audit from the command line and return the exit code. Progress is shown
    while loading and auditing only, so nothing else draws over the summary."""
    from calaudit.audit.battery import stages as default_stages
    from calaudit.audit.gate.baseline import read_result
    from calaudit.audit.runner import run_audit
    from calaudit.scale import ThreadExecutor, open_executor
    from calaudit.scale.cluster import capped

    config, data_cfg, outputs = settings[""], settings["data"], settings["outputs"]
    check_outputs(outputs, ("--save-state", outputs.state))
    if outputs.state and not config.monitoring.enabled:
        raise ConfigError("--save-state needs windows: give --window (or --batch-col)")
    if config.monitoring.window_battery and not config.monitoring.enabled:
        raise ConfigError("--window-battery ([monitoring] window_battery) needs windows: "
                          "give --window (or --batch-col)")
    if outputs.state and os.path.exists(outputs.state):
        raise ConfigError(f"--save-state {outputs.state}: the file exists; a monitoring "
                          "state is never overwritten",
                          hint="continue it with 'calaudit monitor', or remove it first")
    _log_settings(settings, ui)
    baseline = read_result(config.baseline.path) if config.baseline.path else None
    with open_executor(settings["dask"], warn=ui.warn) as executor, ui.progress():
        # no cluster: the reductions run on threads of this process (dask.threads)
        threads = getattr(settings["dask"], "threads", None)
        executor = executor or ThreadExecutor(
            threads and capped("--threads", threads, ui.warn), one_arena=True)
        config = dataclasses.replace(config, executor=executor)
        ui.log(f"row reductions on {executor.describe()}")
        options = {f: getattr(data_cfg, f) for f in data_cfg.__dataclass_fields__}
        with progress.task("load"):
            data = (read_by_tasks(data_path, options, config, ui)
                    if getattr(executor, "name", None) == "dask" else None)
            if data is None:
                data = load(data_path, require_two_classes=config.run_tests, **options)
        ui.log(f"{data_path}: {data.n} rows used, {data.n_classes} classes")
        over_time, state_doc = (over_time_stage(data_path, data, config, outputs.state)
                                if config.monitoring.enabled else ((), []))
        result = run_audit(data, config, stages=default_stages() + over_time,
                           baseline=baseline)
    payload = result.to_dict()
    payload["config_sources"] = {"file": settings.file.label if settings.file else None,
                                 "values": recorded_sources(settings)}
    return finish_command(payload, list(result.checks), config, outputs, ui, state_doc)


def shown_config(ctx: Any, settings: Resolved) -> bool:
    """``--show-config``: print the resolved settings (the command then stops)."""
    if ctx.params.get("show_config"):
        sys.stdout.write(show_text(settings))
    return bool(ctx.params.get("show_config"))


def check_outputs(outputs: Any, *extra: tuple[str, Any]) -> None:
    """Check every output path (and ``extra`` ones) and, for a PDF, WeasyPrint and its
    system libraries, before any work."""
    check_targets(output_targets(outputs) + list(extra))
    if outputs.pdf:
        from calaudit.report.render import pdf_engine

        pdf_engine()


def finish_command(payload: dict[str, Any], checks: list[Check], config: Any, outputs: Any,
                   ui: Ui, extra: list[tuple[str, str | bytes]]) -> ExitCode:
    """Write every output of an audit with the ``extra`` documents (all or none), the
    GitHub outputs and the summary; the exit code of the gate."""
    write_documents(render_documents(payload, outputs, config.fail_on, checks) + extra, ui)
    emit_github(payload, checks, config.fail_on, outputs, ui)
    if ui.show_summary:
        print_summary(payload, color=ui.color_flag(), explain=ui.explain, checks=checks)
    sys.stdout.flush()
    return exit_code([c.status for c in gating(checks)], config.fail_on, config.exit_zero)


def read_by_tasks(data_path: str, options: dict[str, Any], config: Any, ui: Ui) -> Any:
    """The data of a Parquet dataset whose rows the tasks read themselves
    (:mod:`calaudit.data.planned`), or None (the reason logged) to load it here."""
    from calaudit import scale
    from calaudit.data.planned import NotPlanned, plan, why_not

    reason = why_not(data_path, options) or (
        "time windows" if config.monitoring.enabled else None)
    if reason is None:
        try:  # the first reduction (the row rules) on the workers too
            with scale.using(config.executor):
                data = plan(data_path, require_two_classes=config.run_tests, **options)
        except NotPlanned as exc:
            reason = str(exc)
        else:
            ui.log(f"{data_path}: rows read by the tasks that reduce them (the client "
                   "reads the footers and adds up)")
            return data
    ui.log(f"{data_path}: read into this process ({reason})")
    return None


def over_time_stage(data_path: str, data: Any, config: Any, state_path: str | None
                    ) -> tuple[tuple[Any, ...], list[tuple[str, str | bytes]]]:
    """The stage of calibration over time for the loaded rows, and the state file to
    write with the other outputs (none without ``--save-state``)."""
    from calaudit.audit.over_time import batch_of, run_batch, start_config
    from calaudit.audit.weighting import refuse
    from calaudit.monitoring import start

    refuse(data, config)  # before the windows' work
    with progress.task("over_time"):
        first = start(start_config(data, config.monitoring, config))
        state, advice = run_batch(first, batch_of(data, data_path, config.monitoring),
                                  data_path, data, config.executor)
    stage, documents = saved_state(state, advice, state_path)
    return (stage,), documents


def saved_state(state: Any, advice: Any, path: str | None
                ) -> tuple[Any, list[tuple[str, str | bytes]]]:
    """The stage of a finished monitoring run and its state file to write with the other
    outputs (none without ``path``)."""
    import hashlib

    from calaudit.audit.over_time import OverTimeStage
    from calaudit.monitoring.state import state_to_json

    if not path:
        return OverTimeStage(state, advice), []
    text = state_to_json(state)
    described = {"path": path, "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
    return OverTimeStage(state, advice, described), [(path, text)]


def recorded_sources(settings: Resolved) -> dict[str, str]:
    """The non-default settings' sources as recorded in the JSON, without ``dask.*`` and
    ``data.spill*``, which do not change the result."""
    return {key: source for key, source in settings.sources().items()
            if not key.startswith(("dask.", "data.spill"))}


def render_documents(payload: dict[str, Any], outputs: Any, fail_on: tuple[str, ...],
                     checks: list[Check] | None = None) -> list[tuple[str, str | bytes]]:
    """Every requested output, rendered in memory (nothing is written if one fails);
    ``checks``: the result's, when the caller holds them."""
    documents: list[tuple[str, str | bytes]] = []
    if outputs.json:
        documents.append((outputs.json, to_json(payload)))
    if outputs.junit:
        documents.append((outputs.junit, junit_xml(payload, fail_on, checks)))
    if outputs.md or outputs.html or outputs.pdf:
        from calaudit.report.render import render_reports

        signoff = {name.removeprefix("signoff_"): getattr(outputs, name) for name in SIGNOFF_FLAGS
                   if getattr(outputs, name)}
        documents += [(str(path), content) for path, content in
                      render_reports(payload, html=outputs.html, md=outputs.md,
                                     pdf=outputs.pdf, signoff=signoff,
                                     pdf_appendix=outputs.pdf_appendix, checks=checks)]
    return documents


def output_targets(outputs: Any) -> list[tuple[str, Any]]:
    """``(option, path)`` of every output a command may write."""
    return [(f"--{name}", getattr(outputs, name, None)) for name in OUTPUTS]


def write_documents(documents: list[tuple[str, str | bytes]], ui: Ui) -> None:
    """Write every document or none (:func:`~calaudit.output.files.write_all`); an
    unwritable path is a usage error (exit 2)."""
    for target in write_all(documents):
        ui.log(f"wrote {target}")


def _log_settings(settings: Resolved, ui: Ui) -> None:
    for warning in settings.warnings:
        ui.warn(warning)
    ui.log(f"config file: {settings.file.label if settings.file else 'none'}")
    for key, source in settings.sources().items():
        ui.log(f"setting {key} from {source}")
