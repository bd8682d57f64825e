"""The windowed Poisson-binomial law of large cells (memory not growing with the
rows of a cell): against the O(n^2) recursion, the Bernstein windows against the binomial's
exact tails, the draws against the whole-array pmf's, and its memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from scipy import stats

from calaudit.local.poisson_binomial import poisson_binomial_pmf
from calaudit.numerics import poisson_binomial as pb


def direct_pmf(p: np.ndarray) -> np.ndarray:
    """The slow obvious reference: ``prod_i (1 - p_i + p_i t)`` by convolving one factor
    at a time (``np.convolve``, O(n^2))."""
    out = np.ones(1)
    for q in p:
        out = np.convolve(out, [1.0 - q, q])
    return out


def probabilities(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = rng.beta(0.5, 2.0, n)
    p[: n // 20] = 0.0
    p[n // 20: n // 10] = 1.0
    return rng.permutation(p)


def test_the_recursion_is_the_direct_convolution():
    p = probabilities(700, 1)
    assert np.allclose(poisson_binomial_pmf(p), direct_pmf(p), rtol=1e-12, atol=1e-17)


@pytest.mark.parametrize("n, chunk", [(1001, 997), (6000, 997), (6000, 4096), (9999, 1 << 14)])
def test_windowed_pmf_is_the_exact_pmf_on_its_window(n, chunk, monkeypatch):
    monkeypatch.setattr(pb, "CHUNK_ROWS", chunk)
    monkeypatch.setattr(pb, "WINDOW_ROWS", 1000)
    p = probabilities(n, n)
    exact = poisson_binomial_pmf(p)
    offset, got = pb.law(p)
    assert got.size < n // 2 and abs(got.sum() - 1.0) < 1e-15
    assert np.abs(got - exact[offset:offset + got.size]).max() < 1e-15
    assert exact[:offset].sum() < 1e-20 and exact[offset + got.size:].sum() < 1e-20
    u = np.random.default_rng(0).random(20_000)
    assert np.array_equal(pb.sample(got, u, offset), pb.sample(exact, u))


@pytest.mark.parametrize("value", [0.0, 1.0, 0.5])
def test_windowed_pmf_of_equal_probabilities(value, monkeypatch):
    """Binomial laws: no further from scipy's than the whole-array pmf."""
    monkeypatch.setattr(pb, "CHUNK_ROWS", 333)
    monkeypatch.setattr(pb, "WINDOW_ROWS", 100)
    n = 2000
    offset, got = pb.law(np.full(n, value))
    exact = stats.binom(n, value).pmf(np.arange(n + 1))
    whole = np.abs(pb.pmf(np.full(n, value)) - exact).max()  # 6e-14 at p = 1 (FFT rounding)
    assert np.abs(got - exact[offset:offset + got.size]).max() <= max(1e-15, whole)
    assert exact[:offset].sum() + exact[offset + got.size:].sum() < 1e-20


@pytest.mark.parametrize("n, q", [(50, 0.5), (10_000, 0.01), (10_000, 0.5), (400_000, 0.3)])
def test_windows_leave_out_at_most_the_tail_bound(n, q):
    lo, hi = pb.window(n * q, n * q * (1 - q), n)
    law = stats.binom(n, q)
    assert law.cdf(lo - 1) <= pb.TAIL and law.sf(hi) <= pb.TAIL
    assert hi - lo < 30 * np.sqrt(n * q * (1 - q)) + 60  # O(sqrt(n)), not O(n)


def test_cell_draws_of_a_large_cell_are_the_whole_array_pmf_draws():
    rng = np.random.default_rng(3)
    scores = rng.beta(2.0, 5.0, 150_000)
    cells = (scores > 0.6).astype(np.intp)  # cells of ~126k and ~24k rows
    got = pb.cell_counts(scores, cells, 2, 2000, np.random.default_rng(4))
    u = np.random.default_rng(4).random((2, 2000))
    for c in range(2):
        assert np.array_equal(got[c], pb.sample(pb.pmf(scores[cells == c]), u[c]))


def _traced_peak(function, *args) -> int:
    tracemalloc.start()
    try:
        function(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_large_cells_law_does_not_grow_with_its_rows():
    small, large = probabilities(200_000, 5), probabilities(800_000, 6)
    grown = _traced_peak(pb.law, large) - _traced_peak(pb.law, small)
    assert grown < 1 << 20, grown  # the window's O(sqrt(n)) only
    whole = _traced_peak(pb.pmf, large) - _traced_peak(pb.pmf, small)
    assert whole > 20 * 600_000  # the whole-array pmf: tens of bytes a row


def former_rna_cdf(k, p):
    """The group test's refined normal approximation from whole-array sums."""
    variance = float(np.sum(p * (1.0 - p)))
    sigma = np.sqrt(variance)
    gamma = float(np.sum(p * (1.0 - p) * (1.0 - 2.0 * p))) / sigma ** 3
    x = (k + 0.5 - float(np.sum(p))) / sigma
    value = stats.norm.cdf(x) + gamma * (1.0 - x * x) * stats.norm.pdf(x) / 6.0
    return float(min(1.0, max(0.0, value)))


@pytest.mark.parametrize("n", [3001, 65_537, 300_007])
def test_group_test_moments_are_the_whole_array_sums(n):
    """The group test's moments are numpy's sums of the products, and its refined normal
    approximation follows from them."""
    from calaudit.local import poisson_binomial as groups_pb

    p = probabilities(n, n + 1)
    assert groups_pb._moments(p) == (float(np.sum(p)), float(np.sum(p * (1.0 - p))),
                                     float(np.sum(p * (1.0 - p) * (1.0 - 2.0 * p))))
    mean = int(p.sum())
    for k in (mean - 3 * int(np.sqrt(n)), mean, mean + 40):
        assert groups_pb._rna_cdf(k, p) == pytest.approx(former_rna_cdf(k, p), abs=1e-15)


@pytest.mark.parametrize("n", [40, 3000])
def test_the_law_of_units_is_the_law_of_the_repeated_rows(n):
    """unit_law(p, d) against the exact pmf of every row repeated d_i times."""
    from calaudit.numerics.poisson_binomial import unit_law

    rng = np.random.default_rng(n)
    p = rng.uniform(0.0, 1.0, n)
    units = rng.integers(0, 5, n).astype(float)
    offset, law = unit_law(p, units)
    exact = pb.pmf(np.repeat(p, units.astype(int)))
    full = np.zeros(exact.size)
    full[offset:offset + law.size] = law
    assert np.abs(full - exact).max() < 1e-13


def test_unit_cell_counts_are_the_draws_of_the_repeated_rows():
    from calaudit.numerics.poisson_binomial import unit_cell_counts

    rng = np.random.default_rng(3)
    p = rng.uniform(0.0, 1.0, 5000)
    units = rng.integers(0, 4, 5000)
    cells = rng.integers(0, 7, 5000)
    mine = unit_cell_counts(p, units.astype(float), cells, 8, 300, np.random.default_rng(1))
    repeated = pb.cell_counts(np.repeat(p, units), np.repeat(cells, units), 8, 300,
                              np.random.default_rng(1))
    np.testing.assert_array_equal(mine, repeated)


def test_unit_cell_counts_are_the_same_on_every_executor(one_worker, monkeypatch):
    """Each cell's law is a task of the executor in force: serial, threads and Dask draw
    the same counts."""
    from calaudit import scale
    from tests.conftest import dask_partials

    rng = np.random.default_rng(8)
    p = rng.uniform(0.0, 1.0, 3000)
    units = rng.integers(0, 4, 3000).astype(float)
    cells = rng.integers(0, 6, 3000)

    def counts(executor):
        with scale.using(executor):
            return pb.unit_cell_counts(p, units, cells, 7, 50, np.random.default_rng(2))

    serial = counts(scale.SerialExecutor())
    calls = dask_partials(monkeypatch)
    for executor in (scale.ThreadExecutor(3), scale.DaskExecutor(one_worker)):
        np.testing.assert_array_equal(counts(executor), serial)
    assert "unit_law_partial" in calls


@pytest.mark.parametrize("power", [2, 3, 17, 1000, 4097])
def test_a_convolution_power_by_squaring_is_the_direct_power(power, monkeypatch):
    """Above DIRECT_SUPPORT points the power is taken by repeated squaring, each product
    cut to its window: the same law (to rounding) on the same window."""
    q = np.random.default_rng(power).uniform(0.05, 0.95, 40)
    mean, variance = float(q.sum()), float((q * (1 - q)).sum())
    direct = pb.convolution_power(0, pb.pmf(q), power, mean, variance, q.size)
    monkeypatch.setattr(pb, "DIRECT_SUPPORT", 1)
    squared = pb.convolution_power(0, pb.pmf(q), power, mean, variance, q.size)
    assert squared[0] == direct[0] and squared[1].size == direct[1].size
    np.testing.assert_allclose(squared[1], direct[1] / direct[1].sum(), rtol=0, atol=1e-14)


def test_a_huge_number_of_copies_keeps_to_its_window():
    """10^9 copies of a 50-row law: the window (about sqrt of the units), not the support
    (5 x 10^10 points), is computed."""
    q = np.random.default_rng(0).uniform(0.1, 0.9, 50)
    mean, variance = float(q.sum()), float((q * (1 - q)).sum())
    tracemalloc.start()
    offset, law = pb.convolution_power(0, pb.pmf(q), 10 ** 9, mean, variance, q.size)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert law.size < 10 ** 7 and peak < 2 ** 30
    assert (np.arange(law.size) + offset) @ law == pytest.approx(10 ** 9 * mean, rel=1e-12)
