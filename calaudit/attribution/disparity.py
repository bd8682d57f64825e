"""Between-group disparity per covariate: largest minus smallest group bias.

For each covariate, over its levels in the group table that are conclusive (enough rows
and events): ``D = max_l bias_l - min_l bias_l`` with ``bias_l = mean_{i in l}(y_i - p_i)``
(fairlearn's ``MetricFrame.difference()`` of the bias). Interval: stratified percentile
bootstrap -- rows resampled with replacement within every level, all level means
recomputed and ``max - min`` taken in each resample (so the interval accounts for picking
the extreme groups after looking); a level of at least ``NORMAL_MIN_ROWS`` rows has its
resampled means drawn from their normal limit ``N(bias_l, var_l / n_l)`` instead (as the
group table's intervals, :func:`calaudit.local.groups.bootstrap_means`). Seeded.
``D >= 0`` always; with few rows per level its bootstrap distribution is biased upwards
(the maximum of noisy means), which the interval shows rather than hides. Without resampling (``calaudit metrics``) the interval is the
normal one of the difference of the two extreme groups' means,
``D -/+ z sqrt(se_max^2 + se_min^2)`` (it ignores the selection).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.local.groups import NORMAL_MIN_ROWS, GroupSpec, bootstrap_means
from calaudit.numerics.distributions import norm_ppf

BOOTSTRAP = (f"stratified percentile bootstrap (the means of levels of {NORMAL_MIN_ROWS:,}+ "
             "rows drawn from their normal limit)")


def disparity(table: Sequence[dict[str, Any]], specs: Sequence[GroupSpec],
              covariates: Sequence[str], outcome: NDArray[np.float64],
              prediction: NDArray[np.float64], rng: np.random.Generator,
              n_resamples: int, level: float, resample: bool = True) -> list[dict[str, Any]]:
    """One entry per covariate with at least two conclusive levels (see module docstring)."""
    d = outcome - prediction
    out = []
    for name in covariates:
        members = [(row, spec) for row, spec in zip(table, specs, strict=True)
                   if spec.kind == "single" and name in spec.covariates
                   and row["status"] != "INCONCLUSIVE"]
        if len(members) < 2:
            continue
        biases = np.array([row["bias"] for row, _ in members])
        top, bottom = members[int(biases.argmax())], members[int(biases.argmin())]
        if resample:
            draws = np.stack([bootstrap_means(d[spec.rows], rng, n_resamples)
                              for _, spec in members])
            spread = draws.max(axis=0) - draws.min(axis=0)
            tail = (1.0 - level) / 2.0
            low, high = np.quantile(spread, [tail, 1.0 - tail])
        else:
            z = float(norm_ppf(0.5 + level / 2.0))
            se = np.sqrt(sum(float(np.var(d[spec.rows], ddof=1)) / spec.rows.size
                             for _, spec in (top, bottom)))
            low, high = biases.max() - biases.min() - z * se, biases.max() - biases.min() + z * se
        top, bottom = top[0], bottom[0]
        out.append({
            "covariate": name, "metric": "bias", "n_groups": len(members),
            "difference": float(biases.max() - biases.min()), "ci": [float(low), float(high)],
            "largest": {"group": top["group"], "bias": top["bias"]},
            "smallest": {"group": bottom["group"], "bias": bottom["bias"]},
            "method": "max - min of group bias; " + (BOOTSTRAP if resample
                                                     else "normal interval")})
    return out
