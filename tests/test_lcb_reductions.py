"""The LCB curves' normalisers and centres as reductions over the fixed row ranges
(``calaudit.local.lcb_curves.curve_sums``): the former bytes when the rows fit one range, the
same bytes on every executor when they do not, and the exact sums to rounding."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calaudit import scale
from calaudit.local import lcb_curves
from calaudit.scale import ROW_BLOCK, SerialExecutor, ThreadExecutor
from tests.test_lcb_columns import _requests


def _former_normalisers(x, grid, h):
    """The former ``_normalisers``: one pairwise sum over the group's rows per grid point."""
    return np.array([max(lcb_curves.raw_weights(grid[t:t + 1], x, h).sum(), np.finfo(float).tiny)
                     for t in range(grid.size)])


def test_one_range_gives_the_former_bytes():
    rng = np.random.default_rng(5)
    n = 3 * ROW_BLOCK + 17  # one range of CURVE_ROWS
    requests = _requests(rng, n)
    values = rng.normal(size=n)
    design = lcb_curves.curve_design(requests, rng.uniform(0.5, 2, n), 12, dense=False)
    for k, req in enumerate(requests):
        former = _former_normalisers(req.x, design.grids[k], design.bandwidths[k])
        assert design.normalisers[k].tobytes() == former.tobytes()
    assert [c.tobytes() for c in design.centres(values)] == [
        design.centre(k, values).tobytes() for k in range(len(requests))]


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_several_ranges_give_the_serial_bytes_on_threads(threads, monkeypatch):
    monkeypatch.setattr(lcb_curves, "CURVE_ROWS", ROW_BLOCK)  # 4 ranges
    rng = np.random.default_rng(6)
    n = 3 * ROW_BLOCK + 17
    requests = _requests(rng, n)
    values = rng.normal(size=n)
    sums = rng.uniform(0.5, 2, n)
    with scale.using(SerialExecutor()):
        serial = lcb_curves.curve_design(requests, sums, 12, dense=False)
        serial_centres = serial.centres(values)
    with scale.using(ThreadExecutor(threads)):
        threaded = lcb_curves.curve_design(requests, sums, 12, dense=False)
        threaded_centres = threaded.centres(values)
    assert [a.tobytes() for a in serial.normalisers] == [
        b.tobytes() for b in threaded.normalisers]
    assert [a.tobytes() for a in serial_centres] == [
        b.tobytes() for b in threaded_centres]


def test_several_ranges_are_the_exact_sums_to_rounding(monkeypatch):
    monkeypatch.setattr(lcb_curves, "CURVE_ROWS", ROW_BLOCK)
    rng = np.random.default_rng(7)
    n = 3 * ROW_BLOCK + 17
    requests = _requests(rng, n)
    values = rng.normal(size=n)
    design = lcb_curves.curve_design(requests, rng.uniform(0.5, 2, n), 9, dense=False)
    centres = design.centres(values)
    for k, req in enumerate(requests):
        w = lcb_curves.raw_weights(design.grids[k], req.x, design.bandwidths[k])
        exact = np.array([math.fsum(row) for row in w])
        assert np.allclose(design.normalisers[k], exact, rtol=1e-13, atol=0)
        normed = w / design.normalisers[k][:, None]
        exact = np.array([math.fsum(row * values[req.rows]) for row in normed])
        assert np.allclose(centres[k], exact, rtol=1e-11, atol=1e-15)
