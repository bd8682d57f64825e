"""Option declarations shared by ``calaudit test`` and ``calaudit metrics``.

Module-level ``Annotated`` aliases keep each command's signature short and every option's
name and help text defined once. Only typer and the standard library are imported here,
so ``--help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

DATA = "Data"
BINS = "Estimators"
SQUARED = "Squared calibration errors"
TESTS = "Tests and gate"
OUT = "Outputs"

DataArg = Annotated[Path, typer.Argument(
    help="Predictions file: .csv, .tsv (optionally .gz), .parquet or .npz.",
    show_default=False)]
LabelCol = Annotated[Optional[str], typer.Option(
    "--label-col", help="Label column (default: autodetect label, y, target, ...).",
    rich_help_panel=DATA)]
ProbCols = Annotated[Optional[str], typer.Option(
    "--prob-cols", help="Probability column(s): one column (binary), a glob such as 'p_*' "
    "or a comma list (multi-class; class names from the suffixes).", rich_help_panel=DATA)]
LogitCols = Annotated[Optional[str], typer.Option(
    "--logit-cols", help="Logit column(s), turned into probabilities by a softmax "
    "(one column: a sigmoid).", rich_help_panel=DATA)]
IdCol = Annotated[Optional[str], typer.Option(
    "--id-col", help="Row id column used to join --labels / --covariates-file.",
    rich_help_panel=DATA)]
LabelsFile = Annotated[Optional[Path], typer.Option(
    "--labels", help="Read the labels from this file instead.", rich_help_panel=DATA)]
CovariatesFile = Annotated[Optional[Path], typer.Option(
    "--covariates-file", help="Read the covariates from this file instead.",
    rich_help_panel=DATA)]
Covariates = Annotated[Optional[str], typer.Option(
    "--covariates", help="Comma list of covariate columns, e.g. age,race.",
    rich_help_panel=DATA)]
Categorical = Annotated[Optional[str], typer.Option(
    "--categorical", help="Comma list of integer-coded covariates to treat as categories.",
    rich_help_panel=DATA)]
PositiveLabel = Annotated[Optional[str], typer.Option(
    "--positive-label", help="The label of the positive class when one probability column "
    "is given and labels are strings.", rich_help_panel=DATA)]
Renormalize = Annotated[bool, typer.Option(
    "--renormalize", help="Rescale multi-class rows that do not sum to 1.",
    rich_help_panel=DATA)]
DropInvalid = Annotated[bool, typer.Option(
    "--drop-invalid", help="Drop invalid rows (counted by reason) instead of stopping.",
    rich_help_panel=DATA)]
NBins = Annotated[int, typer.Option(
    "--n-bins", min=1, help="Bins of the binned estimators (ECE, MCE).", rich_help_panel=BINS)]
Binning = Annotated[str, typer.Option(
    "--binning", help="uniform (equal width) or quantile (equal mass).", rich_help_panel=BINS)]
Squared = Annotated[Optional[str], typer.Option(
    "--squared", help="Squared calibration errors with the estimator chosen by cross-validated "
    "risk (Gruber & Bach): comma list of tce2, cwce2, cce2, or 'all'. Off by default (about "
    "a minute of CPU for cce2 at 10,000 rows).", rich_help_panel=SQUARED)]
SquaredEstimators = Annotated[Optional[str], typer.Option(
    "--squared-estimators", help="Estimators compared by their cross-validated risk: comma "
    "list of bin, kde, kkr, ukkr (default: all); alone it means --squared all.",
    rich_help_panel=SQUARED)]
Alpha = Annotated[float, typer.Option(
    "--alpha", help="Level of every test, after adjustment.", rich_help_panel=TESTS)]
Seed = Annotated[int, typer.Option(
    "--seed", min=0, help="Seed of every random choice; the same seed gives the same numbers.",
    rich_help_panel=TESTS)]
MultipleTesting = Annotated[str, typer.Option(
    "--multiple-testing", help="Adjustment across the battery: holm, bonferroni, fdr_bh, none.",
    rich_help_panel=TESTS)]
FailOn = Annotated[str, typer.Option(
    "--fail-on", help="Comma list of statuses that fail the gate (exit code 1).",
    rich_help_panel=TESTS)]
ExitZero = Annotated[bool, typer.Option(
    "--exit-zero", help="Report without gating: exit 0 whatever the statuses.",
    rich_help_panel=TESTS)]
JsonOut = Annotated[Optional[str], typer.Option(
    "--json", help="Write the JSON result here ('-' for stdout, which then carries only JSON).",
    rich_help_panel=OUT)]
MdOut = Annotated[Optional[Path], typer.Option(
    "--md", help="Write a Markdown report here.", rich_help_panel=OUT)]
