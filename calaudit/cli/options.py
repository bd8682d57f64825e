"""Every command-line option, declared once: its flags, help line, help panel and the
setting it sets (``setting="binning.n_bins"``; ``None``: it steers the command).

Commands take tuples of flag names through :func:`takes`, which writes their signature:
:data:`AUDIT` is shared by ``test`` and ``metrics``, :data:`TEST` adds the tests'
options. Only typer and the standard library are imported here."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from calaudit.limits import COUNTS

DATA = "Data"
GATE = "Tests and gate"
OUT = "Outputs"
LOCAL = "Local calibration (with --covariates)"
TIME = "Calibration over time"
BINS = "Estimators"
LARGE = "Large data"
DASK = "Dask (the calaudit[dask] extra)"
OTHER = "Options"
SIGNOFF = "Report sign-off"
CONF = "Terminal and configuration"


@dataclass(frozen=True)
class Flag:
    """One option: its ``decls``, plain-text ``help``, help ``panel``, the dotted ``setting`` it
    sets (``None``: it steers the command), the value ``kind``, the ``default`` shown by
    ``--help`` (a test keeps it equal to the setting's), ``metavar`` and its range (the
    ``COUNTS`` key, or the ``minimum`` of a real value)."""

    name: str
    decls: tuple[str, ...]
    help: str
    panel: str
    setting: str | None = None
    kind: type = str
    default: Any = None
    metavar: str | None = None
    counts: str | None = None
    minimum: float | None = None

    @property
    def is_flag(self) -> bool:
        return self.kind is bool

    def parameter(self) -> inspect.Parameter:
        """The keyword parameter typer reads (``Annotated[type, typer.Option(...)]``)."""
        low, high = COUNTS[self.counts] if self.counts else (self.minimum, None)
        option = typer.Option(*self.decls, help=self.help, rich_help_panel=self.panel,
                              metavar=None if self.is_flag else self.metavar,
                              min=low, max=high,
                              show_default=self.default is not None
                              and self.default is not False)
        kind = self.kind if self.default is not None else Optional[self.kind]
        return inspect.Parameter(self.name, inspect.Parameter.KEYWORD_ONLY,
                                 default=self.default, annotation=Annotated[kind, option])


FLAGS = {f.name: f for f in (
    # Data
    Flag("label_col", ("--label-col",), "Label column (default: found by name: label, y, "
         "target, ...).", DATA, "data.label_col", metavar="COL"),
    Flag("prob_cols", ("--prob-cols",), "Probability column(s): one, a glob ('p_*') or a "
         "comma list.", DATA, "data.prob_cols", metavar="COLS"),
    Flag("logit_cols", ("--logit-cols",), "Logit column(s), made probabilities by a softmax "
         "(one: sigmoid).", DATA, "data.logit_cols", metavar="COLS"),
    Flag("id_col", ("--id-col",), "Row id column that joins --labels and --covariates-file.",
         DATA, "data.id_col", metavar="COL"),
    Flag("labels", ("--labels",), "Read the labels from this file (or dataset).", DATA,
         "data.labels", metavar="FILE"),
    Flag("covariates_file", ("--covariates-file",), "Read the covariates from this file (or "
         "dataset).", DATA, "data.covariates_file", metavar="FILE"),
    Flag("covariates", ("--covariates",), "Covariates for local calibration and groups, e.g. "
         "age,race.", DATA, "data.covariates", metavar="COLS"),
    Flag("categorical", ("--categorical",), "Integer-coded covariates to treat as categories.",
         DATA, "data.categorical", metavar="COLS"),
    Flag("positive_label", ("--positive-label",), "The positive class when a binary model's "
         "labels are strings.", DATA, "data.positive_label", metavar="LABEL"),
    Flag("renormalize", ("--renormalize",), "Rescale multi-class rows that do not sum to 1.",
         DATA, "data.renormalize", bool, False),
    Flag("drop_invalid", ("--drop-invalid",), "Drop invalid rows (counted by reason) instead "
         "of stopping.", DATA, "data.drop_invalid", bool, False),
    Flag("weight_col", ("--weight-col",), "Row weight column (NPZ: the member 'weights'); "
         "see docs/weights.md.", DATA, "data.weight_col", metavar="COL"),
    Flag("weight_kind", ("--weight-kind",), "What the weights mean: frequency (a row stands "
         "for w units) or design (survey/importance).", DATA, "data.weight_kind",
         default="frequency", metavar="KIND"),
    Flag("negative_rate", ("--negative-rate",), "Negatives were kept at this rate (0 < r <= "
         "1): weighted back by 1/r, tests redraw the sampled law.", DATA,
         "data.negative_rate", float, metavar="R"),
    Flag("sampling_rate_col", ("--sampling-rate-col",), "Column of the rate at which each "
         "row's negatives were kept (as --negative-rate, per row).", DATA,
         "data.sampling_rate_col", metavar="COL"),
    # Tests and gate
    Flag("alpha", ("--alpha",), "Level of every test, after adjustment.", GATE, "alpha",
         float, 0.05, "X"),
    Flag("seed", ("--seed",), "Seed of every random draw.", GATE, "seed", int, 0, "N", "seed"),
    Flag("n_resamples", ("--n-resamples",), "Resamples of each resampling test and of --ci.",
         GATE, "n_resamples", int, 1000, "N", "n_resamples"),
    Flag("fail_on", ("--fail-on",), "Statuses that fail the gate (exit code 1).", GATE,
         "fail_on", str, "FAIL,ERROR", "LIST"),
    Flag("exit_zero", ("--exit-zero",), "Report without gating: exit 0 whatever the statuses.",
         GATE, "exit_zero", bool, False),
    Flag("baseline", ("--baseline",), "Compare with an earlier JSON result; regressions fail "
         "the gate.", GATE, "baseline.path", Path, metavar="FILE"),
    Flag("regression_tolerance", ("--regression-tolerance",), "Allowed worsening against the "
         "baseline (default 0.01).", GATE,
         "baseline.tolerance", float, metavar="X", minimum=0.0),
    Flag("multiple_testing", ("--multiple-testing",), "Adjustment: holm, bonferroni, fdr_bh or "
         "none.", GATE, "multiple_testing", str, "holm", "METHOD"),
    Flag("multiple_testing_scope", ("--multiple-testing-scope",), "Tests that decide: primary, "
         "battery, family.", GATE, "multiple_testing_scope", str,
         "primary", "SCOPE"),
    Flag("ci", ("--ci",), "Bootstrap percentile confidence intervals for every metric.", GATE,
         "ci", bool, False),
    Flag("ci_level", ("--ci-level",), "Confidence level of intervals.", GATE, "ci_level",
         float, 0.95, "X"),
    Flag("hosmer_lemeshow", ("--hosmer-lemeshow",), "Also run the Hosmer-Lemeshow test "
         "(binary; low power).", GATE,
         "global_tests.hosmer_lemeshow", bool, False),
    # Outputs
    Flag("json", ("--json",), "Write the JSON result ('-': stdout, then nothing else "
         "there).", OUT, "outputs.json", metavar="PATH"),
    Flag("html", ("--html",), "Write a single-file HTML report (no scripts, nothing fetched).",
         OUT, "outputs.html", metavar="PATH"),
    Flag("pdf", ("--pdf",), "Write the report as PDF (needs the calaudit[pdf] "
         "extra).", OUT, "outputs.pdf", metavar="PATH"),
    Flag("pdf_appendix", ("--pdf-appendix",), "Add the appendix to the PDF (methods, "
         "all groups, nulls).", OUT, "outputs.pdf_appendix", bool,
         False),
    Flag("md", ("--md",), "Write a Markdown report (figures in <stem>_files/).",
         OUT, "outputs.md", metavar="PATH"),
    Flag("junit", ("--junit",), "Write JUnit XML: one testcase per check.",
         OUT, "outputs.junit", metavar="PATH"),
    # Calibration over time
    Flag("time_col", ("--time-col",), "Column of the rows' times: windows in time order.",
         TIME, "monitoring.time_col", metavar="COL"),
    Flag("window", ("--window",), "Window rule: 1M, 7D, 1D, 12H, W, Q, Y, or a row count "
         "(5000).", TIME, "monitoring.window", metavar="RULE"),
    Flag("batch_col", ("--batch-col",), "Categorical column naming each row's batch: one "
         "window per batch.", TIME, "monitoring.batch_col", metavar="COL"),
    Flag("window_battery", ("--window-battery",), "Also run the battery on each window "
         "(diagnostics; slower).", TIME, "monitoring.window_battery", bool, False),
    Flag("save_state", ("--save-state",), "Write the monitoring state that calaudit monitor "
         "continues.", TIME, "outputs.state", metavar="PATH"),
    # Local calibration
    Flag("local_tests", ("--local-tests",), "Comma list of local tests, or none.",
         LOCAL, "local.tests", str, "local_consistency", "LIST"),
    Flag("local_resamples", ("--local-resamples",), "Resamples of each local test.", LOCAL,
         "local.n_resamples", int, 500, "N", "local.n_resamples"),
    Flag("prob_bandwidth", ("--prob-bandwidth",), "Kernel bandwidth on the predictions "
         "(default: median heuristic).", LOCAL, "local.prob_bandwidth", float,
         metavar="S"),
    Flag("cov_bandwidth", ("--cov-bandwidth",), "Kernel bandwidth on the covariates "
         "(default: median heuristic).", LOCAL, "local.cov_bandwidth", float,
         metavar="S"),
    Flag("min_group_rows", ("--min-group-rows",), "Groups with fewer rows are INCONCLUSIVE.",
         LOCAL, "local.min_group_rows", int, 30, "N", "local.min_group_rows"),
    Flag("min_group_events", ("--min-group-events",), "Groups with fewer (non-)events are "
         "INCONCLUSIVE.", LOCAL, "local.min_group_events", int, 5, "N",
         "local.min_group_events"),
    Flag("group_adjust", ("--group-adjust",), "Adjustment of the group tests.",
         LOCAL, "local.group_adjust", str, "holm", "METHOD"),
    Flag("n_bands", ("--n-bands",), "Quantile bands of a numeric covariate in the groups.",
         LOCAL, "local.n_bands", int, 4, "N", "local.n_bands"),
    Flag("top_k", ("--top-k",), "Groups listed first, by strength of evidence.",
         LOCAL, "local.top_k", int, 5, "N", "local.top_k"),
    Flag("kite_width", ("--kite-width",), "klce_permutation: KiTE prob_kernel_width.",
         LOCAL, "local.kite_prob_kernel_width", float, 0.1, "W"),
    Flag("kite_gamma", ("--kite-gamma",), "klce_permutation: KiTE covariate gamma "
         "(default: 1/columns).", LOCAL, "local.kite_cov_gamma", float,
         metavar="G"),
    # Estimators
    Flag("n_bins", ("--n-bins",), "Bins of the binned estimators: ECE, MCE.", BINS,
         "binning.n_bins", int, 15, "N", "binning.n_bins"),
    Flag("binning", ("--binning",), "uniform (equal width) or quantile bins.",
         BINS, "binning.strategy", str, "uniform", "KIND"),
    Flag("kernel", ("--kernel",), "SKCE kernel: also gaussian or laplacian.",
         BINS, "skce.kernel", str, "exponential", "NAME"),
    Flag("bandwidth", ("--bandwidth",), "SKCE kernel scale (default: median distance of "
         "all pairs).", BINS, "skce.bandwidth", float, metavar="X"),
    Flag("blocksize", ("--blocksize",), "Block size of the skce_block estimator.", BINS,
         "skce.blocksize", int, 10, "N", "skce.blocksize"),
    Flag("squared", ("--squared",), "Squared errors: tce2, cwce2, cce2 or all (slow; "
         "off by default).", BINS, "squared.enabled",
         metavar="LIST"),
    Flag("squared_estimators", ("--squared-estimators",), "Their estimators: bin, kde, kkr, "
         "ukkr (default all).", BINS,
         "squared.estimators", metavar="LIST"),
    # Large data and Dask
    Flag("method", ("--method",), "Kernel tests: exact, features (Fourier) or auto.",
         LARGE, "method", str, "auto", "NAME"),
    Flag("n_features", ("--n-features",), "Random Fourier features of --method features.",
         LARGE, "n_features", int, metavar="D",
         counts="n_features"),
    Flag("spill", ("--spill",), "Columns in memory-mapped files: always, never "
         "or auto (default).", LARGE, "data.spill", metavar="MODE"),
    Flag("spill_dir", ("--spill-dir",), "Directory of the spill files (default: temp).",
         LARGE, "data.spill_dir", metavar="DIR"),
    Flag("dask", ("--dask",), "Run the row reductions on this Dask scheduler.",
         DASK, "dask.scheduler", metavar="ADDRESS"),
    Flag("workers", ("--workers",), "Start a local Dask cluster of N worker processes.",
         DASK, "dask.workers", int, metavar="N", counts="dask.workers"),
    Flag("memory_limit", ("--memory-limit",), "Memory limit of each --workers process "
         "(default 2GB).", DASK, "dask.memory_limit", metavar="SIZE"),
    Flag("threads", ("--threads",), "Threads of the row reductions (default: the CPU "
         "cores).", DASK, "dask.threads", int, metavar="N",
         counts="dask.threads"),
    # Report sign-off
    Flag("signoff_name", ("--signoff-name",), "Name in the report's sign-off block (blank "
         "if absent).", SIGNOFF, "outputs.signoff_name", metavar="TEXT"),
    Flag("signoff_role", ("--signoff-role",), "Role in the report's sign-off block.", SIGNOFF,
         "outputs.signoff_role", metavar="TEXT"),
    Flag("signoff_date", ("--signoff-date",), "Date in the report's sign-off block (free "
         "text).", SIGNOFF, "outputs.signoff_date", metavar="TEXT"),
    Flag("signoff_decision", ("--signoff-decision",), "Decision, e.g. 'approved for release'.",
         SIGNOFF, "outputs.signoff_decision", metavar="TEXT"),
    # Terminal and configuration
    Flag("config", ("--config",), "Settings file (default: calaudit.toml, searched "
         "upwards).", CONF, kind=Path, metavar="FILE"),
    Flag("show_config", ("--show-config",), "Print every resolved setting and its source, "
         "then exit.", CONF, kind=bool, default=False),
    Flag("explain", ("--explain",), "Say what each row of the terminal summary "
         "means.", CONF, kind=bool, default=False),
    Flag("quiet", ("--quiet", "-q"), "Print nothing but errors (outputs are still written).",
         CONF, kind=bool, default=False),
    Flag("verbose", ("--verbose", "-v"), "Log each step on stderr (config, rows, timings).",
         CONF, kind=bool, default=False),
    Flag("color", ("--color",), "auto (the terminal and NO_COLOR decide), always, "
         "never.", CONF, "outputs.color", metavar="WHEN"),
    # config show / config init / sample-data
    Flag("show_json", ("--json",), "Print JSON instead of text.", OTHER, kind=bool,
         default=False),
    Flag("pyproject", ("--pyproject",), "Write a [tool.calaudit] table to paste into "
         "pyproject.toml.", OTHER, kind=bool, default=False),
    Flag("force", ("--force",), "Overwrite existing files.", OTHER, kind=bool, default=False),
)}

#: Declaration order: the order of ``--help`` within each panel.
ORDER = list(FLAGS)
SIGNOFF_FLAGS = ("signoff_name", "signoff_role", "signoff_date", "signoff_decision")
_TERMINAL = ("config", "show_config", "explain", "quiet", "verbose", "color")
#: Options of ``calaudit test`` and ``calaudit metrics`` alike.
AUDIT = ("label_col", "prob_cols", "logit_cols", "id_col", "labels", "covariates_file",
         "covariates", "categorical", "positive_label", "renormalize", "drop_invalid",
         "weight_col", "weight_kind", "negative_rate", "sampling_rate_col", "seed",
         "fail_on", "exit_zero", "baseline", "regression_tolerance",
         "json", "html", "pdf", "pdf_appendix", "md", "junit",
         "prob_bandwidth", "cov_bandwidth", "min_group_rows", "min_group_events", "n_bands",
         "top_k", "n_bins", "binning", "kernel", "bandwidth", "blocksize", "squared",
         "squared_estimators", "method", "n_features", "spill", "spill_dir",
         *SIGNOFF_FLAGS, *_TERMINAL)
#: ``calaudit test``: the audit's options and those of the tests.
TEST = (*AUDIT, "alpha", "n_resamples", "multiple_testing", "multiple_testing_scope", "ci",
        "ci_level", "hosmer_lemeshow", "local_tests", "local_resamples", "group_adjust",
        "kite_width", "kite_gamma", "dask", "workers", "memory_limit", "threads",
        "time_col", "window", "batch_col", "window_battery", "save_state")
#: ``calaudit monitor``: the battery per window (on from this batch), the outputs, the
#: gate's statuses and the terminal.
MONITOR = ("window_battery", "fail_on", "exit_zero", "json", "html", "pdf", "pdf_appendix",
           "md", "junit", *SIGNOFF_FLAGS, *_TERMINAL)
COMPARE = ("regression_tolerance", "fail_on", "exit_zero", "json", "junit", "config", "quiet",
           "color")
REPORT = ("html", "pdf", "pdf_appendix", "md", *SIGNOFF_FLAGS)
#: Options that set several settings at once (``calaudit.cli.settings_flags``).
COMPOSITE = frozenset({"squared", "squared_estimators"})

DataArg = Annotated[str, typer.Argument(
    help="Predictions: a .csv/.tsv (.gz), .parquet or .npz file, a dataset directory, a "
    "quoted glob ('preds/*.parquet') or a URL (s3://, gs://, abfs://, memory://).",
    show_default=False, metavar="PATH")]
ResultsArg = Annotated[Path, typer.Argument(
    help="A JSON result written by 'calaudit test --json'.", show_default=False)]


def argument(name: str, annotation: Any, default: Any = inspect.Parameter.empty
             ) -> inspect.Parameter:
    """A positional parameter of a command (``annotation``: ``Annotated[type,
    typer.Argument(...)]``)."""
    return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                             annotation=annotation)


def takes(arguments: Sequence[inspect.Parameter], names: Sequence[str]
          ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command the signature typer reads: ``ctx``, its ``arguments``, then the options
    ``names`` of :data:`FLAGS`; the command reads them from ``ctx.params``."""
    def wrap(command: Callable[..., Any]) -> Callable[..., Any]:
        context = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                    annotation=typer.Context)
        params = [context, *arguments]
        params += [FLAGS[name].parameter() for name in sorted(names, key=ORDER.index)]
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command
    return wrap
