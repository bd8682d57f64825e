"""The local stage's per-row arrays built without (n, columns) temporaries or copies: each
on-demand construction against the whole-array construction it replaces (the same bytes)."""

from types import SimpleNamespace

import numpy as np
import pytest

from calaudit.local import groups as grp
from calaudit.local.bandwidth import subsample_rows
from calaudit.local.encoding import EncodedRows, encode_covariates
from calaudit.local.kernel import FILL_ROWS, ScaledRows, product_gram
from calaudit.local.lcb_bandwidth import EstimationRows, estimation_gram
from calaudit.local.lcb_cells import (
    MAX_CELLS,
    categorical_columns,
    cell_kernel,
    rows_cell_kernel,
)


def _covariates(n, seed=1, levels=4):
    rng = np.random.default_rng(seed)
    return [
        SimpleNamespace(name="age", kind="numeric", values=rng.normal(50, 10, n),
                        categories=()),
        SimpleNamespace(name="region", kind="categorical",
                        values=rng.integers(0, levels, n).astype(np.int16),
                        categories=tuple(f"r{k}" for k in range(levels))),
        SimpleNamespace(name="flat", kind="numeric", values=np.full(n, 3.0), categories=()),
        SimpleNamespace(name="count", kind="numeric", values=rng.integers(0, 9, n),
                        categories=()),
    ]


def _former_product_gram(prob, prob_gamma, cov, cov_gamma):
    """The construction before: scaled copies, then ``hstack``."""
    def matrix(a):
        a = np.asarray(a, dtype=np.float64)
        return a[:, None] if a.ndim == 1 else a
    parts = [np.sqrt(prob_gamma) * matrix(prob)]
    if cov is not None:
        parts.append(np.sqrt(cov_gamma) * matrix(cov))
    return np.ascontiguousarray(np.hstack(parts))


@pytest.mark.parametrize("standardize", [True, False])
def test_encoded_rows_are_the_encoded_matrix(standardize):
    n = 2000
    covs = _covariates(n)
    dense = encode_covariates(covs, standardize=standardize)
    lazy = encode_covariates(covs, standardize=standardize, lazy=True)
    assert isinstance(lazy.features, EncodedRows)
    assert (lazy.columns, lazy.encoding, lazy.blocks) == (dense.columns, dense.encoding,
                                                          dense.blocks)
    full = dense.features
    assert lazy.features.shape == full.shape
    assert np.array_equal(np.asarray(lazy.features), full)
    rows = np.sort(np.random.default_rng(2).choice(n, 300, replace=False))
    assert np.array_equal(lazy.features[rows], full[rows])
    assert np.array_equal(lazy.features[17:1203], full[17:1203])
    assert np.array_equal(lazy.features[rows, 1:4], full[rows, 1:4])
    for j in range(full.shape[1]):
        assert np.array_equal(lazy.features.column(j), full[:, j])


def test_product_gram_fills_the_former_rows():
    rng = np.random.default_rng(4)
    n = FILL_ROWS + 1234                                    # two fill blocks
    covs = _covariates(n, seed=5)
    p2 = rng.uniform(size=(n, 3))
    p1 = p2[:, 0].copy()
    dense = encode_covariates(covs).features
    lazy = encode_covariates(covs, lazy=True).features
    for prob in (p1, p1[:, None], p2):
        want = _former_product_gram(prob, 3.7, dense, 0.41)
        assert np.array_equal(product_gram(prob, 3.7, dense, 0.41).features, want)
        assert np.array_equal(product_gram(prob, 3.7, lazy, 0.41).features, want)
    assert np.array_equal(product_gram(p1, 2.0, dense[:, 0], 0.5).features,
                          _former_product_gram(p1, 2.0, dense[:, 0], 0.5))
    assert np.array_equal(product_gram(p2, 2.0, None, 0.5).features,
                          _former_product_gram(p2, 2.0, None, 0.5))


@pytest.mark.slow
@pytest.mark.parametrize("levels", [4, MAX_CELLS + 1])
def test_lcb_cell_kernel_on_demand_is_the_estimation_grams(levels):
    """The LCB kernel's cells (one column at a time) and continuous rows (built per block,
    also squared), from the encoded covariates, equal those split from the whole
    estimation Gram (more than ``MAX_CELLS`` levels: no cells, every column kept)."""
    n = 20_000
    covs = _covariates(n, seed=6, levels=levels)
    prob = np.random.default_rng(7).uniform(size=(n, 1))
    encoded = encode_covariates(covs)
    lazy = encode_covariates(covs, lazy=True)
    widths = np.array([0.3] + [0.25] * levels + [0.5, 1.7])
    categorical = categorical_columns(1, covs, encoded.blocks)
    gram = estimation_gram(prob, 0.1, encoded.features, widths).features
    want = cell_kernel(gram, categorical)
    rows = np.sort(np.random.default_rng(8).choice(n, 500, replace=False))
    for features in (encoded.features, lazy.features):
        scaled = EstimationRows(prob, 0.1, features, widths)
        for j in range(scaled.width):
            assert np.array_equal(scaled.column(j), gram[:, j])
        got = rows_cell_kernel(scaled, categorical)
        assert got.z.shape == want.z.shape
        for index in (slice(None), slice(4096, 8192), rows):
            assert np.array_equal(got.z[index], want.z[index])
            assert np.array_equal(got.squared().z[index], want.squared().z[index])
        assert got.cells.dtype == np.int16 and np.array_equal(got.cells, want.cells)
        assert np.array_equal(got.cell_matrix, want.cell_matrix)


def test_subsampled_rows_of_encoded_rows_are_the_arrays():
    covs = _covariates(5000, seed=9)
    dense = encode_covariates(covs).features
    lazy = encode_covariates(covs, lazy=True).features
    for max_rows in (800, 10_000):
        want = subsample_rows(dense, np.random.default_rng(3), max_rows)
        got = subsample_rows(lazy, np.random.default_rng(3), max_rows)
        assert np.array_equal(got, want)


def test_group_rows_and_codes_are_int32_and_the_same_rows():
    covs = _covariates(3000, seed=11)
    levels = [grp.covariate_levels(c, 4) for c in covs[:2]]
    assert all(lv.codes.dtype == np.int32 for lv in levels)
    specs = grp.define_groups(levels, intersections=True)
    a, b = levels
    for spec in specs:
        assert spec.rows.dtype == np.int32
        if spec.kind == "single":
            lv = a if spec.name.startswith("age") else b
            code = lv.labels.index(spec.covariates[lv.name])
            assert np.array_equal(spec.rows, np.flatnonzero(lv.codes == code))
        else:
            ca = a.labels.index(spec.covariates["age"])
            cb = b.labels.index(spec.covariates["region"])
            assert np.array_equal(spec.rows, np.flatnonzero((a.codes == ca) & (b.codes == cb)))


def test_kernel_sums_read_residual_columns_by_blocks():
    """``feature_kernel_sums`` builds ``[r, 1]`` a row block at a time: the same products
    as the stacked (n, 2) array, bit for bit."""
    from calaudit.local.features import MIN_WEIGHT
    from calaudit.local.lcb_features import (
        ResidualColumns,
        _features,
        cell_matmul,
        feature_kernel_sums,
    )

    rng = np.random.default_rng(12)
    n = 9000
    z = np.column_stack([rng.normal(size=n), rng.integers(0, 3, n) * 0.7,
                         rng.uniform(size=n)])
    kernel = cell_kernel(z, [1])
    r = rng.normal(size=n)
    columns = ResidualColumns(r)
    assert columns.shape == (n, 2)
    assert np.array_equal(columns[100:4200], np.column_stack([r, np.ones(n)])[100:4200])
    features = _features(kernel, 256, 5)
    want = cell_matmul(kernel, features, np.column_stack([r, np.ones_like(r)]))
    assert np.array_equal(cell_matmul(kernel, features, columns), want)
    weighted, mass = feature_kernel_sums(kernel, r, 256, 5)
    assert np.array_equal(weighted, want[:, 0])
    assert np.array_equal(mass, np.maximum(want[:, 1], MIN_WEIGHT))


def test_row_indices_are_int32_below_2_31_rows():
    mask = np.random.default_rng(13).random(1000) < 0.3
    rows = grp.rows_where(mask)
    assert rows.dtype == np.int32 and np.array_equal(rows, np.flatnonzero(mask))
    assert grp.index_dtype(2**31 - 1) is np.int32 and grp.index_dtype(2**31) is np.intp


def test_scaled_rows_on_demand_are_the_stored_rows():
    rng = np.random.default_rng(6)
    n = FILL_ROWS + 777                                     # two fill blocks
    covs = _covariates(n, seed=7)
    lazy_cov = encode_covariates(covs, lazy=True).features
    dense_cov = encode_covariates(covs).features
    rows = np.sort(rng.choice(n, 500, replace=False))
    mask = np.zeros(n, dtype=bool)
    mask[rows] = True
    for prob in (rng.uniform(size=n), rng.uniform(size=(n, 3))):
        for cov in (lazy_cov, dense_cov, dense_cov[:, 0], None):
            want = _former_product_gram(prob, 3.7, None if cov is None else
                                        np.asarray(cov), 0.41)
            z = product_gram(prob, 3.7, cov, 0.41, lazy=True).features
            assert isinstance(z, ScaledRows) and z.shape == want.shape and len(z) == n
            assert np.array_equal(np.asarray(z), want)
            assert np.array_equal(product_gram(prob, 3.7, cov, 0.41).features, want)
            for index in (slice(0, n), slice(5, FILL_ROWS + 9), slice(10, 20, 3), rows,
                          rows.astype(np.int32), mask, [3, 1, 2]):
                assert np.array_equal(z[index], want[index])
            assert np.array_equal(z[rows, 1:], want[rows, 1:])
            assert np.array_equal(z[100:200, 0], want[100:200, 0])
        # what a placement on Dask counts (dask.sizeof falls back on sys.getsizeof): the
        # inputs held, not a few bytes
        import sys
        held = np.asarray(prob).nbytes + sum(np.asarray(c.values).nbytes for c in covs)
        assert sys.getsizeof(product_gram(prob, 3.7, lazy_cov, 0.41, lazy=True).features) >= held


@pytest.mark.parametrize("key_rows", [7, 1000, 1 << 18])
def test_attribution_cells_by_blocks_are_np_unique_cells(monkeypatch, key_rows):
    from calaudit.attribution import design

    monkeypatch.setattr(design, "KEY_ROWS", key_rows)
    rng = np.random.default_rng(8)
    n = 5003
    terms = [design.Term(f"t{k}", tuple(f"l{j}" for j in range(size)),
                         rng.integers(0, size, n).astype(np.int32), 0, tuple(range(size)),
                         "categorical") for k, size in enumerate((4, 3, 7))]
    terms[1].codes[:] = np.where(terms[1].codes == 2, 1, terms[1].codes)  # a level unused
    for rows in (np.arange(n, dtype=np.int32), np.sort(rng.choice(n, 999, replace=False)),
                 np.arange(0, dtype=np.int32)):
        cells = design.Cells.build(terms, rows)
        key = np.zeros(rows.size, dtype=np.int64)                # the former construction
        for term in terms:
            key = key * len(term.labels) + term.codes[rows]
        keys, inverse = np.unique(key, return_inverse=True)
        assert cells.cell.dtype == np.int32
        assert np.array_equal(cells.cell, inverse.reshape(-1).astype(np.int32))
        assert cells.codes.shape == (keys.size, 3)
        assert np.array_equal(cells.codes[:, 0] * 21 + cells.codes[:, 1] * 7 + cells.codes[:, 2],
                              keys)


def _feature_pass_inputs(n, seed=9):
    from calaudit.local.features import product_features

    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.uniform(size=n) < p).astype(np.float64)
    covs = _covariates(n, seed=seed)[:2]
    z = product_gram(p, 2.5, encode_covariates(covs, lazy=True).features, 0.7,
                     lazy=True).features
    return z, y - p, p, product_features(z, 64, 11)


def test_feature_pass_on_scaled_rows_is_the_stored_rows_pass():
    from calaudit.local.features import feature_local_pass

    z, r, p, features = _feature_pass_inputs(3 * 4096 + 17)
    for test in ("klce_consistency", "klce_bootstrap"):
        out = [feature_local_pass(features, rows, r, p, test, np.random.default_rng(3), 19,
                                  task_rows=8192) for rows in (z, np.asarray(z))]
        assert out[0].statistic == out[1].statistic
        assert np.array_equal(out[0].test.null_distribution, out[1].test.null_distribution)
        assert out[0].test.p_value == out[1].test.p_value


def test_feature_pass_holds_no_scaled_rows():
    """tracemalloc peak of the first KLCE feature pass, per row (slope between two sizes,
    so the fixed per-block buffers cancel): the stored (n, 6) rows alone were 48 B/row,
    now only the observed labels (1 B/row) grow with n."""
    import tracemalloc

    from calaudit import scale
    from calaudit.local.features import feature_local_pass
    from calaudit.scale import SerialExecutor

    peaks = []
    sizes = (60_000, 180_000)
    for n in sizes:
        z, r, p, features = _feature_pass_inputs(n)
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        with scale.using(SerialExecutor()):  # one range at a time: its temporaries only
            feature_local_pass(features, z, r, p, "klce_consistency",
                               np.random.default_rng(3), 9)
        peaks.append(tracemalloc.get_traced_memory()[1] - base)
        tracemalloc.stop()
    per_row = (peaks[1] - peaks[0]) / (sizes[1] - sizes[0])
    assert per_row < 8.0, per_row
