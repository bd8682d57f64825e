"""``calaudit``: the Typer application.

Commands are thin: they turn options into a :class:`DataOptions`, an ``AuditConfig`` and
:class:`OutputOptions`, and call :func:`calaudit.cli.audit_command.run` inside the error
boundary. Only typer and the standard library load at start-up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from calaudit._version import __version__
from calaudit.cli import options as opt
from calaudit.cli.errors import error_boundary

app = typer.Typer(
    name="calaudit",
    help="Audit whether a classifier's predicted probabilities can be trusted.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)


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


def _audit(metrics_only: bool, data_opts: dict, config_opts: dict, out_opts: dict) -> None:
    with error_boundary():
        from calaudit.audit.config import AuditConfig, BinningConfig, SquaredConfig
        from calaudit.cli.audit_command import DataOptions, OutputOptions, run
        from calaudit.data.columns import split_list

        binning = BinningConfig(config_opts.pop("n_bins"), config_opts.pop("binning"))
        squared = SquaredConfig.from_options(config_opts.pop("squared"),
                                             config_opts.pop("squared_estimators"))
        fail_on = tuple(s.upper() for s in split_list(config_opts.pop("fail_on")))
        config = AuditConfig(binning=binning, squared=squared, fail_on=fail_on,
                             run_tests=not metrics_only, **config_opts)
        code = run(DataOptions(**data_opts), config, OutputOptions(**out_opts))
    raise typer.Exit(int(code))


@app.command()
def test(
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
    n_bins: opt.NBins = 15,
    binning: opt.Binning = "uniform",
    squared: opt.Squared = None,
    squared_estimators: opt.SquaredEstimators = None,
    alpha: opt.Alpha = 0.05,
    seed: opt.Seed = 0,
    multiple_testing: opt.MultipleTesting = "holm",
    fail_on: opt.FailOn = "FAIL,ERROR",
    exit_zero: opt.ExitZero = False,
    json: opt.JsonOut = None,
    md: opt.MdOut = None,
) -> None:
    """Run the full audit: calibration errors and tests; the exit code is the gate.

    Example: calaudit test preds.parquet --covariates age,race --json result.json
    """
    _audit(
        False,
        dict(path=data, label_col=label_col, prob_cols=prob_cols, logit_cols=logit_cols,
             id_col=id_col, labels=labels, covariates_file=covariates_file,
             covariates=covariates, categorical=categorical, positive_label=positive_label,
             renormalize=renormalize, drop_invalid=drop_invalid),
        dict(n_bins=n_bins, binning=binning, squared=squared,
             squared_estimators=squared_estimators, alpha=alpha, seed=seed,
             multiple_testing=multiple_testing, fail_on=fail_on),
        dict(json=json, md=md, exit_zero=exit_zero),
    )


@app.command()
def metrics(
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
    n_bins: opt.NBins = 15,
    binning: opt.Binning = "uniform",
    squared: opt.Squared = None,
    squared_estimators: opt.SquaredEstimators = None,
    seed: opt.Seed = 0,
    json: opt.JsonOut = None,
    md: opt.MdOut = None,
) -> None:
    """Estimates only (no resampling): fast, for dashboards and large files.

    Example: calaudit metrics preds.csv --json -
    """
    _audit(
        True,
        dict(path=data, label_col=label_col, prob_cols=prob_cols, logit_cols=logit_cols,
             id_col=id_col, labels=labels, covariates_file=covariates_file,
             covariates=covariates, categorical=categorical, positive_label=positive_label,
             renormalize=renormalize, drop_invalid=drop_invalid),
        dict(n_bins=n_bins, binning=binning, squared=squared,
             squared_estimators=squared_estimators, seed=seed, multiple_testing="holm",
             fail_on="FAIL,ERROR"),
        dict(json=json, md=md, exit_zero=False),
    )


@app.command("sample-data")
def sample_data(
    directory: Annotated[Path, typer.Argument(help="Directory to write the datasets to.")],
) -> None:
    """Write the bundled example datasets (credit_default in CSV/Parquet/NPZ,
    image_classifier.npz, README.md) to DIRECTORY.

    Example: calaudit sample-data demo && calaudit test demo/credit_default.csv --covariates age,race
    """
    with error_boundary():
        from calaudit.sample import write_sample_data

        for path in write_sample_data(directory):
            typer.echo(str(path))


def main() -> None:
    """Console-script entry point."""
    app()
