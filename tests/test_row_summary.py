"""The binned stages' reductions over a row source (:mod:`calaudit.metrics.row_summary`,
:mod:`calaudit.metrics.row_laws`) against the whole-array computations: the per-bin and
per-cell sums are their bytes, the Brier and log-loss sums equal to 1e-12, the laws of
events per bin those of every member at once."""

from __future__ import annotations

import numpy as np
import pytest

from calaudit import scale
from calaudit.metrics.brier import brier_score, brier_score_binary
from calaudit.metrics.brier_decomposition import decompose_binned, decomposition_from_sums
from calaudit.metrics.diagrams import score_histogram
from calaudit.metrics.ece import notion_outcomes
from calaudit.metrics.ece_variants import CanonicalBins, canonical_from_sums, classwise_outcomes
from calaudit.metrics.log_loss import clipped_rows, log_loss
from calaudit.metrics.row_laws import cell_laws, draw_events
from calaudit.metrics.row_summary import Binning, binned_summary, class_panels
from calaudit.numerics.poisson_binomial import cell_members, law, sample

#: Two reduction ranges, the second one short.
N = scale.TASK_ROWS + 5_001


def rows_of(m: int, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.full(m, 0.8), N)
    proba[:40] = np.eye(m)[rng.integers(0, m, 40)]  # exact 0 and 1: edges, clipped logs
    y = (rng.random(N)[:, None] > np.cumsum(proba, axis=1)).sum(axis=1).clip(0, m - 1)
    y[:10] = (np.argmax(proba[:10], axis=1) + 1) % m  # probability 0: a clipped log
    return y.astype(np.int64), proba


@pytest.mark.parametrize(("m", "strategy"), [(2, "uniform"), (2, "quantile"),
                                             (4, "uniform")])
def test_the_summary_is_the_whole_array_sums(m, strategy):
    y, proba = rows_of(m)
    rows = scale.ArrayRows({"y": y, "proba": proba})
    summary = binned_summary(rows, Binning.build(rows, 15, strategy))
    binned = notion_outcomes(y, proba, n_bins=15, strategy=strategy)
    per_class = classwise_outcomes(y, proba, n_bins=15, strategy=strategy)
    for panel, reference in [(0, binned), *zip(class_panels(m), per_class)]:
        got, sums = summary.sums(panel), reference.sums()
        for name in ("count", "score", "event"):
            assert getattr(got, name).tobytes() == getattr(sums, name).tobytes()
        assert decomposition_from_sums(*summary.moments(panel)) == \
            decompose_binned(reference)
    canonical = CanonicalBins.build(y, proba, 15)
    count, prob_sums, label_sums = summary.canonical_sums()
    assert count.size == canonical.cells.n_cells
    assert canonical_from_sums(count, prob_sums, label_sums, "tv").tobytes() == \
        canonical.ece("tv").tobytes()
    assert summary.brier == pytest.approx(brier_score(y, proba), rel=1e-12)
    if m == 2:
        assert summary.brier_binary == pytest.approx(brier_score_binary(y, proba), rel=1e-12)
    assert summary.log_loss == pytest.approx(log_loss(y, proba), rel=1e-12)
    assert summary.clipped_rows == clipped_rows(y, proba) > 0
    assert summary.histogram.astype(int).tolist() == score_histogram(binned.scores)["counts"]


def test_the_laws_of_events_are_those_of_every_member():
    """Each bin's law, multiplied range by range, is the law of all its rows (within the
    FFT's rounding), and drives the same inverse-CDF draws."""
    y, proba = rows_of(2)
    rows = scale.ArrayRows({"y": y, "proba": proba})
    binning = Binning(15)
    laws = cell_laws(rows, binning, (0, 1))
    u = np.random.default_rng(1).random((15, 400))
    for panel, scores in ((0, proba[:, 1]), (1, proba[:, 0])):
        members = cell_members(scores, binning.index(panel, scores), 15)
        spanning = 0
        for cell, values in enumerate(members):
            if not values.size:
                assert laws[panel][cell] is None
                continue
            offset, pmf = law(values)
            got_offset, got = laws[panel][cell]
            whole = np.zeros(offset + pmf.size)
            whole[offset:] = pmf
            window = whole[got_offset:got_offset + got.size]
            assert np.abs(window - got).max() < 1e-13
            assert 1.0 - window.sum() < 1e-13  # the window holds the mass
            spanning += values.size > 5_001
            assert np.array_equal(sample(got, u[cell], got_offset), sample(pmf, u[cell], offset))
        assert spanning  # some bins take rows of both ranges
    events = draw_events(laws[0], u)
    assert events.shape == (15, 400) and np.all(events[[c for c in range(15)
                                                         if laws[0][c] is None]] == 0)


@pytest.mark.parametrize("m", [2, 3])
def test_the_weighted_summary_is_the_row_by_row_weighted_sums(m):
    """A weight column ``w``: per bin and panel the sums of ``w``, ``w s``, ``w o``, ``w
    s^2``, ``w o s`` and the Brier / log-loss sums of a loop over rows (1e-12); unit
    weights give the unweighted table's bytes."""
    rng = np.random.default_rng(m)
    n = 400
    proba = rng.dirichlet(np.ones(m), n)
    y = rng.integers(0, m, n)
    w = rng.uniform(0.0, 3.0, n)
    binning = Binning.build(scale.ArrayRows({"y": y, "proba": proba}), 10, "uniform")
    summary = binned_summary(scale.ArrayRows({"y": y, "proba": proba, "w": w}), binning)
    assert summary.n == pytest.approx(w.sum(), rel=1e-12)
    table = np.zeros_like(summary.table)
    brier = loss = 0.0
    for i in range(n):
        panels = [(proba[i, 1], float(y[i] == 1)) if m == 2 else
                  (proba[i].max(), float(np.argmax(proba[i]) == y[i]))]
        panels += [(proba[i, k], float(y[i] == k)) for k in range(1 if m == 2 else m)]
        for panel, (s, o) in enumerate(panels):
            b = min(int(np.ceil(s * 10)) - 1, 9) if s > 0 else 0
            table[panel, :, b] += w[i] * np.array([1.0, s, o, s * s, o * s])
        brier += w[i] * sum((proba[i, k] - (y[i] == k)) ** 2 for k in range(m))
        loss -= w[i] * np.log(max(proba[i, y[i]], np.finfo(float).eps))
    np.testing.assert_allclose(summary.table, table, rtol=1e-12, atol=1e-12)
    assert summary.brier == pytest.approx(brier / w.sum(), rel=1e-12)
    assert summary.log_loss == pytest.approx(loss / w.sum(), rel=1e-12)
    unit = binned_summary(scale.ArrayRows({"y": y, "proba": proba, "w": np.ones(n)}), binning)
    plain = binned_summary(scale.ArrayRows({"y": y, "proba": proba}), binning)
    assert unit.table.tobytes() == plain.table.tobytes()
    assert unit.brier == pytest.approx(plain.brier, rel=1e-12)
