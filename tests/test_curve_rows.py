"""The LCB curves' requests, grids and bandwidths of a dataset whose tasks read their own
rows (:mod:`calaudit.local.curve_rows`): the bits of :func:`calaudit.local.lcb_curves.
curve_grid` on each group's values, with the groups' rows cut across many ranges."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from calaudit import scale
from calaudit.local.curve_rows import dataset_grids, dataset_specs
from calaudit.local.lcb_curves import curve_grid
from calaudit.scale import ArrayRows, SerialExecutor, ThreadExecutor


class Rows(ArrayRows):
    reads_own_rows = True

    def covariate_column(self, name: str) -> str:
        return "x:" + name


def _data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    codes = rng.choice(4, n, p=[0.6, 0.3, 0.08, 0.02])
    # Silverman's spread: the IQR's of a skewed group, the sd of uniform ones
    x = np.where(codes == 0, rng.lognormal(0.0, 1.5, n), rng.uniform(20.0, 70.0, n))
    x[::7] = np.round(x[::7], 1)  # ties
    x[codes == 3] = 2.5  # a constant group
    x[np.flatnonzero(codes == 2)[:3]] = [-0.0, 0.0, -1e3]
    covariates = [SimpleNamespace(name="age", kind="numeric", categories=()),
                  SimpleNamespace(name="region", kind="categorical",
                                  categories=("a", "b", "c", "d"))]
    return SimpleNamespace(rows=Rows({"x:age": x, "x:region": codes}), n=n,
                           covariates=covariates), x, codes


@pytest.mark.parametrize("executor", [SerialExecutor, lambda: ThreadExecutor(2)],
                         ids=["serial", "threads"])
@pytest.mark.parametrize("grouped", [True, False], ids=["groups", "all"])
def test_grids_are_those_of_each_groups_values(executor, grouped):
    data, x, codes = _data(20_011, 3)
    groupings = [data.covariates[1]] if grouped else []
    with scale.using(executor()):
        specs, rows, counts, ranges = dataset_specs(data, groupings, 5, task_rows=997)
        grids, bandwidths = dataset_grids(rows, counts, ranges, 17)
    want = [x[codes == c] for c in range(4)] if grouped else [x]
    assert [s.n for s in specs] == [v.size for v in want]
    assert len(ranges) > 20
    for values, grid, h in zip(want, grids, bandwidths, strict=True):
        grid_want, h_want = curve_grid(values, 17)
        assert grid.tobytes() == grid_want.tobytes()
        assert h == h_want


def test_small_groups_are_left_out():
    data, _, codes = _data(3_000, 4)
    specs = dataset_specs(data, [data.covariates[1]], int((codes == 3).sum()) + 1)[0]
    assert [s.group for s in specs] == ["a", "b", "c"]
