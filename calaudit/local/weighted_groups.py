"""The group table on weighted rows (docs/weights.md).

The groups are :func:`calaudit.local.groups.define_groups` of the weighted levels; a group
whose rows all weigh 0 is left out. Row ``i`` weighs ``w_i = d_i`` times ``1 / r_i`` when
its label is a negative under label-dependent sampling; ``e = y - p``. Per group, with
``W = sum w`` (moments: :mod:`.group_moments`, the unweighted table's reduction with a
weight column):

* ``weight = W``, ``effective_size = W^2 / sum w^2`` (Kish), ``n`` = ``W`` for frequency
  weights, the effective size otherwise; ``events = sum w y``, ``expected_events = sum w p``,
  ``observed_rate = events / W``, ``mean_prediction = expected_events / W``,
  ``bias = sum w e / W``.
* Interval of ``bias``. Frequency weights without sampling: those of the repeated rows
  (:func:`calaudit.local.groups.group_row`). Otherwise ``bias -/+ t se``, ``t`` the Student
  quantile on ``effective_size - 1`` degrees of freedom, ``se`` the larger of the linearised
  standard error of the ratio (Woodruff, JASA 66, 1971; ``m`` rows of positive weight)
  ``se_lin^2 = m / (m - 1) sum w^2 (e - bias)^2 / W^2`` and
  ``se_eff^2 = sum w (e - bias)^2 / (W (effective_size - 1))``
  (coverage: ``validation/results/weights_group_table.txt``).
* Test. Frequency weights without sampling: the repeated rows' Poisson-binomial test
  (:mod:`calaudit.local.poisson_binomial`). Otherwise ``T = sum w e`` against its law when
  the sampled labels are Bernoulli(``q_i``) (``q = p``, or ``p / (p + r (1 - p))`` under
  label-dependent sampling) and the weights follow the redrawn labels (a positive adds
  ``d (1 - p)``, a negative ``-d p / r``). Up to ``EXACT_MAX_ROWS`` rows, Monte Carlo
  (two-sided ``min(1, 2 min(1 + #{T* <= T}, 1 + #{T* >= T}) / (1 + B))``, ``B`` from
  :func:`redraws`); above, past ``MC_BUDGET`` rows x redraws in the table, or without
  resampling, the refined normal approximation with the null variance
  ``V = sum d^2 (q (1 - p)^2 + (1 - q) p^2 / r^2)`` and third cumulant
  ``sum d^3 (q (1 - p)^3 - (1 - q) p^3 / r^3)`` (no continuity correction).
* INCONCLUSIVE: ``n`` below ``min_rows``, or fewer than ``min_events`` effective events or
  non-events (:func:`calaudit.audit.weighting.effective_events`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.local.group_moments import WeightedMoments, source_moments
from calaudit.local.group_sources import GroupValues, level_rows
from calaudit.local.groups import (
    NORMAL_MIN_ROWS,
    TEST_NAME,
    GroupSettings,
    GroupSpec,
    Levels,
    bootstrap_mean_interval,
    define_groups,
    grade_groups,
    group_weights,
    normal_interval,
)
from calaudit.local.poisson_binomial import EXACT_MAX_ROWS, group_test, rna_cdf
from calaudit.numerics.distributions import t_ppf
from calaudit.numerics.resampling import monte_carlo_pvalue

WEIGHTED_TEST_NAME = "weighted_residual_sum"
LINEARISED = "linearisation (ratio estimator)"
#: Redrawn rows x redraws of one chunk (bounded temporaries).
DRAW_ENTRIES = 4_000_000
#: A group's smallest Monte-Carlo p-value is at most its share of alpha over this
#: (:func:`redraws`).
RESOLUTION = 10.0
#: Rows x redraws of all the Monte-Carlo group tests of one table (about a second).
MC_BUDGET = 100_000_000


@dataclass(frozen=True)
class WeightedRows:
    """The rows of a weighted group table: outcome ``y`` (0/1), prediction ``p``, row
    weight ``w``, design weight ``d``, kept rate of negatives ``r`` (ones without
    sampling), null positive rate ``q`` and whether the table is the repeated rows'
    (frequency weights without label-dependent sampling)."""

    y: NDArray[np.float64]
    p: NDArray[np.float64]
    w: NDArray[np.float64]
    d: NDArray[np.float64]
    r: NDArray[np.float64]
    q: NDArray[np.float64]
    repeated: bool

    @classmethod
    def of(cls, weights: Any, outcome: NDArray, prediction: NDArray) -> WeightedRows:
        """From :class:`calaudit.data.weights.SampleWeights` and the table's outcome and
        prediction."""
        y = np.asarray(outcome, dtype=np.float64)
        p = np.asarray(prediction, dtype=np.float64)
        rate = weights.negative_rate
        return cls(y, p, np.asarray(weights.of_labels(y), np.float64),
                   np.asarray(weights.design, np.float64),
                   np.ones(p.size) if rate is None else np.asarray(rate, np.float64),
                   np.asarray(weights.null_positive_rate(p), np.float64),
                   weights.repeated_rows)


def kish_size(total: float, squares: float) -> float:
    """Kish's effective size ``total^2 / squares`` (0 without weight)."""
    return total * total / squares if squares > 0 else 0.0


def sizes(m: WeightedMoments, frequency: bool) -> tuple[float, float]:
    """The group's sample size and effective events of the INCONCLUSIVE rule."""
    if frequency:
        return m.weight, min(m.positive_weight, m.negative_weight)
    return (kish_size(m.weight, m.weight_sq),
            min(kish_size(m.positive_weight, m.positive_weight_sq),
                kish_size(m.negative_weight, m.negative_weight_sq)))


def residual_test(rows: WeightedRows, index: NDArray, rng: np.random.Generator,
                  n_resamples: int | None) -> tuple[float, str]:
    """Two-sided p-value of ``T = sum w e`` over ``index`` under the sampled labels' null
    (module docstring) and the method name; ``n_resamples`` None: the approximation."""
    keep = index[rows.w[index] > 0]
    p, q, r, d = rows.p[keep], rows.q[keep], rows.r[keep], rows.d[keep]
    up, down = d * (1.0 - p), -d * p / r  # a redrawn positive, a redrawn negative
    observed = float(np.where(rows.y[keep] > 0, up, down).sum())
    if n_resamples is None or keep.size > EXACT_MAX_ROWS:
        variance = float(np.dot(q, up * up) + np.dot(1.0 - q, down * down))
        third = float(np.dot(q, up ** 3) + np.dot(1.0 - q, down ** 3))
        lower = rna_cdf(observed, 0.0, variance, third, correction=0.0)
        return float(min(1.0, 2.0 * min(lower, 1.0 - lower))), "refined normal approximation"
    null = np.empty(n_resamples)
    step = max(1, DRAW_ENTRIES // max(keep.size, 1))
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        positive = rng.random((stop - start, keep.size)) < q
        null[start:stop] = np.where(positive, up, down).sum(axis=1)
    atol = 64.0 * float(np.finfo(np.float64).eps) * float(np.abs(up).sum() + np.abs(down).sum())
    upper = monte_carlo_pvalue(observed, null, atol=atol)
    lower = monte_carlo_pvalue(-observed, -null, atol=atol)
    return float(min(1.0, 2.0 * min(lower, upper))), "Monte Carlo (labels redrawn)"


def ratio_interval(m: WeightedMoments, level: float) -> tuple[float, float]:
    """``bias -/+ t se`` (module docstring): ``se`` :func:`ratio_se`, ``t`` Student's
    quantile with ``effective size - 1`` degrees of freedom (infinite below two units)."""
    se = ratio_se(m)
    if not math.isfinite(se):
        return -math.inf, math.inf
    half = t_ppf(0.5 + level / 2.0, kish_size(m.weight, m.weight_sq) - 1.0) * se
    return m.bias - half, m.bias + half


def ratio_se(m: WeightedMoments) -> float:
    """The larger of the linearised standard error of ``bias`` and ``sd_w / sqrt(effective
    size)`` (module docstring); infinite below two rows or units."""
    size = kish_size(m.weight, m.weight_sq)
    if m.rows < 2 or not size > 1:
        return math.inf
    linearised = math.sqrt(m.rows / (m.rows - 1.0) * m.linearised) / m.weight
    return max(linearised, math.sqrt(m.m2 / m.weight / (size - 1.0)))


def weighted_group_row(spec: GroupSpec, m: WeightedMoments, rows: WeightedRows,
                       frequency: bool, rng: np.random.Generator, settings: GroupSettings,
                       level: float, n_resamples: int | None) -> dict[str, Any]:
    """The statistics of one weighted group (status pending unless INCONCLUSIVE), its
    bias interval at ``level`` (module docstring)."""
    size, events_size = sizes(m, frequency)
    whole = rows.repeated
    row: dict[str, Any] = {
        "group": spec.name, "kind": spec.kind, "covariates": dict(spec.covariates),
        "n": int(round(size)) if whole else size,
        "events": int(round(m.events)) if whole else m.events,
        "weight": m.weight, "effective_size": kish_size(m.weight, m.weight_sq),
        "effective_events": events_size, "mean_prediction": m.expected_events / m.weight,
        "observed_rate": m.events / m.weight, "bias": m.bias, "bias_ci": None,
        "bias_ci_method": None, "mean_lcb": None, "expected_events": m.expected_events,
        "test": TEST_NAME if whole else WEIGHTED_TEST_NAME, "test_method": None,
        "p_value": None, "p_value_adjusted": None, "status": None, "message": "",
        "bias_ci_level": level}
    problems = []
    if size < settings.min_rows:
        problems.append(f"{row['n']} rows < {settings.min_rows}" if whole else
                        f"sample size {size:.4g} < {settings.min_rows}")
    if events_size < settings.min_events:
        problems.append(f"{int(round(events_size))} events or non-events < "
                        f"{settings.min_events}" if whole else
                        f"{events_size:.4g} effective events or non-events < "
                        f"{settings.min_events}")
    if problems:
        row["status"] = "INCONCLUSIVE"
        row["message"] = "too small to decide: " + "; ".join(problems)
        return row
    index = spec.rows
    if whole:
        counts = rows.w[index].astype(np.int64)
        if settings.resample and row["n"] < NORMAL_MIN_ROWS:
            e = np.repeat(rows.y[index] - rows.p[index], counts)
            row["bias_ci"] = list(bootstrap_mean_interval(e, rng, settings.ci_resamples, level))
            row["bias_ci_method"] = "percentile bootstrap"
        else:
            sd = float(np.sqrt(m.m2 / (m.weight - 1.0))) if m.weight > 1 else np.nan
            row["bias_ci"] = list(normal_interval(m.bias, sd, row["n"], level))
            row["bias_ci_method"] = "normal"
        row["p_value"], row["test_method"] = group_test(row["events"], rows.p[index], counts)
        return row
    row["bias_ci"] = list(ratio_interval(m, level))
    row["bias_ci_method"] = LINEARISED
    row["p_value"], row["test_method"] = residual_test(rows, index, rng, n_resamples)
    return row


def redraws(specs: Sequence[GroupSpec], shares: NDArray[np.float64],
            settings: GroupSettings, n_resamples: int | None) -> list[int | None]:
    """Monte-Carlo redraws of each group's test (None: the approximation). A group of at
    most ``EXACT_MAX_ROWS`` rows gets ``max(n_resamples, ceil(RESOLUTION / (alpha w_g)))``
    redraws (``w_g`` its share of alpha) while the rows x redraws of the groups so far, in
    table order, stay within ``MC_BUDGET``; the others get the approximation."""
    out: list[int | None] = []
    spent = 0
    for spec, share in zip(specs, shares, strict=True):
        count = None
        if n_resamples is not None and spec.rows.size <= EXACT_MAX_ROWS:
            count = max(n_resamples, math.ceil(RESOLUTION / (settings.alpha * float(share))))
            if spent + count * spec.rows.size > MC_BUDGET:
                count = None
            else:
                spent += count * spec.rows.size
        out.append(count)
    return out


def weighted_group_table(levels: Sequence[Levels], intersections: bool, rows: WeightedRows,
                         frequency: bool, rng: np.random.Generator, settings: GroupSettings,
                         n_resamples: int | None
                         ) -> tuple[list[GroupSpec], list[dict[str, Any]], GroupValues]:
    """The groups of ``levels`` (:func:`calaudit.local.groups.define_groups`, with their
    rows), the rows of ``groups`` on weighted rows (statistics, adjusted p-values across
    groups, :func:`calaudit.local.groups.group_weights`, statuses; groups of weight 0 left
    out) and the groups' :class:`~calaudit.local.group_moments.WeightedMoments`
    (:class:`~calaudit.local.group_sources.GroupValues`, no gathered rows).
    ``n_resamples``: the least redraws of the Monte-Carlo group test (None: its
    approximation; :func:`redraws`)."""
    specs = define_groups(levels, intersections)
    source = level_rows(None, levels, intersections, rows.y, rows.p, rows.w)
    moments = source_moments(source, source.groupings(), weighted=True)
    kept = [(s, moments[s.key[0]][s.key[1]]) for s in specs
            if moments[s.key[0]][s.key[1]].weight > 0]
    weights = group_weights([s for s, _ in kept])
    draws = redraws([s for s, _ in kept], weights, settings, n_resamples)
    table = [weighted_group_row(s, m, rows, frequency, rng, settings,
                                1.0 - (1.0 - settings.level) * float(w), b)
             for (s, m), w, b in zip(kept, weights, draws, strict=True)]
    values = GroupValues({s.name: m for s, m in kept}, {}, {s.name: s.key for s, _ in kept},
                         None)
    return specs, grade_groups(table, weights, settings), values
