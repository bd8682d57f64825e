"""Per-group reliability diagrams: the data behind the reports' small multiples.

For each single-covariate group of the group table (the categories of a categorical
covariate, the quantile bands of a numeric one) that is conclusive, ordered by ``|bias|``
(largest first) and capped at ``max_panels``: the reliability bins of the group's rows
(binary: positive-class probability; multi-class: top-label confidence and correctness),
computed as the global diagram's (:func:`calaudit.metrics.reliability.reliability_bins`,
Wilson intervals), and, when the audit runs tests, the consistency band of a calibrated
model for those rows (:func:`calaudit.metrics.consistency.consistency_band`: outcomes
redrawn from the predictions, ``level`` pointwise quantiles per bin).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.local.groups import GroupSpec
from calaudit.metrics.consistency import consistency_band
from calaudit.metrics.reliability import reliability_bins

#: Panels shown at most (the most biased groups first).
MAX_PANELS = 12
#: Bins per panel at most (groups are smaller than the whole sample).
MAX_BINS = 10


def group_panels(table: Sequence[dict[str, Any]], specs: Sequence[GroupSpec],
                 outcome: NDArray[np.float64], prediction: NDArray[np.float64], *,
                 n_bins: int, strategy: str, n_resamples: int | None, level: float,
                 rng: np.random.Generator, max_panels: int = MAX_PANELS) -> list[dict[str, Any]]:
    """``local.group_reliability``: one panel per selected group (see module docstring);
    ``n_resamples=None`` leaves the bands out (``consistency_band: null``)."""
    chosen = sorted((i for i, row in enumerate(table)
                     if specs[i].kind == "single" and row["status"] != "INCONCLUSIVE"),
                    key=lambda i: (-abs(table[i]["bias"]), table[i]["group"]))[:max_panels]
    bins = min(n_bins, MAX_BINS)
    panels = []
    for i in chosen:
        rows, row = specs[i].rows, table[i]
        scores = prediction[rows]
        band = None
        if n_resamples:
            band = consistency_band(scores, n_bins=bins, strategy=strategy,
                                    n_resamples=n_resamples, level=level, rng=rng).to_dict()
        (covariate, level_label), = specs[i].covariates.items()
        panels.append({
            "group": row["group"], "covariate": covariate, "level": level_label,
            "n": row["n"], "bias": row["bias"], "status": row["status"],
            "explained_by": row.get("explained_by"),
            "bins": reliability_bins(scores, outcome[rows], n_bins=bins,
                                     strategy=strategy).to_dict(),
            "consistency_band": band})
    return panels
