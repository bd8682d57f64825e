"""The LCB of a dataset whose tasks read their own rows (:mod:`calaudit.local.lcb_rows`):
the residual columns built in the tasks, the LCB of every row kept where it was computed
(:func:`calaudit.scale.kept`), the bits of the in-memory computation."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calaudit import scale
from calaudit.audit.config import AuditConfig
from calaudit.audit.local_calibration import STREAMS
from calaudit.audit.sections.local import LocalConfig
from calaudit.data.load import load
from calaudit.data.planned import RowsData, plan
from calaudit.local import lcb_rows
from calaudit.local.kernel_tests import LocalTests
from calaudit.local.lcb import top_label_residual
from calaudit.local.lcb_estimation import LcbEstimation
from calaudit.local.lcb_rows import ResidualRows, fetch
from calaudit.scale import SerialExecutor, ThreadExecutor

N = 3_000


def _square_partial(start, stop, *, rows):
    x = rows.read(start, stop, ["x"])["x"]
    return {"x2": x * x, "index": np.arange(start, stop)}


def _sum_partial(start, stop, *, kept):
    read = kept.read(start, stop, ["x2", "index"])
    return {"total": np.array([read["x2"].sum()]), "index": np.array([read["index"].sum()])}


@pytest.mark.parametrize("executor", [SerialExecutor(), ThreadExecutor(2)])
def test_kept_rows_in_this_process_are_the_per_row_map(executor):
    x = np.random.default_rng(1).normal(size=3 * 1000 + 7)
    ranges = scale.task_ranges(x.size, 1000)
    with scale.using(executor), scale.kept(_square_partial, ranges,
                                           {"rows": scale.ArrayRows({"x": x})}) as kept:
        assert kept.read(1000, 1010, ["x2"])["x2"].tobytes() == (x[1000:1010] ** 2).tobytes()
        total = scale.map_sum(_sum_partial, ranges, {"kept": kept})
    assert total["index"][0] == x.size * (x.size - 1) // 2


def write(folder, classes: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.arange(2.0, 2.0 + classes), N)
    table = {"label": np.array([rng.choice(classes, p=row) for row in proba]),
             **{f"p_{k}": proba[:, k] for k in range(classes)},
             "age": np.round(rng.uniform(18, 90, N), 1),
             "region": np.array(["north", "south", "east"])[rng.integers(0, 3, N)]}
    if classes == 2:
        table = {"label": table["label"], "prob": proba[:, 1], "age": table["age"],
                 "region": table["region"]}
    folder.mkdir()
    for k, (lo, hi) in enumerate(((0, 1_000), (1_000, 2_200), (2_200, N))):
        pq.write_table(pa.table({name: v[lo:hi] for name, v in table.items()}),
                       folder / f"part-{k}.parquet")
    return str(folder)


CONFIG = {"n_resamples": 19, "random_state": 5, "method": "features", "n_features": 64,
          "local": LocalConfig(n_resamples=19, group_ci_resamples=19, lcb_cv_max_rows=300)}


def _setup(data):
    config = AuditConfig(**CONFIG)
    rng = np.random.default_rng(config.random_state)
    streams = dict(zip(STREAMS, rng.spawn(len(STREAMS)), strict=True))
    return LocalTests(data, config, streams)


@pytest.mark.parametrize("classes", [2, 3])
def test_the_tasks_residual_columns_are_the_in_memory_ones(tmp_path, classes):
    folder = write(tmp_path / "ds", classes)
    loaded = load(folder, covariates="age,region")
    with scale.using(SerialExecutor()):
        planned = plan(folder, covariates="age,region")
    outcome, prediction = top_label_residual(loaded.y_true, loaded.y_proba)
    r = outcome - prediction
    sums = ResidualRows(planned.rows, "sums")
    squares = ResidualRows(planned.rows, "squares")
    assert sums.shape == (N, 2) and squares.shape == (N, 1)
    for lo, hi in ((0, 10), (990, 1010), (N - 5, N)):
        w = sums.read(lo, hi, ["w"])["w"]
        assert w.tobytes() == np.column_stack([r[lo:hi], np.ones(hi - lo)]).tobytes()
        assert squares.read(lo, hi, ["w"])["w"].tobytes() == (r[lo:hi] ** 2)[:, None].tobytes()


@pytest.mark.parametrize("classes", [2, 3])
def test_the_kept_lcb_is_the_in_memory_one_without_the_rows_in_memory(tmp_path, classes,
                                                                     monkeypatch):
    """The LCB at every row and its weight sums on a planned dataset (the residual
    columns and the values made by the tasks; nothing read through ``_loaded``) are the
    bits of the in-memory computation; the kept rows are a row source with column
    ``lcb``."""
    folder = write(tmp_path / "ds", classes)
    loaded = load(folder, covariates="age,region")
    outcome, prediction = top_label_residual(loaded.y_true, loaded.y_proba)
    r = outcome - prediction
    with scale.using(SerialExecutor()):
        reference, _, _ = LcbEstimation(_setup(loaded)).local_bias(r)
        planned = plan(folder, covariates="age,region")
        setup = _setup(planned)  # the tests' setup still reads the rows here

        def refused(self):
            raise AssertionError("the LCB read the rows into the client")

        monkeypatch.setattr(RowsData, "_loaded", property(refused))
        with LcbEstimation(setup) as estimation:
            bias, _, _ = estimation.local_bias(r)
            assert bias.values.tobytes() == reference.values.tobytes()
            assert bias.weight_sums.tobytes() == reference.weight_sums.tobytes()
            rows = np.array([3, 999, 1000, N - 1])
            assert estimation.rows.read(990, 1010, ("lcb",))["lcb"].tobytes() == \
                reference.values[990:1010].tobytes()
            picked = bias.at(rows)
            assert picked["lcb"].tobytes() == reference.values[rows].tobytes()
            assert fetch(estimation.rows, ("weight_sums",), rows)["weight_sums"].tobytes() \
                == reference.weight_sums[rows].tobytes()


def same(a, b) -> bool:
    """The same values, arrays by their bytes."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        if a.dtype == object:
            return b.dtype == object and a.tolist() == b.tolist()
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return a == b


@pytest.mark.parametrize("classes", [2, 3])
def test_the_lcb_section_without_curves_is_made_without_the_rows_in_memory(
        tmp_path, classes, monkeypatch):
    """A categorical covariate only (no curves): the whole ``local.lcb`` section (the
    bandwidths' subsamples, the cells, the sums, the plotted rows and the summary) on a
    planned dataset whose ``_loaded`` raises is the in-memory one."""
    folder = write(tmp_path / "ds", classes)
    loaded = load(folder, covariates="region")
    outcome, prediction = top_label_residual(loaded.y_true, loaded.y_proba)
    r = outcome - prediction
    with scale.using(SerialExecutor()):
        lcb, section = LcbEstimation(_setup(loaded)).run(r, prediction, {})
        planned = plan(folder, covariates="region")
        setup = _setup(planned)

        def refused(self):
            raise AssertionError("the LCB read the rows into the client")

        monkeypatch.setattr(RowsData, "_loaded", property(refused))
        whole = []  # the columns fetched for every row
        monkeypatch.setattr(lcb_rows, "fetch", lambda rows, names, at=None, _f=fetch: (
            whole.extend(names if at is None else ()), _f(rows, names, at))[1])
        with LcbEstimation(setup) as estimation:
            got, got_section = estimation.run(r, prediction, {})
            assert whole == []  # no column fetched for every row
            assert estimation.rows.read(0, 5, ("lcb",))["lcb"].tobytes() == lcb[:5].tobytes()
    assert got is None  # the callers read estimation.rows
    assert section["curves"] == [] and same(got_section, section)
