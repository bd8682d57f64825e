"""Block pairs of the pairwise engine as tasks of an executor.

:func:`kernel_forms_and_matmul` computes each pair of fixed row blocks ``I <= J`` as one
task (:func:`pair_partial`) and adds the pairs' partials in pair order, so the forms and the
products are the same bytes whether the pairs run one after another, on 1, 2, 3 or 8
threads, or on Dask workers -- and so is the JSON of an exact audit. The values are
checked against double loops.
"""

from __future__ import annotations

import numpy as np
import pytest

from calaudit import scale
from calaudit.local.kernel import product_gram
from calaudit.numerics.pairwise import kernel_forms_and_matmul
from calaudit.scale import SerialExecutor, ThreadExecutor

EXECUTORS = [SerialExecutor(), ThreadExecutor(1), ThreadExecutor(2), ThreadExecutor(3),
             ThreadExecutor(8)]


@pytest.fixture(scope="module")
def case():
    rng = np.random.default_rng(11)
    n = 301
    p = rng.uniform(0.05, 0.95, n)
    x = rng.normal(size=(n, 2))
    gram = product_gram(p, 7.0, x, 0.3)
    z = rng.normal(size=(n, 3, 5))  # 3 classes, 5 columns
    w = rng.normal(size=(n, 4))
    return gram, z, w


def _run(gram, z, w, executor, **kwargs):
    # blocks of 32 rows: ten blocks, 55 pairs
    with scale.using(executor):
        return kernel_forms_and_matmul(gram, z, w, tile_rows=32, **kwargs)


def test_forms_and_products_match_double_loops(case):
    gram, z, w = case
    n = gram.n
    dense = np.array([[float(np.exp(-np.sum((gram.features[i] - gram.features[j]) ** 2)))
                       for j in range(n)] for i in range(n)])
    expected = np.zeros(z.shape[2])
    for q in range(z.shape[2]):
        for i in range(n):
            for j in range(n):
                if i != j:
                    expected[q] += dense[i, j] * z[i, :, q] @ z[j, :, q]
    forms, products = _run(gram, z, w, SerialExecutor())
    np.testing.assert_allclose(forms, expected, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(products, dense @ w, rtol=1e-12, atol=1e-12)
    with_diag, _ = _run(gram, z, w, SerialExecutor(), exclude_diagonal=False)
    np.testing.assert_allclose(with_diag - forms, np.einsum("ikq,ikq->q", z, z), atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("wide", [False, True])
def test_same_bytes_on_any_number_of_threads(case, dtype, wide):
    """Serial, 1, 2, 3 and 8 threads: identical forms and products (a narrow pass sends
    [Z | W] through one GEMM, a wide one multiplies W separately)."""
    gram, z, w = case
    if wide:
        w = np.tile(w, (1, 20))  # 80 columns: more than the narrow limit
    results = [_run(gram, z, w, executor, dtype=dtype) for executor in EXECUTORS]
    for forms, products in results[1:]:
        assert forms.tobytes() == results[0][0].tobytes()
        assert products.tobytes() == results[0][1].tobytes()


def test_products_only_pass(case, monkeypatch):
    """``K @ W`` without forms (the LCB's pass): filled and multiplied in row groups; the
    double loops' values and the same bytes on any number of threads."""
    import calaudit.numerics.pair_tasks as pair_tasks

    monkeypatch.setattr(pair_tasks, "GROUP_ENTRIES", 200)  # groups of 3 rows here
    gram, _, w = case
    n = gram.n
    dense = np.array([[float(np.exp(-np.sum((gram.features[i] - gram.features[j]) ** 2)))
                       for j in range(n)] for i in range(n)])
    empty = np.zeros((n, 0))
    results = [_run(gram, empty, w, executor) for executor in EXECUTORS]
    np.testing.assert_allclose(results[0][1], dense @ w, rtol=1e-12, atol=1e-12)
    assert results[0][0].shape == (0,)
    for _, products in results[1:]:
        assert products.tobytes() == results[0][1].tobytes()


def test_the_block_size_decides_the_bits(case):
    """The check above can fail: other blocks (another summation order) give other bits."""
    gram, z, w = case
    forms, _ = _run(gram, z, w, SerialExecutor())
    other, _ = kernel_forms_and_matmul(gram, z, w, tile_rows=48)
    np.testing.assert_allclose(other, forms, rtol=1e-12)
    assert other.tobytes() != forms.tobytes()


def _exact_audit(executor, n=2300) -> str:
    from tests.conftest import audit_json

    return audit_json(executor, n=n, seed=4, method="exact", resamples=29,
                      local_resamples=49, random_state=3)


@pytest.fixture(scope="module")
def exact_json() -> str:
    return _exact_audit(ThreadExecutor(1))


@pytest.mark.parametrize("threads", [2, 3])
def test_exact_audit_json_is_the_same_on_any_number_of_threads(exact_json, threads):
    assert _exact_audit(ThreadExecutor(threads)) == exact_json


# ----------------------------------------------------------------------------- Dask

@pytest.mark.parametrize("workers", ["one_worker", "two_workers"])
def test_pairs_on_dask_give_the_same_bytes(case, workers, request):
    from calaudit.scale import DaskExecutor

    gram, z, w = case
    client = request.getfixturevalue(workers)
    forms, products = _run(gram, z, w, SerialExecutor())
    on_dask = _run(gram, z, w, DaskExecutor(client))
    assert on_dask[0].tobytes() == forms.tobytes()
    assert on_dask[1].tobytes() == products.tobytes()


def test_exact_audit_on_dask_gives_the_same_json(exact_json, one_worker, monkeypatch):
    """``--method exact`` with an executor: the kernel passes' block pairs run on the
    workers."""
    from calaudit.scale import DaskExecutor
    from tests.conftest import dask_partials

    calls = dask_partials(monkeypatch)
    assert _exact_audit(DaskExecutor(one_worker)) == exact_json
    assert "group_partial" in calls  # pairs of groups of blocks (DaskExecutor.pair_group)
