"""The group table: calibration in every covariate group and pairwise intersection.

Groups: each category of a categorical covariate; each quantile band of a numeric
covariate (``n_bands`` equal-mass bands, right-closed, duplicate edges merged, labelled
``[21, 34]``, ``(34, 48]`` ...: :mod:`.levels`); with ``intersections``, every non-empty
combination of levels of two different covariates (``race=A & age=(34, 48]``).

Per group (binary: events are positives, the prediction ``p_1``; multi-class: the top-label
view): ``n``, ``events``, ``mean_prediction``, ``observed_rate``, ``bias = mean(y - p)``
(moments: :mod:`.group_moments`) with an interval (``bias_ci_method``): a seeded percentile
bootstrap below ``NORMAL_MIN_ROWS`` rows, else ``bias -/+ z sd(y - p) / sqrt(n)`` (coverage:
``validation/results/group_interval_coverage.txt``), ``mean_lcb``, and the group test of
:mod:`.poisson_binomial`. Groups with fewer than ``min_rows`` rows or fewer than
``min_events`` events or non-events are ``INCONCLUSIVE``. The others' p-values are adjusted
together (Holm by default, or Benjamini-Hochberg); a group ``FAIL``s when its adjusted
p-value is at most ``alpha``. Group statuses are diagnostics: the gate uses ``tests`` only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.inference.multitest import adjust_pvalues
from calaudit.local.group_moments import GroupMoments
from calaudit.local.levels import (  # noqa: F401 - the group table's levels, used from here
    Levels,
    band_codes,
    covariate_levels,
    data_levels,
    edge_bands,
    quantile_bands,
)
from calaudit.local.poisson_binomial import EXACT_MAX_ROWS, group_test, moment_test
from calaudit.numerics.distributions import norm_ppf

TEST_NAME = "poisson_binomial"


@dataclass(frozen=True)
class GroupSpec:
    """One group: its name, kind, level per covariate and row indices (int32; None for a
    group known by its ``key`` only, :mod:`calaudit.local.group_sources`); ``key``: its
    grouping and its code there (:mod:`calaudit.local.group_moments`)."""

    name: str
    kind: str
    covariates: dict[str, str]
    rows: NDArray[np.int32] | None
    key: tuple[int, int] | None = None


def index_dtype(n: int) -> type:
    """Row indices of ``n`` rows: int32 below 2^31 rows (4 bytes a row), else intp."""
    return np.int32 if n < 2**31 else np.intp


def rows_where(mask: NDArray[np.bool_]) -> NDArray[np.int32]:
    """The rows where ``mask`` holds (:func:`index_dtype`)."""
    return np.flatnonzero(mask).astype(index_dtype(mask.size), copy=False)


def define_groups(levels: Sequence[Levels], intersections: bool,
                  counts: Sequence[Sequence[int]] | None = None) -> list[GroupSpec]:
    """Single-covariate groups, then (optionally) pairwise intersections; empty ones are
    skipped. Each group's ``key``: its grouping (the covariates, then the pairs) and its
    code there (a pair's ``a |B| + b``). ``counts``: the rows of every grouping's codes
    (the group table's moments): the groups without their rows (``rows`` None), the
    levels' codes never read."""
    groupings: list[tuple[Levels, ...]] = [(lv,) for lv in levels]
    if intersections:
        groupings += list(combinations(levels, 2))
    specs: list[GroupSpec] = []
    for index, members in enumerate(groupings):
        if counts is not None:
            found: list[tuple[int, Any]] = [(int(code), None)
                                            for code in np.flatnonzero(counts[index])]
        elif len(members) == 1:
            found = rows_by_code(members[0].codes)
        else:
            a, b = members
            found = rows_by_code(a.codes.astype(np.int64) * len(b.labels) + b.codes)
        for code, rows in found:
            cells = divmod(code, len(members[1].labels)) if len(members) == 2 else (code,)
            covariates = {lv.name: lv.labels[c] for lv, c in zip(members, cells, strict=True)}
            specs.append(GroupSpec(" & ".join(f"{k}={v}" for k, v in covariates.items()),
                                   "single" if len(members) == 1 else "intersection",
                                   covariates, rows, (index, code)))
    return specs


def rows_by_code(codes: NDArray[np.integer]) -> list[tuple[int, NDArray[np.int32]]]:
    """``(code, rows)`` of every code present, in code order, each ``rows`` ascending, from
    one stable sort."""
    order = np.argsort(codes, kind="stable")
    present, starts = np.unique(codes[order], return_index=True)
    bounds = [*starts.tolist(), codes.size]
    out = []
    for k, code in enumerate(present.tolist()):
        # a copy (not a view of ``order``), in the group table's index type
        rows = order[bounds[k]:bounds[k + 1]].astype(index_dtype(codes.size))
        out.append((int(code), rows))
    return out


#: From this many rows on, a group's mean gets the normal interval and normal draws instead
#: of row resampling (module docstring).
NORMAL_MIN_ROWS = 10_000


def bootstrap_means(d: NDArray[np.float64], rng: np.random.Generator,
                    n_resamples: int) -> NDArray[np.float64]:
    """``n_resamples`` bootstrap means of ``d``: :func:`resampled_means` below
    ``NORMAL_MIN_ROWS`` rows; from there on, draws of the bootstrap distribution's normal
    limit ``N(mean(d), var(d) / n)`` (var with ``n - 1``), O(``n_resamples``)."""
    n = d.size
    if n >= NORMAL_MIN_ROWS:
        return rng.normal(float(d.mean()), float(d.std(ddof=1)) / np.sqrt(n), n_resamples)
    return resampled_means(d, rng, n_resamples)


def resampled_means(d: NDArray[np.float64], rng: np.random.Generator,
                    n_resamples: int) -> NDArray[np.float64]:
    """``n_resamples`` means of ``d`` resampled with replacement (bounded temporaries)."""
    n = d.size
    chunk = max(1, 4_000_000 // max(n, 1))
    means = []
    for start in range(0, n_resamples, chunk):
        count = min(chunk, n_resamples - start)
        means.append(d[rng.integers(0, n, size=(count, n))].mean(axis=1))
    return np.concatenate(means)


def bootstrap_mean_interval(d: NDArray[np.float64], rng: np.random.Generator,
                            n_resamples: int, level: float) -> tuple[float, float]:
    """Percentile bootstrap interval of ``mean(d)`` (rows resampled with replacement)."""
    values = resampled_means(d, rng, n_resamples)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def normal_interval(mean: float, sd: float, n: int, level: float) -> tuple[float, float]:
    """``mean -/+ z sd / sqrt(n)`` (infinite for one row)."""
    z = float(norm_ppf(0.5 + level / 2.0))
    half = z * sd / np.sqrt(n) if n > 1 else np.inf
    return float(mean - half), float(mean + half)


#: Share of alpha the pairwise intersections spend together when the table has them; the
#: single-covariate groups share the rest (weighted Holm and weighted Bonferroni intervals).
INTERSECTION_SHARE = 0.25


@dataclass(frozen=True)
class GroupSettings:
    """Thresholds and sizes of the group table (from ``LocalConfig``); ``level`` is the
    confidence level of the intervals, which are simultaneous over the groups."""

    min_rows: int = 30
    min_events: int = 5
    adjust: str = "holm"
    alpha: float = 0.05
    ci_resamples: int = 1000
    level: float = 0.95
    resample: bool = True


def group_weights(specs: Sequence[GroupSpec]) -> NDArray[np.float64]:
    """Each group's share of alpha: the single-covariate groups share
    ``1 - INTERSECTION_SHARE`` equally and the intersections ``INTERSECTION_SHARE`` (all of
    it to one kind when the table has only that kind). Adjusted p-values (weighted Holm)
    and simultaneous intervals (weighted Bonferroni: group ``g`` at level
    ``1 - (1 - level) w_g``) spend alpha in the same shares."""
    kinds = [s.kind for s in specs]
    singles, joint = kinds.count("single"), kinds.count("intersection")
    share = {"single": 1.0 - INTERSECTION_SHARE, "intersection": INTERSECTION_SHARE}
    if not singles or not joint:
        share = {"single": 1.0, "intersection": 1.0}
    counts = {"single": max(singles, 1), "intersection": max(joint, 1)}
    return np.array([share[k] / counts[k] for k in kinds])


def group_row(spec: GroupSpec, moments: GroupMoments,
              values: tuple[NDArray[np.float64], NDArray[np.float64]] | None, has_lcb: bool,
              rng: np.random.Generator, settings: GroupSettings, level: float
              ) -> dict[str, Any]:
    """The statistics of one group (status still pending unless INCONCLUSIVE), its bias
    interval at ``level``. ``values``: the group's rows' ``(y, p)`` in row order (the
    conclusive groups below ``NORMAL_MIN_ROWS`` rows, :mod:`calaudit.local.group_sources`),
    read for the bootstrap and the exact test; a group test above ``EXACT_MAX_ROWS`` rows
    takes the refined normal approximation of the moments' cumulant sums."""
    n, events = moments.n, int(moments.events)
    row: dict[str, Any] = {
        "group": spec.name, "kind": spec.kind, "covariates": dict(spec.covariates),
        "n": n, "events": events, "mean_prediction": moments.mean_prediction,
        "observed_rate": moments.observed_rate, "bias": moments.bias,
        "bias_ci": None, "bias_ci_method": None,
        "mean_lcb": moments.mean_lcb if has_lcb else None,
        "expected_events": moments.expected_events, "test": TEST_NAME, "test_method": None,
        "p_value": None, "p_value_adjusted": None, "status": None, "message": "",
        "bias_ci_level": level}
    problems = []
    if n < settings.min_rows:
        problems.append(f"{n} rows < {settings.min_rows}")
    if min(events, n - events) < settings.min_events:
        problems.append(f"{min(events, n - events)} events or non-events "
                        f"< {settings.min_events}")
    if problems:
        row["status"] = "INCONCLUSIVE"
        row["message"] = "too small to decide: " + "; ".join(problems)
        return row
    bootstrap = settings.resample and n < NORMAL_MIN_ROWS
    if bootstrap:
        y, p = _rows_of(spec, values)
        row["bias_ci"] = list(bootstrap_mean_interval(y - p, rng, settings.ci_resamples,
                                                      level))
    else:
        row["bias_ci"] = list(normal_interval(moments.bias, moments.sd, n, level))
    row["bias_ci_method"] = "percentile bootstrap" if bootstrap else "normal"
    if n <= EXACT_MAX_ROWS:
        row["p_value"], row["test_method"] = group_test(events, _rows_of(spec, values)[1])
    else:
        row["p_value"], row["test_method"] = moment_test(events, *moments.cumulants)
    return row


def _rows_of(spec: GroupSpec, values: tuple[NDArray, NDArray] | None
             ) -> tuple[NDArray, NDArray]:
    """A group's gathered ``(y, p)``."""
    if values is None:
        raise ValueError(f"group {spec.name}: its rows were not gathered")
    return values


def grade_groups(rows: list[dict[str, Any]], weights: NDArray[np.float64],
                 settings: Any) -> list[dict[str, Any]]:
    """The groups' p-values adjusted together (``settings.adjust``, weighted Holm or
    Bonferroni with the groups' ``weights``) and their statuses ``FAIL`` / ``PASS`` at
    ``settings.alpha``; a group that decided its own status keeps it."""
    pending = [i for i, r in enumerate(rows) if r["status"] is None]
    adjusted = adjust_pvalues([rows[i]["p_value"] for i in pending], settings.adjust,
                              weights[pending] if settings.adjust in ("holm", "bonferroni")
                              else None)
    for i, value in zip(pending, adjusted, strict=True):
        rows[i]["p_value_adjusted"] = float(value)
        rows[i]["status"] = "FAIL" if value <= settings.alpha else "PASS"
        rows[i]["adjustment"] = settings.adjust
    return rows


def format_bias(value: float | None) -> str:
    """A group's bias as every output writes it: signed, 3 decimals (``+0.055``)."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:+.3f}"


def format_interval(ci: Sequence[float | None] | None) -> str:
    """A bias interval as every output writes it: ``[+0.019, +0.084]``; ``-`` if none. A
    bound that is not 0 but would be written 0.000 gets the digits that show its side
    (``[+0.0004, +0.127]``): whether the interval excludes 0 is what it tells."""
    if not ci or None in ci:
        return "-"
    return f"[{_bound(ci[0])}, {_bound(ci[1])}]"


def _bound(value: float) -> str:
    text = format_bias(value)
    if value != 0 and math.isfinite(value) and float(text) == 0:
        return f"{value:+.1g}" if abs(value) < 1e-4 else f"{value:+.4f}"
    return text


def most_biased(rows: Sequence[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """At most ``k`` conclusive groups whose bias interval excludes 0, the strongest evidence
    first (adjusted p-value, then raw p-value, then the larger ``|bias|``), each with its
    ``rank`` (1 = strongest)."""
    shown = [r for r in rows if r["status"] != "INCONCLUSIVE" and excludes_zero(r)]
    ranked = sorted(shown, key=lambda r: (_p(r["p_value_adjusted"]), _p(r["p_value"]),
                                          -abs(r["bias"]), r["group"]))
    return [{"rank": i + 1, **r} for i, r in enumerate(ranked[:k])]


def excludes_zero(row: Mapping[str, Any]) -> bool:
    """Whether a group's bias interval lies on one side of 0 (no interval: no)."""
    interval = row.get("bias_ci") or ()
    return len(interval) == 2 and None not in interval and (interval[0] > 0 or interval[1] < 0)


def _p(value: float | None) -> float:
    return 1.0 if value is None else value
