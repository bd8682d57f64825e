"""Per-group reliability diagrams: the data behind the reports' small multiples.

For each conclusive single-covariate group of the group table, ordered by ``|bias|``
(largest first) and capped at ``max_panels``: the reliability bins of the group's rows as
the global diagram's (:func:`calaudit.metrics.reliability.reliability_bins`) and, when the
audit runs tests, the consistency band of a calibrated model for those rows
(:func:`calaudit.metrics.consistency.consistency_band`); with equal-width bins, a group of
``NORMAL_MIN_ROWS``+ rows gets both from one reduction over the rows
(:mod:`calaudit.local.panel_sums`: per-bin sums and laws of events), the others from the
group table's gathered rows. Weighted rows: the bins of
:func:`calaudit.inference.weighted_diagrams.weighted_bins` and the weighted table's groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.data.weights import SampleWeights
from calaudit.inference.weighted_diagrams import take, weighted_bins
from calaudit.local.group_sources import GroupValues, panel_values
from calaudit.local.groups import GroupSpec
from calaudit.local.panel_sums import reduced_panels
from calaudit.metrics.binned import BinnedOutcomes
from calaudit.metrics.consistency import band_from_laws, consistency_band
from calaudit.metrics.reliability import bins_from_sums, reliability_bins

#: Panels shown at most (the most biased groups first).
MAX_PANELS = 12
#: Bins per panel at most (groups are smaller than the whole sample).
MAX_BINS = 10


def group_panels(table: Sequence[dict[str, Any]], specs: Sequence[GroupSpec],
                 outcome: NDArray[np.float64] | None, prediction: NDArray[np.float64] | None,
                 *,
                 n_bins: int, strategy: str, n_resamples: int | None, level: float,
                 rng: np.random.Generator, max_panels: int = MAX_PANELS,
                 weights: SampleWeights | None = None, values: GroupValues | None = None
                 ) -> list[dict[str, Any]]:
    """``local.group_reliability``: one panel per selected group (see module docstring);
    ``n_resamples=None`` leaves the bands out (``consistency_band: null``). ``weights``:
    the rows' weights (outcome 1 is the positive class of label-dependent sampling), with
    ``outcome`` and ``prediction`` and the groups given with their rows; else ``values``:
    the group table's (:func:`calaudit.local.group_sources.panel_values` gives the groups'
    rows)."""
    spec_of = {spec.name: spec for spec in specs}
    chosen = sorted((row for row in table if spec_of[row["group"]].kind == "single"
                     and row["status"] != "INCONCLUSIVE"),
                    key=lambda row: (-abs(row["bias"]), row["group"]))[:max_panels]
    bins = min(n_bins, MAX_BINS)
    names = [row["group"] for row in chosen]
    reduced = ({} if weights is not None or strategy != "uniform"
               else reduced_panels(values, names, bins, bool(n_resamples)))
    gathered = (panel_values(values, [name for name in names if name not in reduced])
                if weights is None else {})
    panels = []
    for row in chosen:
        spec = spec_of[row["group"]]
        if row["group"] in reduced:
            sums, laws = reduced[row["group"]]
            table_bins = bins_from_sums(sums, np.linspace(0.0, 1.0, bins + 1)).to_dict()
            band = None if not n_resamples else band_from_laws(
                laws, sums.count, n_resamples, level, rng).to_dict()
        elif weights is None:
            observed, scores = gathered[row["group"]]
            table_bins = reliability_bins(scores, observed, n_bins=bins,
                                          strategy=strategy).to_dict()
            band = None if not n_resamples else consistency_band(
                scores, n_bins=bins, strategy=strategy, n_resamples=n_resamples,
                level=level, rng=rng).to_dict()
        else:
            rows = spec.rows
            scores = prediction[rows]
            part = take(weights, rows)
            binned = BinnedOutcomes.build(scores, outcome[rows], n_bins=bins,
                                          strategy=strategy)
            table_bins, band = weighted_bins(binned, part, part.of_labels(outcome[rows]),
                                             True, n_resamples, rng, level)
        (covariate, level_label), = spec.covariates.items()
        panels.append({
            "group": row["group"], "covariate": covariate, "level": level_label,
            "n": row["n"], "bias": row["bias"], "status": row["status"],
            "explained_by": row.get("explained_by"), "bins": table_bins,
            "consistency_band": band})
    return panels
