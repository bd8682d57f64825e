"""Multiple-testing adjustment of p-values: ``holm`` (Holm 1979; the gates' default),
``bonferroni``, ``fdr_bh`` (Benjamini & Hochberg 1995) and ``none``, capped at 1 and
monotone as ``statsmodels.stats.multitest.multipletests``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

METHODS = ("holm", "bonferroni", "fdr_bh", "none")


def adjust_pvalues(p_values: ArrayLike, method: str = "holm",
                   weights: ArrayLike | None = None) -> NDArray[np.float64]:
    """Adjusted p-values, in the input order.

    Holm: sort ``p_(1) <= ... <= p_(k)``; ``p~_(i) = max_{j <= i} min(1, (k - j + 1) p_(j))``.

    ``weights`` (Holm and Bonferroni only; positive, any scale): the weighted procedures
    of Holm (1979), which spend ``alpha`` in proportion to the weights. Sort by
    ``p_j / w_j``; ``p~_(i) = max_{j <= i} min(1, p_(j) W_j / w_(j))`` with ``W_j`` the
    sum of the weights from ``j`` on (Bonferroni: ``W`` the sum of all weights). Equal
    weights give the unweighted procedures; the family-wise error stays at most ``alpha``
    under any dependence.

    >>> adjust_pvalues([0.01, 0.04, 0.03], "holm").round(6).tolist()
    [0.03, 0.06, 0.06]
    >>> adjust_pvalues([0.02, 0.04, 0.03], "holm", weights=[2, 1, 1]).round(6).tolist()
    [0.04, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.size == 0 or method == "none":
        return p.copy()
    w = np.ones(p.size) if weights is None else np.asarray(weights, dtype=np.float64)
    if method == "bonferroni":
        return np.minimum(1.0, p * w.sum() / w)
    if method == "holm":
        order = np.argsort(p / w, kind="stable")
        remaining = np.cumsum(w[order][::-1])[::-1]
        scaled = p[order] * remaining / w[order]
        adjusted = np.minimum(1.0, np.maximum.accumulate(scaled))
        out = np.empty_like(p)
        out[order] = adjusted
        return out
    if method == "fdr_bh":
        from scipy import stats  # imported on use: scipy.stats costs ~0.75 s at start-up

        return stats.false_discovery_control(p, method="bh")
    raise ValueError(f"unknown multiple-testing method {method!r}; choose from {METHODS}")
