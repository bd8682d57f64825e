"""Exact order statistics and quantiles by reductions (:mod:`calaudit.numerics.
order_statistics`): the k-th smallest values against a sort, and ``np.quantile``'s bytes
(method ``'linear'``) on ties, constant columns, 1 to 3 rows, rows that are not a whole
number of ranges, huge and negative values, infinities and signed zeros."""

from __future__ import annotations

import numpy as np
import pytest

from calaudit import scale
from calaudit.numerics import order_statistics as selection
from calaudit.numerics.order_statistics import (
    GATHER_ROWS,
    column_quantiles,
    keys_of,
    order_statistics,
    quantiles_of_rows,
    values_of,
)


def slow_quantile(x: np.ndarray, q: float) -> float:
    """Sort, then the type-7 formula as numpy writes it: ``h = (n - 1) q``, the values at
    ``floor(h)`` and the next rank (both the last at or past ``n - 1``), ``t = h - floor(h)``
    (``h + 1`` past the end, where both values are the same), ``a + (b - a) t`` below
    ``t = 1/2`` and ``b - (b - a)(1 - t)`` from there."""
    ordered = sorted(x.tolist())
    n = len(ordered)
    h = (n - 1) * q
    low = int(np.floor(h))
    if h >= n - 1:
        a = b = ordered[-1]
        low = -1
    else:
        a, b = ordered[low], ordered[low + 1]
    t = h - low
    with np.errstate(all="ignore"):
        diff = np.float64(b) - np.float64(a)
        return float(np.float64(b) - diff * (1 - t) if t >= 0.5 else np.float64(a) + diff * t)


def same_bytes(a, b) -> bool:
    return np.asarray(a, np.float64).tobytes() == np.asarray(b, np.float64).tobytes()


def columns(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    return {"normal": rng.normal(size=n),
            "ties": rng.integers(0, 5, n).astype(np.float64),
            "constant": np.full(n, 3.25),
            "huge": rng.normal(size=n) * 1e300,
            "negative": -rng.exponential(size=n) * 1e-300,
            "fractions": rng.choice([0.1, 0.7, -1e-310, 5e-324, 1.7e308], n),
            "infinite": rng.choice([-np.inf, -1.0, 2.0, np.inf], n),
            "negative_zero": rng.choice([-0.0, -2.5, 7.0], n),
            "positive_zero": rng.choice([0.0, -2.5, 7.0], n)}


LEVELS = (np.linspace(0.0, 1.0, 11), np.linspace(0.0, 1.0, 5)[1:-1], 0.5, 0.999,
          np.array([0.0, 1.0]), np.array([0.3, 0.3]))


@pytest.mark.parametrize("n", [1, 2, 3, 7, scale.TASK_ROWS + 1, 2 * scale.TASK_ROWS + 333])
def test_quantiles_are_numpys_bytes(n, monkeypatch):
    """Ranges of 5,000 rows (the last one short)."""
    monkeypatch.setattr(selection, "RANGE_ROWS", 5_000)
    rng = np.random.default_rng(n)
    table = columns(rng, n)
    rows = scale.ArrayRows(table)
    every = np.concatenate([np.atleast_1d(q) for q in LEVELS])
    found = column_quantiles(rows, dict.fromkeys(table, every))
    for name, x in table.items():
        with np.errstate(all="ignore"):
            assert same_bytes(found[name], np.quantile(x, every)), name
        if n <= 3 or name == "ties":
            slow = [slow_quantile(x, level) for level in every]
            assert same_bytes(found[name], slow), name


def test_quantiles_keep_the_shape_of_q():
    x = np.random.default_rng(0).normal(size=50)
    for q in LEVELS:
        found = quantiles_of_rows(scale.ArrayRows({"x": x}), "x", q)
        assert np.shape(found) == np.shape(q) and same_bytes(found, np.quantile(x, q))
    assert isinstance(quantiles_of_rows(scale.ArrayRows({"x": x}), "x", 0.5), np.float64)


def test_order_statistics_are_the_sorted_values():
    """Every rank of a column with ties and both zeros: the sorted values, -0.0 just
    before +0.0 (numpy compares them equal)."""
    rng = np.random.default_rng(3)
    x = rng.choice([-0.0, 0.0, 1.5, -3.0, np.inf], 2_000)
    x[:500] = rng.normal(size=500)
    found = order_statistics(scale.ArrayRows({"x": x}), {"x": np.arange(x.size)})["x"]
    assert np.array_equal(found, np.sort(x))
    zeros = found[found == 0]
    assert np.signbit(zeros[:np.count_nonzero(np.signbit(x) & (x == 0))]).all()
    assert not np.signbit(zeros[np.count_nonzero(np.signbit(x) & (x == 0)):]).any()


def test_keys_order_as_the_values():
    x = np.array([-np.inf, -1e308, -1.0, -5e-324, -0.0, 0.0, 5e-324, 1.0, 1e308, np.inf])
    keys = keys_of(x)
    assert (np.diff(keys.astype(object)) > 0).all()
    assert values_of(keys).tobytes() == x.tobytes()


def test_few_passes_and_their_partials():
    """Continuous values: counting passes, then one gathering; whole numbers: counting
    alone; a counting pass's partial is 1 MiB (the first, one column) or 64 KiB per open
    prefix; repeated values that are not short binary fractions: five counting passes."""
    rng = np.random.default_rng(1)
    n = 300_000
    q = np.linspace(0.0, 1.0, 11)
    cases = {"continuous": (rng.random(n), ["count", "gather"]),
             "whole": (rng.choice([18.0, 37.0, 90.0], n), ["count", "count"]),
             "repeated": (rng.choice([0.1, 0.3, 0.7], n), ["count"] * 5)}
    for name, (x, passes) in cases.items():
        costs: list[dict] = []
        assert same_bytes(quantiles_of_rows(scale.ArrayRows({"x": x}), "x", q, costs),
                          np.quantile(x, q))
        assert [c["pass"] for c in costs] == passes, name
        assert costs[0] == {"pass": "count", "open": 1, "partial_bytes": 1 << 20}
        for cost in costs[1:]:
            if cost["pass"] == "count":
                assert cost["open"] <= 2 * q.size
                assert cost["partial_bytes"] == cost["open"] << 16
            else:
                assert cost["partial_bytes"] <= 8 * GATHER_ROWS * cost["open"]


def test_the_same_on_every_executor():
    rng = np.random.default_rng(2)
    x = rng.gamma(2.0, size=3 * scale.TASK_ROWS + 17)
    rows = scale.ArrayRows({"x": x})
    with scale.using(scale.SerialExecutor()):
        serial = quantiles_of_rows(rows, "x", np.linspace(0.0, 1.0, 7))
    with scale.using(scale.ThreadExecutor()):
        threads = quantiles_of_rows(rows, "x", np.linspace(0.0, 1.0, 7))
    assert same_bytes(serial, threads)
    assert same_bytes(serial, np.quantile(x, np.linspace(0.0, 1.0, 7)))


def test_bad_ranks_and_no_rows_are_refused():
    rows = scale.ArrayRows({"x": np.arange(5.0)})
    with pytest.raises(ValueError, match="ranks"):
        order_statistics(rows, {"x": [5]})
    with pytest.raises(ValueError, match="no rows"):
        quantiles_of_rows(scale.ArrayRows({"x": np.zeros(0)}), "x", 0.5)
