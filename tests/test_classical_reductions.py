"""Spiegelhalter's z and Hosmer-Lemeshow as reductions over the fixed row ranges
(``calaudit.inference.classical``): the former whole-array bytes up to one range, the same
bytes on any executor above, and the slow formulas' values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from threadpoolctl import threadpool_limits

from calaudit import scale
from calaudit.inference.classical import (
    hosmer_lemeshow_partial,
    hosmer_lemeshow_test,
    spiegelhalter_partial,
    spiegelhalter_test,
)
from calaudit.scale import TASK_ROWS, ArrayRows, SerialExecutor, ThreadExecutor


def former_spiegelhalter(y, p):
    """The whole-array code before the reduction (main, 2026-11-23)."""
    y = np.asarray(y, dtype=np.float64)
    centred = 1.0 - 2.0 * p
    variance = float(np.sum(centred * centred * p * (1.0 - p)))
    z = float(np.sum((y - p) * centred) / math.sqrt(variance))
    return z, float(2.0 * stats.norm.sf(abs(z))), variance


def former_hosmer_lemeshow(y, p, groups):
    y = np.asarray(y, dtype=np.float64)
    breaks = np.unique(np.quantile(p, np.linspace(0.0, 1.0, groups + 1)))
    index = np.searchsorted(breaks[1:-1], p, side="left")
    size = max(breaks.size - 1, 1)
    events = np.bincount(index, weights=y, minlength=size)
    count = np.bincount(index, minlength=size).astype(np.float64)
    expected_events = np.bincount(index, weights=p, minlength=size)
    keep = count > 0
    observed = np.column_stack([count - events, events])[keep]
    expected = np.column_stack([count - expected_events, expected_events])[keep]
    statistic = float(np.sum((observed - expected) ** 2 / expected))
    return statistic, observed, expected


def data(n, seed, ties=False):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 5, n)
    if ties:
        p = np.round(p, 2)
    y = (rng.uniform(size=n) < np.clip(1.1 * p, 0, 1)).astype(np.int64)
    return y, p


@pytest.mark.parametrize("n", [50, 4_097, TASK_ROWS])
@pytest.mark.parametrize("ties", [False, True])
def test_one_range_gives_the_former_bytes(n, ties):
    y, p = data(n, n, ties)
    s = spiegelhalter_test(y, p)
    assert (s.z, s.p_value, s.variance) == former_spiegelhalter(y, p)
    h = hosmer_lemeshow_test(y, p, 10)
    statistic, observed, expected = former_hosmer_lemeshow(y, p, 10)
    assert h.statistic == statistic
    assert h.observed.tobytes() == observed.tobytes()
    assert h.expected.tobytes() == expected.tobytes()


def test_several_ranges_agree_with_exact_sums():
    y, p = data(3 * TASK_ROWS + 11, 4)
    s = spiegelhalter_test(y, p)
    centred = 1.0 - 2.0 * p
    variance = math.fsum(centred * centred * p * (1.0 - p))
    score = math.fsum((y - p) * centred)
    assert s.variance == pytest.approx(variance, rel=1e-13)
    assert s.z == pytest.approx(score / math.sqrt(variance), rel=1e-12)
    h = hosmer_lemeshow_test(y, p, 10)
    statistic, observed, expected = former_hosmer_lemeshow(y, p, 10)
    assert h.observed.tobytes() == observed.tobytes()  # counts are exact
    np.testing.assert_allclose(h.expected, expected, rtol=1e-13)
    assert h.statistic == pytest.approx(statistic, rel=1e-11)


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_the_bytes_do_not_depend_on_the_thread_count(threads):
    y, p = data(2 * TASK_ROWS + 5, 6, ties=True)
    with scale.using(SerialExecutor()):
        serial = spiegelhalter_test(y, p), hosmer_lemeshow_test(y, p, 8)
    with scale.using(ThreadExecutor(threads)):
        threaded = spiegelhalter_test(y, p), hosmer_lemeshow_test(y, p, 8)
    assert repr(serial[0]) == repr(threaded[0])
    assert serial[1].statistic == threaded[1].statistic
    assert serial[1].expected.tobytes() == threaded[1].expected.tobytes()


def test_the_partials_do_not_use_threaded_blas():
    """A Dask worker runs one BLAS thread, the client several: the partials must give the
    same bits under any BLAS thread count."""
    y, p = data(TASK_ROWS, 8)
    rows = ArrayRows({"y": y, "p": p})
    inner = np.quantile(p, [0.25, 0.5, 0.75])
    shared = {"rows": rows, "inner": inner, "size": 4}
    with threadpool_limits(1):
        one = (spiegelhalter_partial(0, p.size, rows=rows),
               hosmer_lemeshow_partial(0, p.size, **shared))
    with threadpool_limits(4):
        many = (spiegelhalter_partial(0, p.size, rows=rows),
                hosmer_lemeshow_partial(0, p.size, **shared))
    for a, b in zip(one, many):
        assert all(a[k].tobytes() == b[k].tobytes() for k in a)


def slow_weighted_spiegelhalter(y, p, d, r, frequency):
    """Row by row: ``T = sum w (y - p)(1 - 2p)``, ``V = sum a (1 - 2p)^2 [q (1 - p)^2 +
    (1 - q) p^2 / r^2]`` with ``q = p / (p + r (1 - p))``."""
    score = variance = 0.0
    for yi, pi, di, ri in zip(y, p, d, r):
        qi = pi / (pi + ri * (1.0 - pi))
        wi = di if yi else di / ri
        ai = di if frequency else di * di
        score += wi * (yi - pi) * (1.0 - 2.0 * pi)
        variance += ai * (1.0 - 2.0 * pi) ** 2 * (qi * (1.0 - pi) ** 2
                                                 + (1.0 - qi) * pi * pi / (ri * ri))
    return score / math.sqrt(variance), variance


def test_weighted_spiegelhalter_is_the_unweighted_reduction_with_weights():
    from calaudit.data.weights import SampleWeights
    from calaudit.inference.classical import spiegelhalter

    y, p = data(3_000, 12)
    rng = np.random.default_rng(12)
    d, r = rng.uniform(0.5, 3.0, p.size), rng.uniform(0.2, 1.0, p.size)
    for kind in ("design", "frequency"):
        result = spiegelhalter(y, p, SampleWeights(d, kind, negative_rate=r))
        z, variance = slow_weighted_spiegelhalter(y, p, d, r, kind == "frequency")
        assert result.statistic == pytest.approx(z, rel=1e-12)
        assert result.params["variance"] == pytest.approx(variance, rel=1e-12)
    counts = rng.integers(1, 4, p.size)
    weighted = spiegelhalter(y, p, SampleWeights(counts.astype(float), "frequency"))
    expanded = spiegelhalter(np.repeat(y, counts), np.repeat(p, counts))
    assert weighted.statistic == pytest.approx(expanded.statistic, rel=1e-12)
    assert weighted.p_value == pytest.approx(expanded.p_value, rel=1e-12)
    unit = spiegelhalter(y, p, SampleWeights(np.ones(p.size), "design"))
    assert (unit.statistic, unit.p_value) == (spiegelhalter(y, p).statistic,
                                              spiegelhalter(y, p).p_value)
