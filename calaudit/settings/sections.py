"""Settings of the command line that are not part of the audit itself: where the data
columns are (``[data]``), where results go (``[outputs]``) and where the row reductions
run (``[dask]``). They share the file, the environment variables and the precedence rules
with :class:`~calaudit.audit.config.AuditConfig` but are not recorded in the JSON result's
``config`` (the result does not depend on them)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from calaudit import limits
from calaudit.audit.sections.common import check_choice, check_limits
from calaudit.exceptions import ConfigError

GITHUB_MODES = ("auto", "off")
SPILL_MODES = ("auto", "always", "never")
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
    weight_col: str | None = field(default=None, metadata={
        "help": "row weight column (docs/weights.md)"})
    weight_kind: str = field(default="frequency", metadata={
        "help": "what the weights mean: frequency (a row stands for w identical units) or "
                "design (survey or importance weights, effective sample size)"})
    negative_rate: float | None = field(default=None, metadata={
        "help": "negatives were kept at this rate (0 < r <= 1); weighted back by 1/r"})
    sampling_rate_col: str | None = field(default=None, metadata={
        "help": "column of the rate at which each row's negatives were kept"})
    spill: str = field(default="auto", metadata={
        "help": "keep the loaded columns in memory-mapped files (always), in memory (never), "
                "or on disk when they would take over a quarter of the available memory "
                "(auto)"})
    spill_dir: str | None = field(default=None, metadata={
        "help": "directory of the spill files (default: the system temporary directory)",
        "path": True})

    def __post_init__(self) -> None:
        check_choice(self.spill, SPILL_MODES, "data.spill")
        if self.weight_kind not in ("frequency", "design"):
            raise ConfigError("data.weight_kind must be frequency or design; "
                              f"got {self.weight_kind!r}")
        if self.negative_rate is not None and not (
                isinstance(self.negative_rate, (int, float)) and 0 < self.negative_rate <= 1):
            raise ConfigError("data.negative_rate must be in (0, 1]; "
                              f"got {self.negative_rate!r}")


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
    pdf_appendix: bool = field(default=False, metadata={
        "help": "add the appendix to the PDF (methods, settings, every group, null "
                "distributions)"})
    junit: str | None = field(default=None, metadata={
        "help": "JUnit XML path (one testcase per check)", "path": True})
    state: str | None = field(default=None, metadata={
        "help": "monitoring state to start (with monitoring.window): calaudit monitor "
                "continues it", "path": True})
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
        check_choice(self.github, GITHUB_MODES, "outputs.github")
        check_choice(self.color, COLOR_MODES, "outputs.color")


#: A scheduler address: ``host:port`` or ``protocol://host:port`` (as printed by
#: ``dask scheduler``); IPv6 hosts in brackets.
SCHEDULER_ADDRESS = re.compile(r"^([a-z][a-z0-9+.-]*://)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+)"
                               r":[0-9]{1,5}$")
#: A memory size as Dask writes it: ``2GB``, ``1.5 GiB``, ``500MB``, or bytes.
MEMORY_SIZE = re.compile(r"^([0-9]+(?:\.[0-9]*)?)\s*([kKmMgGtT]i?[bB]|[bB])?$")


#: Bytes per unit of a memory size, as Dask reads them (kB = 1000, KiB = 1024).
UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
         "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def memory_bytes(text: object) -> float | None:
    """Bytes of a memory size such as ``2GB``, ``512MiB`` or ``1000`` (None: not a size)."""
    size = MEMORY_SIZE.match(str(text).strip())
    if size is None:
        return None
    unit = (size.group(2) or "b").lower()
    return float(size.group(1)) * UNITS.get(unit if unit.endswith("b") else unit + "b", 1)


@dataclass(frozen=True)
class DaskConfig:
    """Where the row reductions run: in this process on ``threads`` threads (the default), on a
    Dask cluster (``scheduler``) or a local one started for the run (``workers``); the result
    is the same bytes either way."""

    scheduler: str | None = field(default=None, metadata={
        "help": "address of a running Dask scheduler, host:port or protocol://host:port "
                "(needs calaudit[dask])"})
    workers: int | None = field(default=None, metadata={
        "help": "start a local Dask cluster of this many single-threaded worker processes "
                "for the run (needs calaudit[dask])"})
    memory_limit: str = field(default="2GB", metadata={
        "help": "memory limit of each local worker (workers), e.g. 2GB or 512MiB"})
    timeout: float = field(default=10.0, metadata={
        "help": "seconds to wait for the scheduler (and the local workers) to answer"})
    threads: int | None = field(default=None, metadata={
        "help": "threads of the row reductions in this process (default: the usable CPU "
                "cores; 1: one range after another); not used with scheduler or workers"})

    def __post_init__(self) -> None:
        if self.scheduler is not None and not str(self.scheduler).strip():
            object.__setattr__(self, "scheduler", None)
        check_limits(self, "dask")
        if self.scheduler is not None and not SCHEDULER_ADDRESS.match(self.scheduler):
            raise ConfigError(
                f"dask.scheduler must be a scheduler address host:port or "
                f"protocol://host:port; got {self.scheduler!r}",
                hint="dask scheduler prints it, e.g. tcp://10.0.0.5:8786")
        if self.scheduler is not None and self.workers is not None:
            raise ConfigError("dask.scheduler and dask.workers are both set: use an existing "
                              "cluster (--dask) or start a local one (--workers), not both")
        size = memory_bytes(self.memory_limit)
        if size is None or size <= 0:
            raise ConfigError(f"dask.memory_limit must be a positive size such as 2GB or "
                              f"512MiB; got {limits.short(self.memory_limit)}")
        if size < limits.WORKER_MIN_MEMORY:
            raise ConfigError(
                f"dask.memory_limit {limits.short(self.memory_limit)} is below the "
                f"{limits.WORKER_MIN_MEMORY >> 20} MiB a worker needs to start (Python, "
                "NumPy and calaudit)",
                hint="give each worker at least 256MiB, e.g. --memory-limit 1GB")
        timeout = self.timeout
        if (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                or not math.isfinite(timeout) or not 0 < timeout <= 3600):
            raise ConfigError(f"dask.timeout must be a number of seconds in (0, 3600]; "
                              f"got {timeout!r}")
