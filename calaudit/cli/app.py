"""``calaudit``: the Typer application. Commands take their options from
:mod:`calaudit.cli.options` and call their ``*_command`` module inside the error boundary.
Only typer, rich and the standard library load at start-up."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer import Abort

try:
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover - typer versions that depend on click
    from click.exceptions import ClickException

from calaudit._version import __version__
from calaudit.cli import options as opt
from calaudit.cli.errors import (
    error_boundary,
    interrupted,
    print_error,
    terminate_as_interrupt,
    usage_message,
)
from calaudit.cli.help import HelpCommand, HelpGroup


class OneLineErrors(HelpGroup):
    """The command group, with Click's own errors (unknown option, bad value, missing
    argument) printed as one ``calaudit: error:`` line, exit code 2, instead of a box."""

    def main(self, args=None, prog_name=None, complete_var=None,  # type: ignore[override]
             standalone_mode: bool = True, **extra):
        code = run_group(super().main, args=args, prog_name=prog_name or "calaudit",
                         complete_var=complete_var, **extra)
        if standalone_mode:
            sys.exit(code)
        return code


def run_group(main, **kwargs) -> int:
    """Run a Click ``main`` in non-standalone mode and return the exit code. Ctrl-C
    while Click parses the options comes back as a bare 130: it gets its line too."""
    from calaudit.cli import errors

    before = errors.printed[0]
    try:
        value = main(standalone_mode=False, **kwargs)
    except ClickException as exc:
        if type(exc).__name__ != "NoArgsIsHelpError":
            print_error(usage_message(exc))
        return 2
    except (Abort, KeyboardInterrupt) as exc:
        return interrupted(exc)
    code = value if isinstance(value, int) and not isinstance(value, bool) else 0
    if code in (130, 143) and errors.printed[0] == before:
        print_error("interrupted" if code == 130 else "terminated")
    return code


app = typer.Typer(
    cls=OneLineErrors,
    name="calaudit",
    help="Audit whether a classifier's predicted probabilities can be trusted.\n\n"
         "Exit codes: 0 no check in fail-on; 1 a check in fail-on (or a regression); "
         "2 usage, config or input error; 3 internal error; 130 interrupted; 143 "
         "terminated (SIGTERM).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)
config_app = typer.Typer(
    cls=HelpGroup, name="config", no_args_is_help=True,
    help="Inspect and create configuration: calaudit.toml, or \\[tool.calaudit] in "
         "pyproject.toml.")
app.add_typer(config_app, name="config")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"calaudit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[Optional[bool], typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")] = None,
) -> None:
    """Audit whether a classifier's predicted probabilities can be trusted."""


def _audit(ctx: typer.Context, metrics_only: bool) -> None:
    with error_boundary():
        from calaudit.cli.audit_command import run_command

        code = run_command(ctx, metrics_only=metrics_only)
    raise typer.Exit(int(code))


@app.command("test", cls=HelpCommand)
@opt.takes([opt.argument("data", opt.DataArg)], opt.TEST)
def test_command(ctx: typer.Context, **params: Any) -> None:
    """Run the full audit: calibration errors and tests; the exit code is the gate.

    Settings come from flags, then CALAUDIT_* variables, then calaudit.toml (or
    \\[tool.calaudit] in pyproject.toml), then defaults.

    Example: calaudit test preds.parquet --covariates age,race --html audit.html --junit junit.xml
    """
    _audit(ctx, metrics_only=False)


@app.command(cls=HelpCommand)
@opt.takes([opt.argument("data", opt.DataArg)], opt.AUDIT)
def metrics(ctx: typer.Context, **params: Any) -> None:
    """Estimates only (no resampling): fast, for dashboards and large files.

    Thresholds and baselines still gate.

    Example: calaudit metrics preds.csv --json -
    """
    _audit(ctx, metrics_only=True)


@app.command(cls=HelpCommand)
@opt.takes([opt.argument("state", Annotated[Path, typer.Argument(
                help="Monitoring state written by 'calaudit test --save-state' (replaced "
                     "by the continued state).", show_default=False)]),
            opt.argument("batch", Annotated[str, typer.Argument(
                help="The new batch: a file or dataset with the state's columns (as for "
                     "calaudit test).", show_default=False, metavar="BATCH")])], opt.MONITOR)
def monitor(ctx: typer.Context, **params: Any) -> None:
    """Append one batch to a monitoring state: the e-process continues; exit code is its gate.

    The state fixes the columns, windows, groups and level; the outputs and the new state
    are written together or not at all.

    Example: calaudit monitor state.json batch_2024_07.parquet --html drift.html
    """
    with error_boundary():
        from calaudit.cli.monitor_command import run_monitor

        code = run_monitor(ctx)
    raise typer.Exit(int(code))


@app.command(cls=HelpCommand)
@opt.takes([opt.argument("old", Annotated[Path, typer.Argument(
                help="Baseline JSON result (the released model).", show_default=False)]),
            opt.argument("new", Annotated[Path, typer.Argument(
                help="New JSON result (the candidate).", show_default=False)])],
           opt.COMPARE)
def compare(ctx: typer.Context, **params: Any) -> None:
    """Compare two JSON results and fail on regressions.

    Shows per-metric deltas; a metric worse than the tolerance or a check that newly fails
    is a regression (exit code 1).

    Example: calaudit compare released.json candidate.json --regression-tolerance 0.005
    """
    with error_boundary():
        from calaudit.cli.compare_command import run_compare

        code = run_compare(ctx)
    raise typer.Exit(int(code))


@config_app.command("show", cls=HelpCommand)
@opt.takes([], ("config", "show_json"))
def config_show(ctx: typer.Context, **params: Any) -> None:
    """Print every resolved setting and where it came from.

    Sources: default, the config file, a CALAUDIT_* variable.

    Example: CALAUDIT_ALPHA=0.01 calaudit config show
    """
    with error_boundary():
        from calaudit.cli.config_command import show

        show(ctx, as_json=ctx.params["show_json"])


@config_app.command("init", cls=HelpCommand)
@opt.takes([opt.argument("path", Annotated[Path, typer.Argument(
                help="File to write ('-' for stdout).")], Path("calaudit.toml"))],
           ("pyproject", "force"))
def config_init(ctx: typer.Context, **params: Any) -> None:
    """Write a configuration template: every setting commented out at its default.

    Example: calaudit config init && calaudit config show
    """
    with error_boundary():
        from calaudit.cli.config_command import init

        init(ctx.params["path"], pyproject=ctx.params["pyproject"], force=ctx.params["force"])


@app.command(cls=HelpCommand)
@opt.takes([opt.argument("results", opt.ResultsArg)], opt.REPORT)
def report(ctx: typer.Context, **params: Any) -> None:
    """Re-render the HTML, PDF and/or Markdown report from a saved JSON result, without
    recomputing anything.

    Example: calaudit report result.json --pdf audit.pdf --signoff-name "A. Auditor"
    """
    with error_boundary():
        from calaudit.cli.report_command import run_from_options

        run_from_options(ctx.params)


@app.command("sample-data", cls=HelpCommand)
@opt.takes([opt.argument("directory", Annotated[Path, typer.Argument(
                help="Directory to write the datasets to.")])], ("force",))
def sample_data(ctx: typer.Context, **params: Any) -> None:
    """Write the bundled example datasets to DIRECTORY.

    credit_default in CSV/Parquet/NPZ, image_classifier.npz and a README.md. Existing
    files are not overwritten unless --force is given.

    Example: calaudit sample-data demo && calaudit test demo/credit_default.csv
    --covariates age,race
    """
    with error_boundary():
        from calaudit.sample import write_sample_data

        for path in write_sample_data(ctx.params["directory"], force=ctx.params["force"]):
            typer.echo(str(path))


def run(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``) and return the exit code
    (usage errors: one line and 2; Ctrl-C: 130)."""
    command = typer.main.get_command(app)
    try:
        return int(command.main(args=argv, prog_name="calaudit", standalone_mode=False))
    except KeyboardInterrupt as exc:
        return interrupted(exc)


def quiet_libraries() -> None:
    """Send libraries' log records and exit-time exceptions nowhere, so stderr holds only
    calaudit's own lines (``CALAUDIT_DEBUG=1`` keeps them)."""
    import logging
    import os

    if os.environ.get("CALAUDIT_DEBUG"):
        return
    logging.getLogger().addHandler(logging.NullHandler())
    sys.unraisablehook = lambda unraisable: None


def main() -> None:
    """Console-script entry point: SIGTERM and SIGHUP end the command as Ctrl-C does
    (its cluster and temporary files are closed and removed), exit code 143."""
    quiet_libraries()
    try:
        with terminate_as_interrupt():
            code = run()
    except KeyboardInterrupt as exc:  # a signal between the command's end and here
        code = interrupted(exc)
    raise SystemExit(code)
