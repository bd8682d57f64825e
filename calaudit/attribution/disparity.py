"""Between-group disparity per covariate: largest minus smallest group bias.

Over a covariate's conclusive levels in the group table:
``D = max_l bias_l - min_l bias_l``, ``bias_l = mean_{i in l}(y_i - p_i)`` (fairlearn's
``MetricFrame.difference()`` of the bias). Interval: seeded stratified percentile bootstrap
(rows resampled within every level, ``max - min`` in each resample, so it accounts for
picking the extreme groups); a level of at least ``NORMAL_MIN_ROWS`` rows draws its
resampled mean from ``N(bias_l, var_l / n_l)``, its moments from the group table
(:func:`level_means`; the rows of the smaller levels are the table's gathered rows).
Without resampling: ``D -/+ z sqrt(se_max^2 + se_min^2)`` (ignores the selection).

Weighted rows (docs/weights.md): frequency weights resample the repeated rows; otherwise
each level's mean is drawn from ``N(bias_l, se_l^2)``, ``se_l`` from
:func:`calaudit.local.weighted_groups.ratio_se`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.local.group_moments import WeightedMoments
from calaudit.local.group_sources import GroupValues
from calaudit.local.groups import NORMAL_MIN_ROWS, GroupSpec, bootstrap_means
from calaudit.local.weighted_groups import WeightedRows, ratio_se
from calaudit.numerics.distributions import norm_ppf

BOOTSTRAP = (f"stratified percentile bootstrap (the means of levels of {NORMAL_MIN_ROWS:,}+ "
             "rows drawn from their normal limit)")
WEIGHTED = ("level means drawn from N(bias, se^2), se the weighted ratio's standard error "
            "(group table)")


def disparity(table: Sequence[dict[str, Any]], specs: Sequence[GroupSpec],
              covariates: Sequence[str], values: GroupValues, rng: np.random.Generator,
              n_resamples: int, level: float, resample: bool = True,
              weighted: WeightedRows | None = None) -> list[dict[str, Any]]:
    """One entry per covariate with at least two conclusive levels (see module docstring);
    ``values``: the group table's moments and gathered rows
    (:class:`calaudit.local.group_sources.GroupValues`); ``weighted``: the weighted group
    table's rows (``values`` its weighted moments)."""
    spec_of = {spec.name: spec for spec in specs}
    out = []
    for name in covariates:
        members = [(row, spec_of[row["group"]]) for row in table
                   if spec_of[row["group"]].kind == "single"
                   and name in spec_of[row["group"]].covariates
                   and row["status"] != "INCONCLUSIVE"]
        if len(members) < 2:
            continue
        biases = np.array([row["bias"] for row, _ in members])
        top, bottom = members[int(biases.argmax())], members[int(biases.argmin())]
        if resample:
            draws = np.stack([level_means(values, spec, rng, n_resamples)
                              if weighted is None else
                              weighted_means(values, spec, weighted, rng, n_resamples)
                              for _, spec in members])
            spread = draws.max(axis=0) - draws.min(axis=0)
            tail = (1.0 - level) / 2.0
            low, high = np.quantile(spread, [tail, 1.0 - tail])
        else:
            z = float(norm_ppf(0.5 + level / 2.0))
            se = np.sqrt(sum(level_variance(values, spec) if weighted is None else
                             weighted_se(values.moments[spec.name], weighted.repeated) ** 2
                             for _, spec in (top, bottom)))
            low, high = biases.max() - biases.min() - z * se, biases.max() - biases.min() + z * se
        top, bottom = top[0], bottom[0]
        method = BOOTSTRAP if weighted is None or weighted.repeated else WEIGHTED
        out.append({
            "covariate": name, "metric": "bias", "n_groups": len(members),
            "difference": float(biases.max() - biases.min()), "ci": [float(low), float(high)],
            "largest": {"group": top["group"], "bias": top["bias"]},
            "smallest": {"group": bottom["group"], "bias": bottom["bias"]},
            "method": "max - min of group bias; " + (method if resample
                                                     else "normal interval")})
    return out


def level_means(values: GroupValues, spec: GroupSpec, rng: np.random.Generator,
                n_resamples: int) -> NDArray[np.float64]:
    """Resampled means of a level's ``d = y - p``: its gathered rows resampled
    (:func:`calaudit.local.groups.bootstrap_means`), or, for a level of
    ``NORMAL_MIN_ROWS``+ rows, draws of ``N(bias, sd^2 / n)`` from its moments."""
    rows = values.values(spec.name)
    if rows is not None:
        return bootstrap_means(rows[0] - rows[1], rng, n_resamples)
    m = values.moments[spec.name]
    return rng.normal(m.bias, m.sd / np.sqrt(m.n), n_resamples)


def level_variance(values: GroupValues, spec: GroupSpec) -> float:
    """``var(d) / n`` of a level (n - 1 in the variance's denominator)."""
    rows = values.values(spec.name)
    if rows is not None:
        return float(np.var(rows[0] - rows[1], ddof=1)) / rows[0].size
    m = values.moments[spec.name]
    return m.sd ** 2 / m.n


def weighted_se(m: WeightedMoments, repeated: bool) -> float:
    """A weighted level's standard error: the repeated rows' ``sd / sqrt(W)`` for
    frequency weights, else :func:`calaudit.local.weighted_groups.ratio_se`."""
    if not repeated:
        return ratio_se(m)
    return float(np.sqrt(m.m2 / (m.weight - 1.0) / m.weight)) if m.weight > 1 else np.inf


def weighted_means(values: GroupValues, spec: GroupSpec, rows: WeightedRows,
                   rng: np.random.Generator, n_resamples: int) -> NDArray[np.float64]:
    """Resampled weighted means of a level (module docstring)."""
    m = values.moments[spec.name]
    if rows.repeated and m.weight < NORMAL_MIN_ROWS:
        index = spec.rows
        return bootstrap_means(np.repeat(rows.y[index] - rows.p[index],
                                         rows.w[index].astype(np.int64)), rng, n_resamples)
    return rng.normal(m.bias, weighted_se(m, rows.repeated), n_resamples)
