"""``calaudit``: the Typer application.

Commands are thin: they declare options and call a function of ``audit_command``,
``compare_command`` or ``config_command`` inside the error boundary. Settings options are
resolved together with the config file and ``CALAUDIT_*`` variables (only the options the
user gave override them; see ``settings_flags``). Only typer and the standard library load
at start-up.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from typer import Abort

try:
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover - typer versions that depend on click
    from click.exceptions import ClickException

from calaudit._version import __version__
from calaudit.cli import options as opt
from calaudit.cli.errors import error_boundary, print_error, usage_message


class OneLineErrors(TyperGroup):
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
    except (Abort, KeyboardInterrupt):
        print_error("interrupted")
        return 130
    code = value if isinstance(value, int) and not isinstance(value, bool) else 0
    if code == 130 and errors.printed[0] == before:
        print_error("interrupted")
    return code


app = typer.Typer(
    cls=OneLineErrors,
    name="calaudit",
    help="Audit whether a classifier's predicted probabilities can be trusted.\n\n"
         "Exit codes: 0 no check in fail-on; 1 a check in fail-on (or a regression); "
         "2 usage, config or input error; 3 internal error; 130 interrupted.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)
config_app = typer.Typer(
    name="config", no_args_is_help=True,
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


def _signoff(name: str | None, role: str | None, date: str | None,
             decision: str | None = None) -> tuple[tuple[str, str], ...]:
    """The sign-off fields that were given, as ``(field, text)`` pairs."""
    fields = (("name", name), ("role", role), ("date", date), ("decision", decision))
    return tuple((key, value) for key, value in fields if value)


def _audit(ctx: typer.Context, metrics_only: bool) -> None:
    with error_boundary():
        from calaudit.cli.audit_command import run_command

        code = run_command(ctx, metrics_only=metrics_only)
    raise typer.Exit(int(code))


@app.command()
def test(
    ctx: typer.Context,
    data: opt.DataArg,
    label_col: opt.LabelCol = None,
    prob_cols: opt.ProbCols = None,
    logit_cols: opt.LogitCols = None,
    id_col: opt.IdCol = None,
    labels: opt.LabelsFile = None,
    covariates_file: opt.CovariatesFile = None,
    covariates: opt.Covariates = None,
    categorical: opt.Categorical = None,
    positive_label: opt.PositiveLabel = None,
    renormalize: opt.Renormalize = False,
    drop_invalid: opt.DropInvalid = False,
    spill: opt.Spill = None,
    spill_dir: opt.SpillDir = None,
    n_bins: opt.NBins = 15,
    binning: opt.Binning = "uniform",
    kernel: opt.Kernel = "exponential",
    bandwidth: opt.Bandwidth = None,
    blocksize: opt.Blocksize = 10,
    squared: opt.Squared = None,
    squared_estimators: opt.SquaredEstimators = None,
    alpha: opt.Alpha = 0.05,
    seed: opt.Seed = 0,
    n_resamples: opt.NResamples = 1000,
    method: opt.Method = "auto",
    n_features: opt.NFeatures = None,
    ci: opt.Ci = False,
    ci_level: opt.CiLevel = 0.95,
    hosmer_lemeshow: opt.HosmerLemeshow = False,
    multiple_testing: opt.MultipleTesting = "holm",
    multiple_testing_scope: opt.MultipleTestingScope = "primary",
    fail_on: opt.FailOn = "FAIL,ERROR",
    exit_zero: opt.ExitZero = False,
    baseline: opt.BaselineFile = None,
    regression_tolerance: opt.RegressionTolerance = None,
    prob_bandwidth: opt.ProbBandwidth = None,
    cov_bandwidth: opt.CovBandwidth = None,
    local_tests: opt.LocalTests = "local_consistency",
    local_resamples: opt.LocalResamples = 500,
    min_group_rows: opt.MinGroupRows = 30,
    min_group_events: opt.MinGroupEvents = 5,
    group_adjust: opt.GroupAdjust = "holm",
    n_bands: opt.NBands = 4,
    top_k: opt.TopK = 5,
    kite_width: opt.KiteWidth = 0.1,
    kite_gamma: opt.KiteGamma = None,
    dask: opt.DaskScheduler = None,
    workers: opt.DaskWorkers = None,
    memory_limit: opt.DaskMemoryLimit = None,
    threads: opt.Threads = None,
    json: opt.JsonOut = None,
    md: opt.MdOut = None,
    html: opt.HtmlOut = None,
    pdf: opt.PdfOut = None,
    signoff_name: opt.SignoffName = None,
    signoff_role: opt.SignoffRole = None,
    signoff_date: opt.SignoffDate = None,
    signoff_decision: opt.SignoffDecision = None,
    junit: opt.JunitOut = None,
    config: opt.ConfigFile = None,
    quiet: opt.Quiet = False,
    verbose: opt.Verbose = False,
    explain: opt.Explain = False,
    color: opt.Color = None,
    show_config: opt.ShowConfig = False,
) -> None:
    """Run the full audit: calibration errors and tests; the exit code is the gate.

    Settings come from flags, then CALAUDIT_* variables, then calaudit.toml (or
    \\[tool.calaudit] in pyproject.toml), then defaults.

    Example: calaudit test preds.parquet --covariates age,race --html audit.html --junit junit.xml
    """
    _audit(ctx, metrics_only=False)


@app.command()
def metrics(
    ctx: typer.Context,
    data: opt.DataArg,
    label_col: opt.LabelCol = None,
    prob_cols: opt.ProbCols = None,
    logit_cols: opt.LogitCols = None,
    id_col: opt.IdCol = None,
    labels: opt.LabelsFile = None,
    covariates_file: opt.CovariatesFile = None,
    covariates: opt.Covariates = None,
    categorical: opt.Categorical = None,
    positive_label: opt.PositiveLabel = None,
    renormalize: opt.Renormalize = False,
    drop_invalid: opt.DropInvalid = False,
    spill: opt.Spill = None,
    spill_dir: opt.SpillDir = None,
    n_bins: opt.NBins = 15,
    binning: opt.Binning = "uniform",
    kernel: opt.Kernel = "exponential",
    bandwidth: opt.Bandwidth = None,
    blocksize: opt.Blocksize = 10,
    squared: opt.Squared = None,
    squared_estimators: opt.SquaredEstimators = None,
    seed: opt.Seed = 0,
    method: opt.Method = "auto",
    n_features: opt.NFeatures = None,
    fail_on: opt.FailOn = "FAIL,ERROR",
    exit_zero: opt.ExitZero = False,
    baseline: opt.BaselineFile = None,
    regression_tolerance: opt.RegressionTolerance = None,
    prob_bandwidth: opt.ProbBandwidth = None,
    cov_bandwidth: opt.CovBandwidth = None,
    min_group_rows: opt.MinGroupRows = 30,
    min_group_events: opt.MinGroupEvents = 5,
    n_bands: opt.NBands = 4,
    top_k: opt.TopK = 5,
    json: opt.JsonOut = None,
    md: opt.MdOut = None,
    html: opt.HtmlOut = None,
    pdf: opt.PdfOut = None,
    signoff_name: opt.SignoffName = None,
    signoff_role: opt.SignoffRole = None,
    signoff_date: opt.SignoffDate = None,
    signoff_decision: opt.SignoffDecision = None,
    junit: opt.JunitOut = None,
    config: opt.ConfigFile = None,
    quiet: opt.Quiet = False,
    verbose: opt.Verbose = False,
    explain: opt.Explain = False,
    color: opt.Color = None,
    show_config: opt.ShowConfig = False,
) -> None:
    """Estimates only (no resampling): fast, for dashboards and large files.

    Thresholds and baselines still gate.

    Example: calaudit metrics preds.csv --json -
    """
    _audit(ctx, metrics_only=True)


@app.command()
def compare(
    ctx: typer.Context,
    old: Annotated[Path, typer.Argument(help="Baseline JSON result (the released model).",
                                        show_default=False)],
    new: Annotated[Path, typer.Argument(help="New JSON result (the candidate).",
                                        show_default=False)],
    regression_tolerance: opt.RegressionTolerance = None,
    fail_on: opt.FailOn = "FAIL,ERROR",
    exit_zero: opt.ExitZero = False,
    json: opt.JsonOut = None,
    junit: opt.JunitOut = None,
    config: opt.ConfigFile = None,
    quiet: opt.Quiet = False,
    color: opt.Color = None,
) -> None:
    """Compare two JSON results and fail on regressions.

    Shows per-metric deltas; a metric worse than the tolerance or a check that newly fails
    is a regression (exit code 1).

    Example: calaudit compare released.json candidate.json --regression-tolerance 0.005
    """
    with error_boundary():
        from calaudit.cli.compare_command import run_compare

        code = run_compare(ctx)
    raise typer.Exit(int(code))


@config_app.command("show")
def config_show(
    ctx: typer.Context,
    config: opt.ConfigFile = None,
    show_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Print every resolved setting and where it came from.

    Sources: default, the config file, a CALAUDIT_* variable.

    Example: CALAUDIT_ALPHA=0.01 calaudit config show
    """
    with error_boundary():
        from calaudit.cli.config_command import show

        show(ctx, as_json=show_json)


@config_app.command("init")
def config_init(
    path: Annotated[Path, typer.Argument(help="File to write ('-' for stdout).")] = Path(
        "calaudit.toml"),
    pyproject: Annotated[bool, typer.Option(
        "--pyproject", help="Write a \\[tool.calaudit] table to paste into pyproject.toml.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a configuration template: every setting commented out at its default.

    Example: calaudit config init && calaudit config show
    """
    with error_boundary():
        from calaudit.cli.config_command import init

        init(path, pyproject=pyproject, force=force)


@app.command()
def report(
    results: opt.ResultsArg,
    html: opt.HtmlOut = None,
    md: opt.MdOut = None,
    pdf: opt.PdfOut = None,
    signoff_name: opt.SignoffName = None,
    signoff_role: opt.SignoffRole = None,
    signoff_date: opt.SignoffDate = None,
    signoff_decision: opt.SignoffDecision = None,
) -> None:
    """Re-render the HTML and/or Markdown report from a saved JSON result, without
    recomputing anything.

    Example: calaudit report result.json --html audit.html --signoff-name "A. Auditor"
    """
    with error_boundary():
        from calaudit.cli.report_command import run as run_report

        run_report(results, html, md, dict(_signoff(signoff_name, signoff_role,
                                                     signoff_date, signoff_decision)),
                   pdf=pdf)


@app.command("sample-data")
def sample_data(
    directory: Annotated[Path, typer.Argument(help="Directory to write the datasets to.")],
) -> None:
    """Write the bundled example datasets to DIRECTORY.

    credit_default in CSV/Parquet/NPZ, image_classifier.npz and a README.md.

    Example: calaudit sample-data demo && calaudit test demo/credit_default.csv
    --covariates age,race
    """
    with error_boundary():
        from calaudit.sample import write_sample_data

        for path in write_sample_data(directory):
            typer.echo(str(path))


def run(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``) and return the exit
    code instead of exiting: usage errors are one line and 2, Ctrl-C anywhere is 130
    (inside a command the error boundary already maps it)."""
    command = typer.main.get_command(app)
    try:
        return int(command.main(args=argv, prog_name="calaudit", standalone_mode=False))
    except KeyboardInterrupt:
        print_error("interrupted")
        return 130


def main() -> None:
    """Console-script entry point."""
    raise SystemExit(run())
