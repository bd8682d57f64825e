"""Documented ranges of every count and scale setting, and size limits of the files calaudit
reads besides the data: one table, read by the configuration classes and the command-line
options, listed in ``docs/configuration.md`` ("Ranges and limits"). Standard library only."""

from __future__ import annotations

import math

#: Integer settings by dotted key: inclusive ``(low, high)``. The upper bounds keep every
#: run finite (resamples, bins and grids cost time and memory in proportion).
COUNTS: dict[str, tuple[int, int]] = {
    "seed": (0, 2**63 - 1),
    "n_resamples": (1, 100_000),
    # random Fourier features D: a test's accumulator is D x (classes x resamples) floats
    # (16,384 x 1,000 x 8 bytes = 131 MB per class); the size rule stops at 2,048.
    "n_features": (2, 16_384),
    "binning.n_bins": (1, 10_000),
    "gate.min_rows": (0, 1_000_000_000),
    "gate.min_events": (0, 1_000_000_000),
    "skce.blocksize": (2, 1_000_000),
    "skce.max_quadratic_n": (2, 1_000_000),
    "global_tests.hosmer_lemeshow_groups": (3, 1_000),
    "local.n_resamples": (1, 100_000),
    "local.median_max_rows": (10, 1_000_000),
    "local.min_group_rows": (1, 1_000_000_000),
    "local.min_group_events": (0, 1_000_000_000),
    "local.n_bands": (1, 100),
    "local.top_k": (0, 1_000),
    "local.group_ci_resamples": (1, 100_000),
    "local.max_points": (0, 1_000_000),
    "local.curve_points": (2, 10_000),
    "squared.max_rows": (1, 1_000_000_000),
    "squared.n_folds": (2, 100),
    "squared.bin_grid_size": (1, 1_000),
    "squared.kde_grid_size": (1, 1_000),
    "squared.kkr_grid_size": (1, 1_000),
    "squared.ukkr_grid_size": (1, 1_000),
    "squared.max_rank": (1, 100_000),
    # local Dask worker processes started for one run (--workers)
    "dask.workers": (1, 1_024),
    # threads of the in-process row reductions
    "dask.threads": (1, 1_024),
}

#: Kernel scales (bandwidths, widths, gammas): finite and inside ``(low, high)``
#: inclusive. Below 1e-6 a Gaussian kernel's exponent overflows for any distinct pair;
#: above 1e6 every kernel is constant on [0, 1] and on z-scored covariates.
SCALE_RANGE = (1e-6, 1e6)
SCALES = ("skce.bandwidth", "local.prob_bandwidth", "local.cov_bandwidth",
          "local.kite_prob_kernel_width", "local.kite_cov_gamma", "squared.kernel_gamma")

#: Largest config file read (bytes) and deepest nesting of its tables and arrays.
CONFIG_MAX_BYTES = 1 << 20
CONFIG_MAX_DEPTH = 32
#: Largest saved JSON result read by report, compare and --baseline (bytes), deepest
#: nesting, and longest integer literal (digits).
RESULT_MAX_BYTES = 256 << 20
RESULT_MAX_DEPTH = 64
RESULT_MAX_INT_DIGITS = 100
#: Most files in one dataset (a directory, a glob or a URL) and deepest directory walk
#: below a dataset directory. Each file is opened once for its schema, once for its rows
#: and once for its fingerprint; the bound keeps a wrong root (``/``) from running on.
DATASET_MAX_FILES = 100_000
DATASET_MAX_DEPTH = 32
#: Most directory entries (files and folders) a local glob or directory walk looks at.
DATASET_MAX_ENTRIES = 1_000_000
#: Covariates of one audit, categories of one categorical covariate, and encoded kernel
#: columns in all (one per numeric covariate, one per category). The group table holds
#: every covariate's groups and every pair's (d (d + 1) / 2 groupings, 4 bytes a row
#: each), the attribution model fits 2 d + 2 models, and each kernel entry costs time in
#: proportion to the encoded columns: the bounds keep the memory and the time of an audit
#: in proportion to its rows.
MAX_COVARIATES = 20
MAX_CATEGORIES = 256
MAX_KERNEL_COLUMNS = 512
#: Seconds a request to an object store (s3://, gs://, abfs://) may wait to connect and
#: for each answer; the first contact with the store (opening it and one look at the path)
#: must also complete within it, and listing a dataset's files within
#: ``REMOTE_LIST_TIMEOUT``, whatever the filesystem package's retries.
REMOTE_TIMEOUT = 30.0
REMOTE_LIST_TIMEOUT = 90.0
#: Smallest ``dask.memory_limit`` (bytes): a worker process holds about 200 MiB once
#: Python, NumPy, Dask and calaudit are imported; below this it is stopped as it starts.
WORKER_MIN_MEMORY = 256 * 2**20
#: Reports (HTML, Markdown, PDF) list at most this many rows per table (groups, classes,
#: bins, files ...; which ones are left out is said under the table: the JSON has all),
#: and show at most ``REPORT_MAX_TEXT`` characters of any one text (a longer name or
#: message loses its middle): a PDF's layout time grows with the rows and faster than
#: linearly with a text's length.
REPORT_MAX_ROWS = 200
REPORT_MAX_TEXT = 2_000


def count_problem(key: str, value: object, optional: bool = True) -> str | None:
    """Why ``value`` is not a valid ``key`` (``None`` is valid when ``optional``), or
    ``None`` when it is valid."""
    low, high = COUNTS[key]
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return f"{key} must be an integer in [{low}, {high}]; got {short(value)}"
    return None


def scale_problem(key: str, value: object, optional: bool = True) -> str | None:
    """Why ``value`` is not a valid kernel scale ``key``, or ``None``."""
    low, high = SCALE_RANGE
    if value is None and optional:
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or not low <= value <= high):
        return f"{key} must be a number in [{low:g}, {high:g}]; got {short(value)}"
    return None


def short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:18] + "..." + text[-18:]
