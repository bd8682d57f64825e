"""Level sums of the label redraws of a random-feature local test, for the score members.

The labels of row block ``b`` come from the stream ``(seed, stream, b)``
(:mod:`calaudit.numerics.block_draws`), so :func:`level_sums_partial` draws them again and
adds up, per covariate level, ``sum_{i in l} 1{y*_i = k}`` (exact in any order).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from calaudit.numerics.block_draws import binary_labels_into, label_indicators, label_thresholds
from calaudit.scale import TASK_ROWS, block_rng, blocks


def _one_hot(codes: NDArray[np.integer], n_levels: int) -> sparse.csr_matrix:
    """Rows of ``H`` for level columns ``codes`` (rows, d), offsets already added."""
    rows, d = codes.shape
    return sparse.csr_matrix((np.ones(rows * d, dtype=np.float32),
                              (np.repeat(np.arange(rows), d), codes.ravel())),
                             shape=(rows, n_levels))


def level_sums_partial(start: int, stop: int, *, rows: Any, seed: int, stream: str,
                       n_resamples: int, labels: int, n_levels: int, top: bool
                       ) -> dict[str, NDArray]:
    """Per level and class, the redrawn indicators' sums of the rows ``[start, stop)``
    (``"sums"`` (L, classes, B)); with ``top``, the sums of ``1{y* = argmax p}``
    (``"top"`` (L, B)). ``rows`` holds ``proba`` (the probability columns of the test:
    binary ``p_1`` as (n, 1)), ``codes`` (n, d) level columns and, with ``top``, ``top``
    (argmax p)."""
    read = rows.read(start, stop, ["proba", "codes"] + (["top"] if top else []))
    proba, codes = read["proba"], read["codes"]
    thresholds = label_thresholds(proba[:, 0] if labels == 1 else proba)
    classes = 1 if labels == 1 else labels
    out = {"sums": np.zeros((n_levels, classes, n_resamples))}
    if top:
        out["top"] = np.zeros((n_levels, n_resamples))
    for block, lo, hi in blocks(start, stop):
        lo, hi = lo - start, hi - start
        h_t = _one_hot(codes[lo:hi], n_levels).T.tocsr()
        rng = block_rng(seed, stream, block)
        if labels == 1:
            y = np.empty((hi - lo, n_resamples), dtype=np.float32)
            binary_labels_into(rng, thresholds[lo:hi], y)
            out["sums"][:, 0] += h_t @ y
            continue
        drawn = label_indicators(rng, thresholds[lo:hi], n_resamples, labels)
        for k in range(classes):
            indicator = drawn[k].astype(np.float32)
            out["sums"][:, k] += h_t @ indicator
            if top:
                chosen = np.flatnonzero(read["top"][lo:hi] == k)
                if chosen.size:
                    picked = _one_hot(codes[lo:hi][chosen], n_levels).T.tocsr()
                    out["top"] += picked @ indicator[chosen]
    return out


def redrawn_sums(rows: Any, labels: int, n_levels: int, seed: int, stream: str,
                 n_resamples: int, top: bool, task_rows: int = TASK_ROWS
                 ) -> dict[str, NDArray]:
    """:func:`level_sums_partial` over every row of the source ``rows`` (columns
    ``proba``, ``codes`` and, with ``top``, ``top``; placed or reading its own rows)."""
    from calaudit.inference.feature_tests import reduce_rows

    shared = {"seed": int(seed), "stream": stream, "n_resamples": int(n_resamples),
              "labels": labels, "n_levels": int(n_levels), "top": top}
    return reduce_rows(level_sums_partial, rows.n, task_rows, rows, shared)
