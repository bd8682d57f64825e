"""Settings of the command line that are not part of the audit itself: where the data
columns are (``[data]``) and where results go (``[outputs]``). They share the file, the
environment variables and the precedence rules with :class:`~calaudit.audit.config.AuditConfig`
but are not recorded in the JSON result's ``config``."""

from __future__ import annotations

from dataclasses import dataclass, field

from calaudit.exceptions import ConfigError

GITHUB_MODES = ("auto", "off")
COLOR_MODES = ("auto", "always", "never")


@dataclass(frozen=True)
class DataConfig:
    """Where the label, scores, ids and covariates are (the ``--label-col``... options)."""

    label_col: str | None = field(default=None, metadata={"help": "label column"})
    prob_cols: str | None = field(default=None, metadata={
        "help": "probability column(s): one column, a glob such as 'p_*' or a comma list"})
    logit_cols: str | None = field(default=None, metadata={"help": "logit column(s)"})
    id_col: str | None = field(default=None, metadata={"help": "row id column for joins"})
    labels: str | None = field(default=None, metadata={
        "help": "labels from this file", "path": True})
    covariates_file: str | None = field(default=None, metadata={
        "help": "covariates from this file", "path": True})
    covariates: tuple[str, ...] = field(default=(), metadata={
        "help": "covariate columns for local calibration and groups"})
    categorical: tuple[str, ...] = field(default=(), metadata={
        "help": "integer-coded covariates to treat as categories"})
    positive_label: str | None = field(default=None, metadata={
        "help": "label of the positive class (one probability column, string labels)"})
    renormalize: bool = field(default=False, metadata={
        "help": "rescale multi-class rows that do not sum to 1"})
    drop_invalid: bool = field(default=False, metadata={
        "help": "drop invalid rows (counted by reason) instead of stopping"})


@dataclass(frozen=True)
class OutputConfig:
    """Where results go and how the terminal output looks."""

    json: str | None = field(default=None, metadata={
        "help": "JSON result path ('-' for stdout)", "path": True})
    md: str | None = field(default=None, metadata={
        "help": "Markdown report path", "path": True})
    html: str | None = field(default=None, metadata={
        "help": "single-file HTML report path", "path": True})
    pdf: str | None = field(default=None, metadata={
        "help": "PDF report path (needs the calaudit[pdf] extra: WeasyPrint)", "path": True})
    junit: str | None = field(default=None, metadata={
        "help": "JUnit XML path (one testcase per check)", "path": True})
    signoff_name: str | None = field(default=None, metadata={
        "help": "name in the reports' sign-off block"})
    signoff_role: str | None = field(default=None, metadata={
        "help": "role in the reports' sign-off block"})
    signoff_date: str | None = field(default=None, metadata={
        "help": "date in the reports' sign-off block (free text)"})
    signoff_decision: str | None = field(default=None, metadata={
        "help": "decision in the reports' sign-off block (e.g. 'approved for release')"})
    github: str = field(default="auto", metadata={
        "help": "auto: step summary when GITHUB_STEP_SUMMARY is set and annotations when "
                "GITHUB_ACTIONS=true; off: neither"})
    color: str = field(default="auto", metadata={
        "help": "auto (terminal and NO_COLOR decide), always or never"})

    def __post_init__(self) -> None:
        if self.github not in GITHUB_MODES:
            raise ConfigError(f"outputs.github must be one of {', '.join(GITHUB_MODES)}; "
                              f"got {self.github!r}")
        if self.color not in COLOR_MODES:
            raise ConfigError(f"outputs.color must be one of {', '.join(COLOR_MODES)}; "
                              f"got {self.color!r}")
