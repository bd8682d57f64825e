"""What ``calaudit monitor STATE BATCH`` does: load and check the monitoring state, read
the batch with the state's columns, append it (the e-process continues), audit the batch's
estimates (no fixed-sample test: the verdict is the e-process's), then write every output
and the new state together (all or nothing) and exit with the gate."""

from __future__ import annotations

import dataclasses
from typing import Any

from calaudit import progress
from calaudit.audit.gate import ExitCode
from calaudit.cli.audit_command import check_outputs, finish_command, saved_state, shown_config
from calaudit.cli.settings_flags import command_settings, make_ui


def run_monitor(ctx: Any) -> ExitCode:
    """Continue the state ``ctx.params["state"]`` with the batch ``ctx.params["batch"]``."""
    from calaudit.audit.battery import stages as default_stages
    from calaudit.audit.gate.decision import MONITOR_SHARE
    from calaudit.audit.over_time import batch_of, run_batch
    from calaudit.audit.runner import run_audit
    from calaudit.audit.sections.monitoring import MonitoringConfig
    from calaudit.audit.window_battery import battery_settings
    from calaudit.data.load import load
    from calaudit.monitoring import load_state

    state_path, batch_path = str(ctx.params["state"]), str(ctx.params["batch"])
    settings = command_settings(ctx)
    if shown_config(ctx, settings):
        return ExitCode.OK
    outputs = settings["outputs"]
    check_outputs(outputs, ("STATE", state_path))
    ui = make_ui(ctx, settings)
    state = load_state(state_path)
    mon = state.config
    config = dataclasses.replace(
        settings[""], alpha=mon.alpha / MONITOR_SHARE, seed=mon.seed, run_tests=False,
        binning=dataclasses.replace(settings[""].binning, n_bins=mon.n_bins),
        monitoring=MonitoringConfig(window=mon.window, time_col=mon.time_col,
                                    batch_col=mon.batch_col))
    if settings[""].monitoring.window_battery and mon.battery is None:
        # on from this batch's windows, with these settings (then fixed by the state)
        mon = dataclasses.replace(mon, battery=battery_settings(config))
        state = dataclasses.replace(state, config=mon)
    names = [name for name, _ in mon.groups]
    with ui.progress():
        with progress.task("load"):
            data = load(batch_path, label_col=mon.label_col, prob_cols=",".join(mon.prob_cols),
                        covariates=names, categorical=names, require_two_classes=False)
        ui.log(f"{batch_path}: {data.n} rows used")
        new, advice = run_batch(state, batch_of(data, batch_path, mon), batch_path, data,
                                config.executor)
        stage, documents = saved_state(new, advice, state_path)
        result = run_audit(data, config, stages=default_stages() + (stage,))
    return finish_command(result.to_dict(), list(result.checks), config, outputs, ui,
                          documents)
