"""The weighted ECE test's row redraws (label-dependent sampling) against a double loop
over rows and redraws: the documented draws (each block's rows in stable cell order, one
32-bit threshold comparison per row and redraw) and the weights following each label."""

from __future__ import annotations

import numpy as np
import pytest

from calaudit.data.weights import SampleWeights
from calaudit.inference.weighted_tests import STREAM, null_sums
from calaudit.metrics.ece import notion_outcomes
from calaudit.numerics.block_draws import label_thresholds, uniform_words
from calaudit.scale import ROW_BLOCK, block_rng, stream_seed


def loop_sums(scores, outcomes, cells, n_cells, d, r, q, seed, b):
    """Per-cell weight, weighted score and event weight of the observed labels and of
    ``b`` redraws, one row and one redraw at a time."""
    seen = np.zeros((3, n_cells))
    drawn = np.zeros((3, n_cells, b))
    for i in range(scores.size):
        w = d[i] if outcomes[i] else d[i] / r[i]
        seen[:, cells[i]] += (w, w * scores[i], w * outcomes[i])
    for start in range(0, scores.size, ROW_BLOCK):
        rows = np.arange(start, min(scores.size, start + ROW_BLOCK))
        rows = rows[np.argsort(cells[rows], kind="stable")]
        words = uniform_words(block_rng(seed, STREAM, start // ROW_BLOCK), rows.size, b)
        thresholds = label_thresholds(q[rows])
        for k, i in enumerate(rows):
            for j in range(b):
                label = words[k, j] < thresholds[k, 0]
                w = d[i] if label else d[i] / r[i]
                drawn[:, cells[i], j] += (w, w * scores[i], w * label)
    return seen, drawn


@pytest.mark.parametrize("kind", ["design", "frequency"])
def test_row_redraws_equal_a_loop_over_rows_and_redraws(kind) -> None:
    rng = np.random.default_rng(3)
    n, b = ROW_BLOCK + 900, 5
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.random(n) < p).astype(np.int64)
    design = (rng.uniform(0.5, 2.0, n) if kind == "design"
              else np.ones(n))
    rate = np.where(rng.random(n) < 0.5, 0.1, 0.4)
    weights = SampleWeights(design, kind, rate)
    binned = notion_outcomes(y, np.column_stack([1 - p, p]), n_bins=7, strategy="uniform")
    seen, drawn = null_sums(binned, weights, True, b, np.random.default_rng(11))
    seed = stream_seed(np.random.default_rng(11))
    q = weights.null_positive_rate(binned.scores)
    want_seen, want_drawn = loop_sums(binned.scores, binned.outcomes, binned.cells.index,
                                      binned.cells.n_cells, design, rate, q, seed, b)
    for k, field in enumerate(("count", "score", "event")):
        np.testing.assert_allclose(getattr(seen, field)[:, 0], want_seen[k], rtol=1e-12)
        np.testing.assert_allclose(getattr(drawn, field), want_drawn[k], rtol=1e-12)
