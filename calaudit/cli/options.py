"""Option declarations shared by ``calaudit test`` and ``calaudit metrics``.

Module-level ``Annotated`` aliases keep each command's signature short and every option's
name and help text defined once. Only typer and the standard library are imported here,
so ``--help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from calaudit.limits import COUNTS

DATA = "Data"
BINS = "Estimators"
SQUARED = "Squared calibration errors"
TESTS = "Tests and gate"
LOCAL = "Local calibration (with --covariates)"
OUT = "Outputs"

DataArg = Annotated[str, typer.Argument(
    help="Predictions: a .csv, .tsv (optionally .gz), .parquet or .npz file; a dataset "
    "directory (hive key=value/ directories become columns); a quoted glob such as "
    "'preds/*.parquet'; or a URL (s3://, gs://, abfs://, memory://, file://).",
    show_default=False, metavar="PATH")]
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
LabelsFile = Annotated[Optional[str], typer.Option(
    "--labels", help="Read the labels from this file (or dataset) instead.",
    rich_help_panel=DATA)]
CovariatesFile = Annotated[Optional[str], typer.Option(
    "--covariates-file", help="Read the covariates from this file (or dataset) instead.",
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
Spill = Annotated[Optional[str], typer.Option(
    "--spill", metavar="auto|always|never", help="Keep the loaded columns in memory-mapped "
    "files that the system pages to disk (always), in memory (never), or on disk when they "
    "would take over a quarter of the available memory (auto, the default).",
    rich_help_panel=DATA, show_default=False)]
SpillDir = Annotated[Optional[str], typer.Option(
    "--spill-dir", metavar="DIR", help="Directory of the spill files (default: the system "
    "temporary directory). They are deleted as soon as they are mapped.",
    rich_help_panel=DATA, show_default=False)]
NBins = Annotated[int, typer.Option(
    "--n-bins", min=COUNTS["binning.n_bins"][0],
    max=COUNTS["binning.n_bins"][1],
    help="Bins of the binned estimators (ECE, MCE).", rich_help_panel=BINS)]
Binning = Annotated[str, typer.Option(
    "--binning", help="uniform (equal width) or quantile (equal mass).", rich_help_panel=BINS)]
NResamples = Annotated[int, typer.Option(
    "--n-resamples", min=COUNTS["n_resamples"][0],
    max=COUNTS["n_resamples"][1],
    help="Resamples of the resampling tests and of --ci intervals.",
    rich_help_panel=TESTS)]
Kernel = Annotated[str, typer.Option(
    "--kernel", help="SKCE prediction kernel: exponential (on total variation), gaussian or "
    "laplacian.", rich_help_panel=BINS)]
Bandwidth = Annotated[Optional[float], typer.Option(
    "--bandwidth", help="Distance scale (1/gamma) of the SKCE kernel; "
    "default: median distance over all pairs.", rich_help_panel=BINS, show_default=False)]
Blocksize = Annotated[int, typer.Option(
    "--blocksize", min=COUNTS["skce.blocksize"][0],
    max=COUNTS["skce.blocksize"][1],
    help="Block size of the skce_block estimator.", rich_help_panel=BINS)]
Method = Annotated[str, typer.Option(
    "--method", help="Kernel statistics (SKCE, KLCE): exact (pairwise, O(n^2)), features "
    "(random Fourier features, O(n D), exact-conditional p-values) or auto (features when "
    "the exact path would take longer than exact_budget_seconds).", rich_help_panel=TESTS)]
NFeatures = Annotated[Optional[int], typer.Option(
    "--n-features", min=COUNTS["n_features"][0], max=COUNTS["n_features"][1], help="Random Fourier features D of --method features "
    "(default: the size rule in docs/scale.md).", rich_help_panel=TESTS, show_default=False)]
Ci = Annotated[bool, typer.Option(
    "--ci", help="Bootstrap percentile confidence intervals for every metric.",
    rich_help_panel=TESTS)]
CiLevel = Annotated[float, typer.Option(
    "--ci-level", help="Confidence level of intervals.", rich_help_panel=TESTS)]
HosmerLemeshow = Annotated[bool, typer.Option(
    "--hosmer-lemeshow", help="Also run the Hosmer-Lemeshow test (binary; off by default: "
    "grouping-dependent, low power).", rich_help_panel=TESTS)]
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
    "--seed", min=COUNTS["seed"][0],
    max=COUNTS["seed"][1],
    help="Seed of every random choice; the same seed gives the same numbers.",
    rich_help_panel=TESTS)]
MultipleTesting = Annotated[str, typer.Option(
    "--multiple-testing", help="P-value adjustment: holm, bonferroni, fdr_bh, none.",
    rich_help_panel=TESTS)]
MultipleTestingScope = Annotated[str, typer.Option(
    "--multiple-testing-scope", help="primary: one primary test per question decides (Holm), "
    "the others are diagnostics; battery: every test gates, all adjusted together; family: "
    "every test gates, adjusted per family (gives up the alpha guarantee).",
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
MdOut = Annotated[Optional[str], typer.Option(
    "--md", help="Write a Markdown report here (figures go to <stem>_files/ next to it).",
    rich_help_panel=OUT)]

CONF = "Configuration and terminal"
DASK = "Dask (needs the calaudit\\[dask] extra)"

DaskScheduler = Annotated[Optional[str], typer.Option(
    "--dask", metavar="ADDRESS", help="Run the row reductions on the running Dask cluster "
    "whose scheduler is at ADDRESS (host:port or tcp://host:port). The result is the same "
    "bytes as without Dask.", rich_help_panel=DASK, show_default=False)]
DaskWorkers = Annotated[Optional[int], typer.Option(
    "--workers", min=COUNTS["dask.workers"][0], max=COUNTS["dask.workers"][1],
    help="Start a local Dask cluster of N single-threaded worker processes for the run "
    "(closed at the end).", rich_help_panel=DASK, show_default=False)]
DaskMemoryLimit = Annotated[Optional[str], typer.Option(
    "--memory-limit", help="Memory limit of each --workers process, e.g. 2GB "
    "(default: dask.memory_limit, 2GB).", rich_help_panel=DASK, show_default=False)]
Threads = Annotated[Optional[int], typer.Option(
    "--threads", min=COUNTS["dask.threads"][0], max=COUNTS["dask.threads"][1],
    help="Threads of the row reductions in this process (default: dask.threads, the usable "
    "CPU cores). The result is the same bytes whatever the number.",
    rich_help_panel=DASK, show_default=False)]

ConfigFile = Annotated[Optional[Path], typer.Option(
    "--config", help="Read settings from this TOML file (calaudit.toml layout, or a "
    "pyproject.toml's \\[tool.calaudit]) instead of searching from the working directory "
    "upwards. Also CALAUDIT_CONFIG.", rich_help_panel=CONF, show_default=False)]
Quiet = Annotated[bool, typer.Option(
    "--quiet", "-q", help="Print nothing but errors (outputs are still written).",
    rich_help_panel=CONF)]
Verbose = Annotated[bool, typer.Option(
    "--verbose", "-v", help="Explain each step on stderr (config file, rows, stage timings).",
    rich_help_panel=CONF)]
Color = Annotated[Optional[str], typer.Option(
    "--color", help="Colour on the terminal: auto (NO_COLOR and the terminal decide), always "
    "or never.", rich_help_panel=CONF, show_default=False)]
JunitOut = Annotated[Optional[str], typer.Option(
    "--junit", help="Write JUnit XML here: one testcase per check, for CI test reports.",
    rich_help_panel=OUT)]
BaselineFile = Annotated[Optional[Path], typer.Option(
    "--baseline", help="Compare with this earlier JSON result; regressions fail the gate.",
    rich_help_panel=TESTS)]
RegressionTolerance = Annotated[Optional[float], typer.Option(
    "--regression-tolerance", min=0, help="Allowed worsening of a metric against the "
    "baseline (default 0.01; per metric: \\[thresholds.<id>] tolerance).",
    rich_help_panel=TESTS, show_default=False)]
ShowConfig = Annotated[bool, typer.Option(
    "--show-config", help="Print every resolved setting with its source (flag, CALAUDIT_* "
    "variable, config file, default) and exit without auditing.", rich_help_panel=CONF)]
HtmlOut = Annotated[Optional[str], typer.Option(
    "--html", help="Write a single-file HTML report here (no scripts, nothing fetched).",
    rich_help_panel=OUT)]
SIGNOFF = "Report sign-off"
SignoffName = Annotated[Optional[str], typer.Option(
    "--signoff-name", help="Name in the report's sign-off block (blank line if absent).",
    rich_help_panel=SIGNOFF)]
SignoffRole = Annotated[Optional[str], typer.Option(
    "--signoff-role", help="Role in the report's sign-off block.", rich_help_panel=SIGNOFF)]
SignoffDate = Annotated[Optional[str], typer.Option(
    "--signoff-date", help="Date in the report's sign-off block (free text, e.g. 2026-11-21).",
    rich_help_panel=SIGNOFF)]
SignoffDecision = Annotated[Optional[str], typer.Option(
    "--signoff-decision", help="Decision in the report's sign-off block (free text, e.g. "
    "'approved for release').", rich_help_panel=SIGNOFF)]
PdfOut = Annotated[Optional[str], typer.Option(
    "--pdf", help="Write a PDF of the HTML report here (needs the calaudit[pdf] extra: "
    "WeasyPrint).", rich_help_panel=OUT)]
Explain = Annotated[bool, typer.Option(
    "--explain", help="Add what each metric and test row means to the terminal summary.",
    rich_help_panel=CONF)]
ResultsArg = Annotated[Path, typer.Argument(
    help="A JSON result written by 'calaudit test --json'.", show_default=False)]
ProbBandwidth = Annotated[Optional[float], typer.Option(
    "--prob-bandwidth",
    help="Bandwidth s of the Gaussian kernel on predictions, exp(-|p - q|^2 / (2 s^2)) "
    "(default: median heuristic).", rich_help_panel=LOCAL)]
CovBandwidth = Annotated[Optional[float], typer.Option(
    "--cov-bandwidth",
    help="Bandwidth s of the Gaussian kernel on the encoded covariates (numeric z-scored, "
    "categories at distance 1; default: median heuristic per covariate).",
    rich_help_panel=LOCAL)]
LocalTests = Annotated[str, typer.Option(
    "--local-tests", help="Comma list of local tests: local_consistency (recalibration "
    "scores and KLCE aggregated, labels resampled from the predictions), klce_consistency "
    "(KLCE alone), klce_bootstrap (the paper's Algorithm 1), klce_permutation "
    "(KiTE ELCE2), or 'none'.", rich_help_panel=LOCAL)]
LocalResamples = Annotated[int, typer.Option(
    "--local-resamples", min=COUNTS["local.n_resamples"][0],
    max=COUNTS["local.n_resamples"][1],
    help="Resamples of each local test.", rich_help_panel=LOCAL)]
MinGroupRows = Annotated[int, typer.Option(
    "--min-group-rows", min=COUNTS["local.min_group_rows"][0],
    max=COUNTS["local.min_group_rows"][1],
    help="Groups with fewer rows are INCONCLUSIVE.",
    rich_help_panel=LOCAL)]
MinGroupEvents = Annotated[int, typer.Option(
    "--min-group-events", min=COUNTS["local.min_group_events"][0],
    max=COUNTS["local.min_group_events"][1],
    help="Groups with fewer events or non-events are "
    "INCONCLUSIVE.", rich_help_panel=LOCAL)]
GroupAdjust = Annotated[str, typer.Option(
    "--group-adjust", help="Adjustment of the group tests: holm, fdr_bh, bonferroni, none.",
    rich_help_panel=LOCAL)]
NBands = Annotated[int, typer.Option(
    "--n-bands", min=COUNTS["local.n_bands"][0],
    max=COUNTS["local.n_bands"][1],
    help="Quantile bands of each numeric covariate in the group table.",
    rich_help_panel=LOCAL)]
TopK = Annotated[int, typer.Option(
    "--top-k", min=COUNTS["local.top_k"][0],
    max=COUNTS["local.top_k"][1],
    help="Number of most biased groups listed.", rich_help_panel=LOCAL)]
KiteWidth = Annotated[float, typer.Option(
    "--kite-width", help="klce_permutation: KiTE prob_kernel_width w, "
    "k = exp(-(p - q)^2 / w^2).", rich_help_panel=LOCAL)]
KiteGamma = Annotated[Optional[float], typer.Option(
    "--kite-gamma", help="klce_permutation: KiTE covariate RBF gamma "
    "on raw covariates (default: 1 / number of encoded columns).", rich_help_panel=LOCAL)]
