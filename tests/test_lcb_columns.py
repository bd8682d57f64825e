"""The LCB curves' weights and engine columns evaluated on demand (a block of rows or of
grid points at a time) against the dense (points x rows) and (n, points x requests)
arrays they replace: the same bytes."""

import numpy as np

from calaudit.local import lcb_curves
from calaudit.local.lcb_cells import cell_kernel
from calaudit.local.lcb_features import DENSE_OUTPUT, _features, cell_matmul
from calaudit.scale import ROW_BLOCK
from tests.reference_local import curve_weights


def _dense_columns(requests, weight_sums, points, dtype):
    """The pre-streaming construction: every request's (points, rows) weights, divided by
    ``D_j``, placed in an (n, points x requests) array."""
    width = sum(curve_weights(req.x, points)[0].size for req in requests)
    columns = np.zeros((weight_sums.size, width), dtype=dtype)
    start = 0
    for req in requests:
        grid, w, _ = curve_weights(req.x, points)
        columns[req.rows, start:start + grid.size] = (w / weight_sums[req.rows][None, :]).T
        start += grid.size
    return columns


def _requests(rng, n):
    """Overlapping requests (two covariates x groups), one constant (a one-point grid)."""
    x0, x1 = rng.normal(size=n), rng.uniform(0, 5, n)
    group = rng.integers(0, 3, n)
    out = [lcb_curves.CurveRequest("x0", None, "all", np.arange(n), x0)]
    for g in range(3):
        rows = np.flatnonzero(group == g)
        out.append(lcb_curves.CurveRequest("x1", "g", str(g), rows, x1[rows]))
    rows = np.flatnonzero(group == 0)
    out.append(lcb_curves.CurveRequest("flat", "g", "0", rows, np.full(rows.size, 2.0)))
    return out


def test_design_weights_and_centres_are_the_dense_ones():
    rng = np.random.default_rng(3)
    n = 3 * ROW_BLOCK + 17
    requests = _requests(rng, n)
    values = rng.normal(size=n)
    for points in (7, 12, 40):
        design = lcb_curves.curve_design(requests, rng.uniform(0.5, 2, n), points, dense=False)
        assert design.columns.shape == (n, 0)
        for k, req in enumerate(requests):
            grid, w, h = curve_weights(req.x, points)
            assert np.array_equal(design.grids[k], grid) and design.bandwidths[k] == h
            assert np.array_equal(design.weights(k), w)
            assert np.array_equal(design.weights(k, 5, 300, 2, 6), w[2:6, 5:300])
            assert np.array_equal(design.centre(k, values), w @ values[req.rows])


def test_curve_columns_are_the_dense_columns_block_by_block():
    rng = np.random.default_rng(4)
    n = 2 * ROW_BLOCK + 300
    requests = _requests(rng, n)
    sums = rng.uniform(0.5, 2.0, n)
    for dtype in (np.float32, np.float64):
        dense = _dense_columns(requests, sums, 9, dtype)
        design = lcb_curves.curve_design(requests, sums, 9, dtype=dtype)
        assert design.columns.dtype == dtype and np.array_equal(design.columns, dense)
        lazy = lcb_curves.CurveColumns(
            lcb_curves.curve_design(requests, sums, 9, dense=False), sums, dtype)
        assert lazy.shape == dense.shape
        for lo, hi in ((0, ROW_BLOCK), (ROW_BLOCK, 2 * ROW_BLOCK), (2 * ROW_BLOCK, n),
                       (10, 11), (n - 5, n + 50)):
            got = lazy[lo:hi]
            assert got.dtype == dtype and np.array_equal(got, dense[lo:hi])


def test_cell_matmul_of_curve_columns_equals_the_dense_product_bit_for_bit():
    """Both branches of :func:`cell_partial` (placed columns; per-cell GEMMs) give the
    bytes of the materialised float32 columns."""
    rng = np.random.default_rng(5)
    n = 2 * ROW_BLOCK + 123
    z = np.column_stack([rng.uniform(0, 2, n), 2.0 * rng.integers(0, 3, n)])
    kernel = cell_kernel(z, [1])
    feats = _features(kernel, 32, 7)
    sums = rng.uniform(0.5, 2.0, n)
    targets = np.sort(rng.choice(n, 200, replace=False))
    for points in (3, DENSE_OUTPUT // kernel.n_cells):  # n_cells * width <= / > DENSE_OUTPUT
        requests = [lcb_curves.CurveRequest("x", "g", str(g), rows, z[rows, 0]) for g in range(3)
                    if (rows := np.flatnonzero(z[:, 1] == 2.0 * g)).size]
        dense = _dense_columns(requests, sums, points, np.float32)
        lazy = lcb_curves.CurveColumns(
            lcb_curves.curve_design(requests, sums, points, dense=False), sums)
        assert np.array_equal(cell_matmul(kernel, feats, lazy, targets),
                              cell_matmul(kernel, feats, dense, targets))


def test_cell_index_is_numpy_unique_of_the_rows():
    """The O(n) cell index against ``np.unique(axis=0, return_inverse=True)``: the same
    distinct rows in the same (lexicographic) order and the same index per row."""
    from calaudit.local.lcb_cells import cell_index

    rng = np.random.default_rng(8)
    n = 5000
    onehot = np.eye(5)[rng.integers(0, 5, n)] * 1.7 - 0.4        # one covariate
    second = np.eye(3)[rng.integers(0, 3, n)] * np.array([2.0, -1.0, 0.5])
    numeric = rng.normal(size=(n, 1))
    table = np.hstack([numeric, onehot, second, rng.integers(0, 2, (n, 1)) * -3.0])
    for columns in ([1], [1, 2, 3, 4, 5], list(range(1, 10)), [9, 6, 2]):
        reps, cells = cell_index(table, columns)
        want_reps, want_cells = np.unique(table[:, columns], axis=0, return_inverse=True)
        assert np.array_equal(reps, want_reps)
        assert cells.dtype == np.intp and np.array_equal(cells, want_cells.reshape(-1))
    assert cell_index(table, [0]) is None                        # n distinct values
    assert cell_index(table, list(range(1, 10)), limit=20) is None  # 30 cells > 20
