"""Quantiles of a Parquet dataset read by tasks, without its rows in the client: the
numeric covariates' bands, the quantile bins' edges and Hosmer-Lemeshow's breaks from
exact order-statistics reductions (:mod:`calaudit.numerics.order_statistics`), equal to
the loaded rows' ``np.quantile``, and the audit's JSON the single-process run's."""

from __future__ import annotations

import pytest

from calaudit import scale
from calaudit.audit.config import AuditConfig, BinningConfig, GlobalTestsConfig
from calaudit.audit.runner import run_audit
from calaudit.data.load import load
from calaudit.data.planned import RowsData, plan
from calaudit.inference.classical import hosmer_lemeshow, hosmer_lemeshow_of_rows
from calaudit.local import groups as grp
from calaudit.metrics.row_summary import Binning
from calaudit.numerics import order_statistics
from calaudit.numerics.binning import bin_edges
from calaudit.scale import DaskExecutor, SerialExecutor
from tests.test_dask_dataset_rows import CONFIG, canonical, columns, write


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> str:
    """Three ranges of rows (the last one short) in three files."""
    return str(write(tmp_path_factory.mktemp("quantiles") / "ds", columns()))


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> str:
    table = {name: values[:6_000] for name, values in columns().items()}
    return str(write(tmp_path_factory.mktemp("small") / "ds", table, (0, 1_000, 3_500, 6_000)))


def refuse_rows(monkeypatch) -> None:
    def refused(self):
        raise AssertionError("the rows were read into the client")

    monkeypatch.setattr(RowsData, "_loaded", property(refused))


def test_the_levels_come_from_reductions(dataset, monkeypatch):
    """``--covariates age,region``: the numeric age's band edges and labels, and the
    region's categories, without reading the rows into the client; the codes, made from
    the values when read, the in-memory levels'."""
    options = {"covariates": "age,region,grade", "categorical": "grade"}
    monkeypatch.setattr(order_statistics, "RANGE_ROWS", 30_000)  # ranges across files
    loaded = load(dataset, **options)
    with scale.using(SerialExecutor()):
        planned = plan(dataset, **options)
        refuse_rows(monkeypatch)
        levels = grp.data_levels(planned, 4)
    expected = grp.data_levels(loaded, 4)
    assert [lv.edges is None for lv in expected] == [False, True, True]
    for ours, theirs in zip(levels, expected, strict=True):
        assert (ours.name, ours.labels) == (theirs.name, theirs.labels)
        if theirs.edges is not None:
            assert ours.edges.tobytes() == theirs.edges.tobytes()
    monkeypatch.undo()
    with scale.using(SerialExecutor()):
        for ours, theirs in zip(levels, expected, strict=True):
            assert ours.codes.dtype == theirs.codes.dtype
            assert ours.codes.tobytes() == theirs.codes.tobytes()


def test_bins_and_hosmer_lemeshow_come_from_reductions(dataset, monkeypatch):
    """Every panel's quantile bin edges and Hosmer-Lemeshow's test, with counting passes
    (few rows gathered), the in-memory bytes."""
    loaded = load(dataset)
    monkeypatch.setattr(order_statistics, "GATHER_ROWS", 1_000)
    monkeypatch.setattr(order_statistics, "RANGE_ROWS", 30_000)
    with scale.using(SerialExecutor()):
        planned = plan(dataset)
        refuse_rows(monkeypatch)
        binning = Binning.build(planned.rows, 12, "quantile")
        test = hosmer_lemeshow_of_rows(planned.rows, planned.n, 9)
    for scores, edges in zip((loaded.positive_proba, loaded.y_proba[:, 0]), binning.edges,
                             strict=True):
        assert edges.tobytes() == bin_edges(scores, 12, "quantile").tobytes()
    expected = hosmer_lemeshow(loaded.y_true, loaded.positive_proba, 9)
    assert test.to_dict() == expected.to_dict()


@pytest.mark.slow
def test_quantile_bins_and_hosmer_lemeshow_on_two_workers(small, two_workers, monkeypatch):
    """``--binning quantile --hosmer-lemeshow`` on two workers: the single-process JSON,
    no row read into the client."""
    config = {**CONFIG, "binning": BinningConfig(strategy="quantile"),
              "global_tests": GlobalTestsConfig(tests=("ece_consistency",),
                                                hosmer_lemeshow=True)}
    single = canonical(run_audit(load(small), AuditConfig(**config)))
    assert '"hosmer_lemeshow"' in single
    executor = DaskExecutor(two_workers)
    monkeypatch.setattr(order_statistics, "GATHER_ROWS", 100)  # counting passes too
    monkeypatch.setattr(order_statistics, "RANGE_ROWS", 1_500)
    with scale.using(executor):
        data = plan(small)
    refuse_rows(monkeypatch)
    assert canonical(run_audit(data, AuditConfig(**config, executor=executor))) == single
