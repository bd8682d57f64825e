"""Kuiper's test of calibration: the range of the cumulative calibration residuals.

Arrieta-Ibarra, Gujral, Tannenbaum & Tygert, JMLR 23 (2022), sec. 2. With scores ``s``
ascending (ties in row order) and outcomes ``y`` (binary: the label against ``p_1``;
otherwise top-label), ``C_k = (1 / n) sum_{j <= k} (y_j - s_j)``, ``C_0 = 0``, and ``K =
max_k C_k - min_k C_k``; the reported statistic is ``K / sigma``, ``sigma = sqrt(sum_j s_j
(1 - s_j)) / n``. Consistency-resampling p-value: ``y*_j ~ Bernoulli(s_j)``,
``p = (1 + #{K* >= K}) / (1 + B)``.

The sorted scores are cut into buckets of about :data:`BUCKET_ROWS` rows by exact order
statistics of the scores (:func:`calaudit.numerics.order_statistics.order_statistics`),
bucket ``b`` holding the rows with ``v_b <= s < v_{b+1}``, so a bucket is a run of the
global order. One task per bucket reads the rows range by range, keeps its own, sorts
them and returns, for the observed residuals and each redrawn column, the bucket's total
and the highest and lowest of its running sums. Walking the buckets in order,
``max_k C_k = max_b (P_b + max_b^local)`` with ``P_b`` the totals before bucket ``b``
(rounding is monotone, so this is the maximum of the running sums ``P_b + c``). A bucket's
outcomes are redrawn from ``SeedSequence((seed, crc32("kuiper"), b))``. The buckets depend
on the scores and ``n`` only, so rows in memory, a dataset's files and any executor give
the same bits; on a dataset the rows stay where they are.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import registry, scale
from calaudit.metrics.ece import default_notion
from calaudit.metrics.row_summary import PanelScores, where_rows_are
from calaudit.numerics.order_statistics import order_statistics
from calaudit.numerics.resampling import monte_carlo_pvalue
from calaudit.results import TestResult
from calaudit.scale.blocks import block_rng, stream_seed

#: Entries of one batch of redrawn outcome columns (rows of a bucket x columns).
BATCH_ENTRIES = 4_000_000
#: Rows of a bucket of the sorted scores, about (one task sorts and redraws a bucket).
BUCKET_ROWS = 1 << 18
#: The columns of :class:`PanelScores` the test reads: the notion's score and outcome.
SCORE, OUTCOME = "panel:0", "outcome:0"
METHOD = ("consistency resampling: outcomes redrawn from the scores, "
          "p = (1 + #{K* >= K}) / (1 + B)")


def bucket_bounds(rows: PanelScores, n: int) -> NDArray[np.float64]:
    """``[-inf, v_1, ..., v_{B-1}, inf]``: the scores of ranks ``b n // B`` (``B =
    ceil(n / BUCKET_ROWS)`` buckets)."""
    buckets = max(1, -(-n // BUCKET_ROWS))
    ranks = np.arange(1, buckets, dtype=np.int64) * n // buckets
    inner = order_statistics(rows, {SCORE: ranks})[SCORE] if ranks.size else np.empty(0)
    return np.concatenate([[-np.inf], inner, [np.inf]])


def running_range(residuals: NDArray[np.float64]) -> NDArray[np.float64]:
    """``(total, highest, lowest)`` of the running sums of each column of ``residuals``
    (m,) or (m, q), summed in row order (``-inf, inf`` extremes for no rows)."""
    if residuals.shape[0] == 0:
        width = residuals.shape[1:]
        return np.stack([np.zeros(width), np.full(width, -np.inf), np.full(width, np.inf)])
    running = np.cumsum(residuals, axis=0)
    return np.stack([running[-1], running.max(axis=0), running.min(axis=0)])


def bucket_partial(start: int, stop: int, *, rows: PanelScores, bounds: NDArray[np.float64],
                   seed: int, n_resamples: int) -> dict[str, NDArray]:
    """Bucket ``start`` (``stop = start + 1``): its rows in score order, the running
    ranges of the observed residuals and of ``n_resamples`` redrawn columns, and the sum
    of ``s (1 - s)``."""
    low, high = bounds[start], bounds[start + 1]
    kept = []
    for a, b in scale.task_ranges(rows.n):
        part = rows.read(a, b, [SCORE, OUTCOME])
        inside = (part[SCORE] >= low) & (part[SCORE] < high)
        kept.append((part[SCORE][inside], part[OUTCOME][inside]))
    s = np.concatenate([k[0] for k in kept])
    o = np.concatenate([k[1] for k in kept])
    order = np.argsort(s, kind="stable")
    s, o = s[order], o[order]
    rng = block_rng(seed, "kuiper", start)
    step = max(1, BATCH_ENTRIES // max(s.size, 1))
    null = [running_range((rng.random((s.size, q)) < s[:, None]) - s[:, None])
            for q in (min(step, n_resamples - done) for done in range(0, n_resamples, step))]
    return {"observed": running_range(o - s), "null": np.concatenate(null, axis=1),
            "variance": np.array([np.sum(s * (1.0 - s))])}


def kuiper_ranges(buckets: list[dict[str, NDArray]], key: str, n: int) -> NDArray[np.float64]:
    """``K`` of the running ranges ``buckets[b][key]`` walked in bucket order (module
    docstring), ``C_0 = 0`` included."""
    first = buckets[0][key]
    before = np.zeros(first.shape[1:])
    highest, lowest = np.zeros_like(before), np.zeros_like(before)
    for part in buckets:
        total, high, low = part[key]
        highest = np.maximum(highest, before + high)
        lowest = np.minimum(lowest, before + low)
        before = before + total
    return highest / n - lowest / n


def kuiper_test_of_rows(source: Any, n_classes: int, *, n_resamples: int = 1000,
                        rng: np.random.Generator) -> TestResult:
    """Kuiper's test of "the model is calibrated" (module docstring) on a row source of
    ``y`` and ``proba`` (a dataset's files: read by the tasks)."""
    notion = default_notion(n_classes)
    rows = PanelScores(source)  # panel 0: the notion's scores and outcomes
    n, seed = int(source.n), stream_seed(rng)
    if n == 0:
        raise ValueError("Kuiper's test needs at least one row")
    with where_rows_are(source):
        bounds = bucket_bounds(rows, n)
        buckets = scale.map_combine(
            bucket_partial, [(b, b + 1) for b in range(bounds.size - 1)],
            {"rows": rows, "bounds": bounds, "seed": seed, "n_resamples": n_resamples}, list)
    observed = float(kuiper_ranges(buckets, "observed", n))
    null = kuiper_ranges(buckets, "null", n)
    variance = 0.0
    for part in buckets:
        variance += float(part["variance"][0])
    sigma = math.sqrt(variance) / n
    statistic = observed / sigma if sigma > 0 else math.nan
    params = {"notion": notion, "sigma": sigma, "statistic": "K / sigma",
              "estimate": "K = max_k C_k - min_k C_k", "buckets": int(bounds.size - 1),
              "bucket_rows": BUCKET_ROWS}
    return TestResult("kuiper", statistic, observed, monte_carlo_pvalue(observed, null),
                      METHOD, n_resamples=n_resamples, params=params, null_distribution=null,
                      title=registry.title("kuiper", notion))


def kuiper_test(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *,
                n_resamples: int = 1000, rng: np.random.Generator) -> TestResult:
    """Kuiper's test of "the model is calibrated" (module docstring); ``y_proba`` (n, m)."""
    y_proba = np.asarray(y_proba, dtype=np.float64)
    return kuiper_test_of_rows(scale.ArrayRows({"y": np.asarray(y_true), "proba": y_proba}),
                               y_proba.shape[1], n_resamples=n_resamples, rng=rng)
