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

from calaudit.local.group_moments import spec_codes
from calaudit.local.group_sources import GroupValues
from calaudit.local.groups import NORMAL_MIN_ROWS, GroupSpec, bootstrap_means
from calaudit.local.weighted_group_moments import weighted_group_moments
from calaudit.local.weighted_groups import WeightedRows, ratio_se
from calaudit.numerics.distributions import norm_ppf

BOOTSTRAP = (f"stratified percentile bootstrap (the means of levels of {NORMAL_MIN_ROWS:,}+ "
             "rows drawn from their normal limit)")
WEIGHTED = ("level means drawn from N(bias, se^2), se the weighted ratio's standard error "
            "(group table)")


def disparity(table: Sequence[dict[str, Any]], specs: Sequence[GroupSpec],
              covariates: Sequence[str], outcome: NDArray[np.float64] | None,
              prediction: NDArray[np.float64] | None, rng: np.random.Generator,
              n_resamples: int, level: float, resample: bool = True,
              weighted: WeightedRows | None = None, values: GroupValues | None = None
              ) -> list[dict[str, Any]]:
    """One entry per covariate with at least two conclusive levels (see module docstring);
    ``weighted``: the weighted group table's rows (with ``outcome`` and ``prediction``);
    else ``values``: the group table's moments and gathered rows
    (:class:`calaudit.local.group_sources.GroupValues`), by default every level's rows of
    ``outcome`` and ``prediction``."""
    d = None if weighted is None else outcome - prediction
    if weighted is None and values is None:
        values = GroupValues.of_arrays(specs, outcome, prediction)
    spec_of = {spec.name: spec for spec in specs}
    spreads = None if weighted is None else level_spreads(specs, weighted)
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
                              if spreads is None else
                              weighted_means(d, spec, weighted, spreads, rng, n_resamples)
                              for _, spec in members])
            spread = draws.max(axis=0) - draws.min(axis=0)
            tail = (1.0 - level) / 2.0
            low, high = np.quantile(spread, [tail, 1.0 - tail])
        else:
            z = float(norm_ppf(0.5 + level / 2.0))
            se = np.sqrt(sum(level_variance(values, spec)
                             if spreads is None else spreads[spec.name][1] ** 2
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


def level_spreads(specs: Sequence[GroupSpec], rows: WeightedRows
                  ) -> dict[str, tuple[float, float, float]]:
    """``(bias, se, weight)`` of every single-covariate group on weighted rows: ``se`` the
    repeated rows' ``sd / sqrt(W)`` for frequency weights, else :func:`ratio_se`."""
    singles = [spec for spec in specs if spec.kind == "single"]
    codes, sizes, keys = spec_codes(singles, rows.p.size)
    moments = weighted_group_moments(codes, sizes, rows.y, rows.p, rows.w)
    out = {}
    for spec, (j, code) in zip(singles, keys, strict=True):
        m = moments[j][code]
        se = (float(np.sqrt(m.m2 / (m.weight - 1.0) / m.weight)) if m.weight > 1 else np.inf
              ) if rows.repeated else ratio_se(m)
        out[spec.name] = (m.bias, se, m.weight)
    return out


def weighted_means(d: NDArray[np.float64], spec: GroupSpec, rows: WeightedRows,
                   spreads: dict[str, tuple[float, float, float]], rng: np.random.Generator,
                   n_resamples: int) -> NDArray[np.float64]:
    """Resampled weighted means of a level (module docstring)."""
    bias, se, weight = spreads[spec.name]
    if rows.repeated and weight < NORMAL_MIN_ROWS:
        return bootstrap_means(np.repeat(d[spec.rows], rows.w[spec.rows].astype(np.int64)),
                               rng, n_resamples)
    return rng.normal(bias, se, n_resamples)
