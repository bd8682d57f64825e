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


def _local_config(local_opts: dict):
    """``LocalConfig`` from the local-calibration options (``--local-tests`` is a list)."""
    from calaudit.audit.config import LocalConfig
    from calaudit.data.columns import split_list

    opts = dict(local_opts)
    if "tests" in opts:
        names = split_list(opts["tests"])
        opts["tests"] = () if [n.lower() for n in names] == ["none"] else tuple(names)
    return LocalConfig(**opts)


def _audit(metrics_only: bool, data_opts: dict, config_opts: dict, out_opts: dict,
           local_opts: dict | None = None) -> None:
    with error_boundary():
        from calaudit.audit.config import AuditConfig, BinningConfig
        from calaudit.cli.audit_command import DataOptions, OutputOptions, run
        from calaudit.data.columns import split_list

        binning = BinningConfig(config_opts.pop("n_bins"), config_opts.pop("binning"))
        fail_on = tuple(s.upper() for s in split_list(config_opts.pop("fail_on")))
        config = AuditConfig(binning=binning, fail_on=fail_on, run_tests=not metrics_only,
                             local=_local_config(local_opts or {}), **config_opts)
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
    alpha: opt.Alpha = 0.05,
    seed: opt.Seed = 0,
    multiple_testing: opt.MultipleTesting = "holm",
    fail_on: opt.FailOn = "FAIL,ERROR",
    exit_zero: opt.ExitZero = False,
    prob_bandwidth: opt.ProbBandwidth = None,
    cov_bandwidth: opt.CovBandwidth = None,
    local_tests: opt.LocalTests = "klce_consistency",
    local_resamples: opt.LocalResamples = 500,
    min_group_rows: opt.MinGroupRows = 30,
    min_group_events: opt.MinGroupEvents = 5,
    group_adjust: opt.GroupAdjust = "holm",
    n_bands: opt.NBands = 4,
    top_k: opt.TopK = 5,
    kite_width: opt.KiteWidth = 0.1,
    kite_gamma: opt.KiteGamma = None,
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
        dict(n_bins=n_bins, binning=binning, alpha=alpha, seed=seed,
             multiple_testing=multiple_testing, fail_on=fail_on),
        dict(json=json, md=md, exit_zero=exit_zero),
        dict(prob_bandwidth=prob_bandwidth, cov_bandwidth=cov_bandwidth, tests=local_tests,
             n_resamples=local_resamples, min_group_rows=min_group_rows,
             min_group_events=min_group_events, group_adjust=group_adjust, n_bands=n_bands,
             top_k=top_k, kite_prob_kernel_width=kite_width, kite_cov_gamma=kite_gamma),
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
    seed: opt.Seed = 0,
    prob_bandwidth: opt.ProbBandwidth = None,
    cov_bandwidth: opt.CovBandwidth = None,
    min_group_rows: opt.MinGroupRows = 30,
    min_group_events: opt.MinGroupEvents = 5,
    n_bands: opt.NBands = 4,
    top_k: opt.TopK = 5,
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
        dict(n_bins=n_bins, binning=binning, seed=seed, multiple_testing="holm",
             fail_on="FAIL,ERROR"),
        dict(json=json, md=md, exit_zero=False),
        dict(prob_bandwidth=prob_bandwidth, cov_bandwidth=cov_bandwidth,
             min_group_rows=min_group_rows, min_group_events=min_group_events,
             n_bands=n_bands, top_k=top_k),
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
