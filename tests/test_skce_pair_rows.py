"""The exact SKCE path on a row source whose tasks read their own rows: the pair passes
(:mod:`calaudit.numerics.pair_rows`) and the battery's inputs
(:mod:`calaudit.inference.skce_pair_rows`) against the in-memory bytes and slow
references; on two Dask workers with the rows refused to the client, and with a worker
killed while a pair task reads its rows."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from calaudit import scale
from calaudit.data.dataset_rows import DatasetRows
from calaudit.data.planned import RowsData, plan
from calaudit.inference import consistency, skce_pair_rows
from calaudit.inference import skce_battery as battery_module
from calaudit.inference.method import Computation
from calaudit.inference.skce_battery import ArrayInputs, skce_battery, skce_battery_of_rows
from calaudit.inference.skce_pair_rows import PairInputs, ResidualBlocks, batch_counts
from calaudit.metrics.skce import residual_gram
from calaudit.numerics import pairwise
from calaudit.numerics.grams import ResidualGram
from calaudit.numerics.kernels import StationaryKernel
from calaudit.numerics.pair_rows import forms_and_matmul_of_rows, matmul_of_rows
from calaudit.numerics.resampling import batch_sizes, bootstrap_counts
from calaudit.scale import ArrayRows, DaskExecutor, SerialExecutor, ThreadExecutor
from tests.conftest import dask_partials, scattered, write_parts

KERNEL = StationaryKernel(4.0, "tv")


def _rows(n: int, seed: int = 2) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.uniform(size=n) < p).astype(np.int64)
    proba = np.column_stack([1.0 - p, p])
    return {"proba": proba, "residuals": np.eye(2)[y] - proba}


@dataclasses.dataclass(frozen=True)
class LazyBlocks(ResidualBlocks):
    """The recipe of a Gram the in-memory pass keeps lazy (never one dense matrix)."""

    cached = False


def test_a_pair_pass_over_rows_is_a_double_loop():
    n = 23
    rows = _rows(n)
    counts = np.random.default_rng(0).integers(0, 3, (n, 4)).astype(np.float64)
    p, r = rows["proba"], rows["residuals"]
    h = np.array([[np.exp(-4.0 * 0.5 * np.abs(p[i] - p[j]).sum()) * (r[i] @ r[j])
                   for j in range(n)] for i in range(n)])
    forms = [sum(h[i, j] * counts[i, c] * counts[j, c] for i in range(n) for j in range(n)
                 if i != j) for c in range(4)]
    with scale.using(SerialExecutor()):
        got, products = forms_and_matmul_of_rows(
            ArrayRows(rows), LazyBlocks(KERNEL, ones=True), inputs={"counts": counts},
            tile_rows=5)
        walked = matmul_of_rows(ArrayRows(rows), LazyBlocks(KERNEL, ones=True), tile_rows=4)
    assert np.allclose(got, forms, rtol=1e-12, atol=1e-12)
    assert np.allclose(products[:, 0], h.sum(axis=1), rtol=1e-12)
    assert np.allclose(walked[:, 0], h.sum(axis=1), rtol=1e-12)


@pytest.mark.parametrize("recipe, n", [(ResidualBlocks, 700), (LazyBlocks, 700),
                                       (ResidualBlocks, 2_300)])
def test_the_pair_passes_over_rows_are_the_in_memory_bytes(recipe, n, monkeypatch):
    """Blocks of 128 rows: the fused pass (float32 forms, float64 products) and the tile
    walk of ``K @ 1`` give the in-memory engine's bytes on threads, the Gram held dense
    (700 rows: every task cuts its blocks from it) or lazy."""
    monkeypatch.setattr(pairwise, "FUSED_TILE_ROWS", 128)
    rows = _rows(n)
    counts = bootstrap_counts(np.random.default_rng(1), n, 6)
    gram = ResidualGram(KERNEL.on(rows["proba"]), rows["residuals"])
    gram = residual_gram(KERNEL, rows["proba"], rows["residuals"]) if recipe.cached else gram
    options = {"exclude_diagonal": False, "dtype": np.float32, "matmul_dtype": np.float64}
    with scale.using(ThreadExecutor(2)):
        forms, products = pairwise.kernel_forms_and_matmul(gram, counts, np.ones((n, 1)),
                                                           **options)
        got = forms_and_matmul_of_rows(ArrayRows(rows), recipe(KERNEL, ones=True),
                                       inputs={"counts": counts}, **options)
        plain = forms_and_matmul_of_rows(ArrayRows(rows), recipe(KERNEL),
                                         inputs={"counts": counts})
        walked = matmul_of_rows(ArrayRows(rows), recipe(KERNEL, ones=True))
    assert got[0].tobytes() == forms.tobytes() and got[1].tobytes() == products.tobytes()
    assert plain[0].tobytes() == pairwise.kernel_forms_and_matmul(gram, counts)[0].tobytes()
    assert walked.tobytes() == pairwise.kernel_matmul(gram, np.ones((n, 1))).tobytes()


def test_a_batch_of_counts_is_the_sequential_draw():
    rng = np.random.default_rng(8)
    sizes = (3, 3, 2)
    expected = [bootstrap_counts(rng, 50, size) for size in sizes]
    fresh = np.random.default_rng(8)
    for batch in (2, 0, 1):
        assert batch_counts(fresh, 50, sizes, batch).tobytes() == expected[batch].tobytes()
    assert fresh.random() == np.random.default_rng(8).random()  # its stream not touched


def _dataset(tmp_path: Path, n: int, cuts: tuple[int, ...]) -> tuple[str, dict]:
    rng = np.random.default_rng(6)
    p = np.round(rng.beta(2.0, 3.0, n), 6)
    label = (rng.uniform(size=n) < p).astype(np.int8)
    path = write_parts(tmp_path / "ds", {"label": label, "prob": p}, cuts)
    proba = np.column_stack([1.0 - p, p])
    return path, {"proba": proba, "residuals": np.eye(2)[label] - proba}


OPTIONS = {"n_resamples": 40, "computation": Computation("exact"), "max_quadratic_n": 20_000}


def _json(result) -> str:
    return json.dumps([item.to_dict() for item in result.metrics + result.tests],
                      sort_keys=True)


def _refuse_rows(monkeypatch) -> None:
    def refused(self):
        raise AssertionError("the exact path read the rows into the client")

    monkeypatch.setattr(RowsData, "_loaded", property(refused))


@pytest.mark.parametrize("n, cuts", [(1_500, (0, 600, 1_500)),
                                     (3_000, (0, 1_000, 2_200, 3_000))])
def test_the_exact_battery_of_a_dataset_is_the_in_memory_bytes(tmp_path, monkeypatch, n,
                                                                cuts):
    """Every SKCE test and interval (several bootstrap batches), the kernel's median from
    the full matrix; the in-memory battery's bytes without the rows in the client."""
    path, arrays = _dataset(tmp_path, n, cuts)
    small = lambda total, rows: batch_sizes(total, rows, 30_000)  # noqa: E731
    monkeypatch.setattr(battery_module, "batch_sizes", small)
    monkeypatch.setattr(skce_pair_rows, "batch_sizes", small)
    monkeypatch.setattr(consistency, "BATCH_ENTRIES", 50_000)  # batches of redraws too
    expected = _json(skce_battery(arrays["proba"], arrays["residuals"], ci_level=0.9,
                                  rng=np.random.default_rng(4), **OPTIONS))
    data = plan(path)
    _refuse_rows(monkeypatch)
    assert _json(skce_battery_of_rows(data.rows, ci_level=0.9, rng=np.random.default_rng(4),
                                      **OPTIONS)) == expected


def test_replicates_near_the_observed_statistic_are_refined_as_in_memory(tmp_path,
                                                                         monkeypatch):
    """The consistency test's float32 passes (chosen whatever the cost model says) with
    the replicates that lie within their rounding band of the observed statistic
    recomputed in float64 by pair tasks: the in-memory test's bytes."""
    path, arrays = _dataset(tmp_path, 3_000, (0, 1_000, 2_200, 3_000))
    monkeypatch.setattr(consistency, "pass_dtype", lambda gram, dtype, *rest: dtype)
    inputs = ArrayInputs(arrays["proba"], arrays["residuals"])
    first = inputs.consistency(KERNEL, 0.0, np.random.default_rng(5), 60)
    observed = float(first.null_distribution[7])  # replicate 7 is then near
    refined: list[int] = []
    near = skce_pair_rows.near_columns
    monkeypatch.setattr(skce_pair_rows, "near_columns", lambda *a: (
        refined.extend(near(*a).tolist()), near(*a))[1])
    expected = inputs.consistency(KERNEL, observed, np.random.default_rng(5), 60)
    got = PairInputs(plan(path).rows).consistency(KERNEL, observed,
                                                  np.random.default_rng(5), 60)
    assert 7 in refined
    assert got.null_distribution.tobytes() == expected.null_distribution.tobytes()
    assert got.p_value == expected.p_value


def test_the_exact_battery_on_two_workers_reads_its_rows_there(tmp_path, two_workers,
                                                               monkeypatch):
    """On two workers, the rows refused to the client: the in-memory bytes, nothing
    placed from the client; then a worker killed while a pair task reads its block:
    Dask runs the lost tasks again from their specs (nothing is scattered,
    nothing sent again), the same bytes."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    monkeypatch.setattr(pairwise, "FUSED_TILE_ROWS", 512)
    path, arrays = _dataset(tmp_path, 2_100, (0, 700, 1_500, 2_100))
    options = {**OPTIONS, "n_resamples": 19,
               "tests": ("skce_uq_bound", "skce_uq_asymptotic", "skce_consistency")}
    expected = _json(skce_battery(arrays["proba"], arrays["residuals"],
                                  rng=np.random.default_rng(4), **options))
    executor = DaskExecutor(two_workers)
    with scale.using(executor):
        data = plan(path)
    _refuse_rows(monkeypatch)
    resent = scattered(monkeypatch)
    calls = dask_partials(monkeypatch)
    with scale.using(executor):
        assert _json(skce_battery_of_rows(data.rows, rng=np.random.default_rng(4),
                                          **options)) == expected
    assert executor.block_bytes == 0 and executor.placed_bytes < 100_000
    assert "rows_pair_partial" in calls and "pair_partial" not in calls
    flag = tmp_path / "killed"
    before = set(two_workers.run(os.getpid).values())
    fields = {f.name: getattr(data.rows, f.name) for f in dataclasses.fields(DatasetRows)}
    from tests.test_dask_dataset_rows import KillingRows
    cloudpickle.register_pickle_by_value(sys.modules[KillingRows.__module__])
    killing = KillingRows(**fields, flag=str(flag), victim=1_024, nth=3,
                          names=ResidualBlocks.names)  # a pair task reading its block
    with scale.using(executor):
        assert _json(skce_battery_of_rows(killing, rng=np.random.default_rng(4),
                                          **options)) == expected
    assert int(flag.read_text().split()[1]) in before  # a task did kill one of the workers
    assert resent == [] and executor.block_bytes == 0
