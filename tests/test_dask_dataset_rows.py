"""A Parquet dataset audited by tasks that read their own rows
(:mod:`calaudit.data.planned`, :mod:`calaudit.data.dataset_rows`): the client reads the
footers and adds up. The checks: the rows a task reads are the loader's rows; the
loader's row rules give the loader's one-line errors; the audit's JSON is the
single-process run's; a worker killed mid-run is survived by Dask alone (no calaudit code
sends data again).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calaudit import scale
from calaudit.audit.battery import ClinicalStage
from calaudit.audit.config import AuditConfig
from calaudit.audit.runner import run_audit
from calaudit.audit.sections.global_tests import SkceConfig
from calaudit.audit.sections.local import LocalConfig
from calaudit.data.dataset_rows import DatasetRows
from calaudit.data.load import load
from calaudit.data.planned import plan, why_not
from calaudit.exceptions import InputError
from calaudit.metrics.clinical import logit_of
from calaudit.scale import DaskExecutor, SerialExecutor
from tests.conftest import eventually, scattered

#: Three reduction ranges (the last one short), in three files of unequal size.
N = 2 * scale.TASK_ROWS + 5_001
CUTS = (0, 40_000, 100_003, N)


def columns(seed: int = 4) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 5.0, N)
    p[:3] = (0.0, 1.0, 1e-13)  # clipped by logit(clip(p))
    region = np.array(["north", "south", "east"])[rng.integers(0, 3, N)]
    region[-3:] = "west"  # a level of the last range only
    return {"label": (rng.uniform(size=N) < p).astype(np.int8), "prob": p,
            "other": rng.normal(size=N), "age": np.round(rng.uniform(18, 90, N), 1),
            "region": region, "flag": rng.uniform(size=N) < 0.3,
            "grade": rng.integers(1, 4, N).astype(np.float64)}


def write(folder: Path, table: dict[str, np.ndarray], cuts: tuple[int, ...] = CUTS) -> Path:
    folder.mkdir()
    for k in range(len(cuts) - 1):
        part = {name: values[cuts[k]:cuts[k + 1]] for name, values in table.items()}
        pq.write_table(pa.table(part), folder / f"part-{k}.parquet", row_group_size=20_000)
    return folder


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> str:
    return str(write(tmp_path_factory.mktemp("rows") / "ds", columns()))


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> str:
    """6,000 rows in three files (the whole battery, kept fast)."""
    table = {name: values[:6_000] for name, values in columns().items()}
    return str(write(tmp_path_factory.mktemp("small") / "ds", table, (0, 1_000, 3_500, 6_000)))


def canonical(result) -> str:
    payload = result.to_dict()
    for volatile in ("created_at", "runtime_seconds", "environment"):
        payload.pop(volatile, None)
    return json.dumps(payload, sort_keys=True)


#: The feature tests (the exact path is tested on its own in test_dask.py), and the SKCE
#: stage's path for more rows than ``max_quadratic_n`` (its tasks read their own rows).
CONFIG = {"n_resamples": 19, "random_state": 5, "method": "features",
          "skce": SkceConfig(max_quadratic_n=2_000)}


def test_the_tasks_read_the_loaders_rows(dataset):
    loaded = load(dataset)
    with scale.using(SerialExecutor()):
        planned = plan(dataset)
    assert planned.n == loaded.n and planned.class_counts() == loaded.class_counts()
    assert planned.provenance == loaded.provenance
    assert planned.clipped == 3
    for start, stop in ((0, 10), (39_990, 40_010), (N - 7, N)):  # across files
        rows = planned.rows.read(start, stop, ["y", "proba", "residuals", "logit"])
        assert rows["y"].tobytes() == loaded.y_true[start:stop].tobytes()
        logit = logit_of(loaded.positive_proba[start:stop])[0]
        assert rows["logit"].tobytes() == logit.tobytes()
        assert rows["proba"].tobytes() == loaded.y_proba[start:stop].tobytes()
        assert rows["residuals"].tobytes() == loaded.residual_rows(start, stop).tobytes()


def test_only_the_default_reading_of_a_parquet_dataset_is_planned(dataset, tmp_path):
    assert why_not(dataset, {}) is None
    assert why_not(dataset, {"covariates": ("age",), "categorical": ("age",)}) is None
    assert "covariates_file" in why_not(dataset, {"covariates_file": "c.parquet"})
    assert "drop_invalid" in why_not(dataset, {"drop_invalid": True})
    single = tmp_path / "one.parquet"
    pq.write_table(pa.table({"label": [0, 1], "prob": [0.2, 0.7]}), single)
    assert why_not(str(single), {}) == "not a dataset"


@pytest.mark.parametrize(("column", "row", "value"), [
    ("prob", 70_000, 1.5),         # out of [0, 1], second file, second range
    ("prob", 100_003, np.nan),     # not finite, first row of the third file
    ("label", 5, 2),               # not a class
])
def test_bad_rows_give_the_loaders_error(tmp_path, column, row, value):
    table = columns()
    table[column] = table[column].astype(np.float64)
    table[column][row] = value
    table[column][row + 70_000 if row + 70_000 < N else row - 3] = value  # a second one
    folder = str(write(tmp_path / "bad", table))
    with pytest.raises(InputError) as loaded:
        load(folder)
    with scale.using(SerialExecutor()), pytest.raises(InputError) as planned:
        plan(folder)
    assert str(planned.value) == str(loaded.value)
    assert "2 row(s)" in str(planned.value)


#: A numeric covariate, text, booleans and whole numbers held as floats (categorical).
COVARIATES = {"covariates": "age,region,flag,grade", "categorical": "grade"}


def test_the_tasks_read_the_loaders_covariates(dataset):
    """Kinds, levels (the union of the ranges', in the loader's order: a level of the last
    range only, whole-number floats as integers) and every row's values or codes."""
    loaded = load(dataset, **COVARIATES)
    with scale.using(SerialExecutor()):
        planned = plan(dataset, **COVARIATES)
    assert [(c.name, c.kind, c.categories) for c in planned.covariates] == \
        [(c.name, c.kind, c.categories) for c in loaded.covariates]
    assert planned.covariate("region").categories == ("east", "north", "south", "west")
    assert planned.covariate("grade").categories == ("1", "2", "3")
    for ours, theirs in zip(planned.covariates, loaded.covariates):
        assert ours.values.dtype == theirs.values.dtype
        assert ours.values.tobytes() == theirs.values.tobytes()
    rows = planned.rows.read(N - 7, N, ["x:region", "y"])
    assert rows["x:region"].tolist() == loaded.covariate("region").values[N - 7:].tolist()


def test_bad_covariates_give_the_loaders_error(tmp_path, small):
    table = {name: values[:6_000] for name, values in columns().items()}
    table["age"][4_000:4_002] = np.inf
    region = pa.array(table["region"]).to_pylist()
    region[2_500] = None
    table["region"] = pa.array(region)
    bad = str(write(tmp_path / "bad", table, (0, 1_000, 3_500, 6_000)))
    cases = [(small, {"covariates": "age", "categorical": "age"}, "too_many_categories"),
             (bad, {"covariates": "age,region"}, "nonfinite_covariate"),  # age's rules first
             (bad, {"covariates": "region,age"}, "missing_covariate"),
             (small, {"covariates": "age,nowhere"}, "missing_column"),
             (small, {"covariates": "age", "categorical": "region"}, "conflicting_options")]
    for folder, options, rule in cases:
        with pytest.raises(InputError) as loaded:
            load(folder, **options)
        with scale.using(SerialExecutor()), pytest.raises(InputError) as planned:
            plan(folder, **options)
        assert str(planned.value) == str(loaded.value)
        assert planned.value.rule == rule


def test_the_audit_on_two_workers_is_the_single_process_json(small, two_workers,
                                                             monkeypatch):
    """The whole default battery: every stage reduces the source in tasks that read their
    own rows (none reads the rows into this process), the JSON is the one of the same
    rows loaded and audited in one process."""
    from calaudit.data.planned import RowsData
    from tests.conftest import dask_partials

    single = canonical(run_audit(load(small), AuditConfig(**CONFIG)))
    calls = dask_partials(monkeypatch)
    executor = DaskExecutor(two_workers)
    with scale.using(executor):
        data = plan(small)

    def refused(self):
        raise AssertionError("a stage read the rows into the client")

    monkeypatch.setattr(RowsData, "_loaded", property(refused))
    assert canonical(run_audit(data, AuditConfig(**CONFIG, executor=executor))) == single
    for partial in ("check_partial", "newton_partial", "spiegelhalter_partial",
                    "label_partial", "pick_partial", "max_partial", "summary_partial",
                    "laws_partial", "spread_partial"):
        assert partial in calls
    # nothing placed from this process: the bootstrap's per-block draw totals are drawn
    # by a task on a worker, the rows read by the tasks
    assert executor.block_bytes == 0


@dataclasses.dataclass(frozen=True)
class KillingRows(DatasetRows):
    """:class:`DatasetRows` whose worker process reading rows ``victim`` for the
    ``nth`` time with the SKCE feature pass's columns (``y``, ``proba``, ``residuals``)
    kills itself (SIGKILL); ``flag`` counts those reads, then records the pid."""

    flag: str = ""
    victim: int = -1
    nth: int = 1
    names: tuple[str, ...] = ("y", "proba", "residuals")

    def read(self, start, stop, names):
        if start == self.victim and tuple(names) == self.names:
            path = Path(self.flag)
            text = path.read_text() if path.exists() else "0"
            seen = self.nth if text.startswith("pid") else int(text)
            if seen < self.nth:
                path.write_text(str(seen + 1))
            if seen + 1 == self.nth:
                path.write_text(f"pid {os.getpid()}")
                os.kill(os.getpid(), signal.SIGKILL)
        return super().read(start, stop, names)


def test_a_worker_killed_mid_run_is_recomputed_by_dask(dataset, two_workers, monkeypatch,
                                                      tmp_path):
    """A worker dies while a task of the SKCE feature pass reads its rows (after the
    approximation check's and the two grid reductions' reads of the same rows; the pass's
    bootstrap totals were drawn by a task on a worker): Dask reruns what was lost from the
    tasks' specs (the source travels inside them, the totals are made again from their
    seed), the result is the single-process JSON, and the executor's own recovery of
    placed data never runs."""
    import cloudpickle

    from calaudit.audit.battery import SkceStage
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    resent = scattered(monkeypatch)
    config = AuditConfig(**CONFIG, n_features=64)  # a short SKCE stage
    stages = (ClinicalStage(), SkceStage())
    single = canonical(run_audit(load(dataset), config, stages=stages))
    flag = tmp_path / "killed"
    executor = DaskExecutor(two_workers)
    before = set(two_workers.run(os.getpid).values())
    with scale.using(executor):
        data = plan(dataset)
    fields = {f.name: getattr(data.rows, f.name) for f in dataclasses.fields(DatasetRows)}
    data = dataclasses.replace(data, rows=KillingRows(
        **fields, flag=str(flag), victim=scale.TASK_ROWS, nth=4))
    result = run_audit(data, dataclasses.replace(config, executor=executor), stages=stages)
    assert int(flag.read_text().split()[1]) in before  # a task did kill one of the workers
    assert canonical(result) == single
    assert resent == [] and executor.block_bytes == 0


def _killing_run(client, tmp_path, monkeypatch, seed: int, covariates: str, nth: int,
                 names: tuple[str, ...]):
    """The local stage's single-process JSON of 2,000 rows (three files) and the planned
    data whose ``nth`` read of ``names`` kills the worker doing it: ``(scatter calls,
    stages, config, single JSON, kill flag, executor, worker pids, data)``."""
    from calaudit.audit.local_calibration import LocalCalibrationStage

    resent = scattered(monkeypatch)
    table = {name: values[:2_000] for name, values in columns(seed).items()}
    folder = str(write(tmp_path / "ds", table, (0, 700, 1_300, 2_000)))
    options = {"covariates": covariates}
    stages = (LocalCalibrationStage(),)
    config = AuditConfig(**CONFIG, n_features=64,
                         local=LocalConfig(n_resamples=19, group_ci_resamples=19,
                                           lcb_cv_max_rows=300))
    single = canonical(run_audit(load(folder, **options), config, stages=stages))
    flag = tmp_path / "killed"
    executor = DaskExecutor(client)
    before = set(client.run(os.getpid).values())
    with scale.using(executor):
        data = plan(folder, **options)
    fields = {f.name: getattr(data.rows, f.name) for f in dataclasses.fields(DatasetRows)}
    data = dataclasses.replace(data, rows=KillingRows(
        **fields, flag=str(flag), victim=0, nth=nth, names=names))
    return resent, stages, config, single, flag, executor, before, data


def test_covariates_on_two_workers_survive_a_killed_worker(two_workers, monkeypatch,
                                                          tmp_path):
    """The local calibration stage on a dataset read by tasks: a worker dies while a task
    reads its range's rows and covariates for the stage; Dask reruns the task from its
    spec, the JSON is the single-process run's (the same files loaded), and the
    client scatters nothing."""
    import cloudpickle

    from calaudit.local import kernel_tests, lcb_features
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    resent, stages, config, single, flag, executor, before, data = _killing_run(
        two_workers, tmp_path, monkeypatch, 6, "age,region,flag", 1,
        ("y", "proba", "x:age", "x:region", "x:flag"))
    sources = []
    monkeypatch.setattr(kernel_tests, "feature_local_pass", lambda *a, _f=(
        kernel_tests.feature_local_pass), **k: (sources.append(k["source"]), _f(*a, **k))[1])
    monkeypatch.setattr(lcb_features, "kernel_rows", lambda kernel, _f=(
        lcb_features.kernel_rows): (sources.append(_f(kernel)), sources[-1])[1])
    from calaudit.attribution import explain
    from calaudit.local import aggregate_test
    mine = []  # the attribution's and the aggregate test's score members' rows
    monkeypatch.setattr(explain, "task_model", lambda rows, *a, _f=explain.task_model: (
        mine.append(type(rows).__name__), _f(rows, *a))[1])
    monkeypatch.setattr(aggregate_test, "score_pass", lambda rows, *a, _f=(
        aggregate_test.score_pass): (mine.append(type(rows).__name__), _f(rows, *a))[1])
    result = run_audit(data, dataclasses.replace(config, executor=executor), stages=stages)
    assert mine == ["ScoreRows", "LevelRows"]
    assert int(flag.read_text().split()[1]) in before
    assert canonical(result) == single
    assert resent == []
    # the KLCE feature pass's rows (scaled rows, labels) and the LCB kernel's (scaled
    # rows, cells) were read by their tasks
    assert {type(source).__name__ for source in sources} == {"KernelRows", "LcbKernelRows"}


def test_a_dataset_behind_a_url_is_planned_from_its_footers(dataset):
    """The same dataset through an fsspec URL (``memory://``, the in-process store): the
    same rows, summaries and provenance as the loader's."""
    import fsspec

    store = fsspec.filesystem("memory")
    for path in sorted(Path(dataset).glob("*.parquet")):
        store.pipe(f"/planned/{path.name}", path.read_bytes())
    url = "memory://planned/"
    try:
        loaded = load(url)
        with scale.using(SerialExecutor()):
            planned = plan(url)
        assert planned.provenance == loaded.provenance
        assert planned.class_counts() == loaded.class_counts()
        rows = planned.rows.read(39_990, 40_010, ["proba"])
        assert rows["proba"].tobytes() == loaded.y_proba[39_990:40_010].tobytes()
    finally:
        store.rm("/planned", recursive=True)


def test_a_multiclass_dataset_gives_the_loaders_audit(tmp_path):
    """Three probability columns and integer labels: the same rows, and the same JSON
    (the SKCE stage's feature pass of the three columns made by the tasks)."""
    rng = np.random.default_rng(8)
    n = 3_000
    proba = rng.dirichlet([2.0, 3.0, 4.0], n)
    table = {"label": np.array([rng.choice(3, p=row) for row in proba]),
             **{f"p_{k}": proba[:, k] for k in range(3)}}
    folder = str(write(tmp_path / "multi", table, (0, 1_000, 2_000, n)))
    loaded = load(folder)
    with scale.using(SerialExecutor()):
        planned = plan(folder)
        assert planned.classes == loaded.classes == ("0", "1", "2")
        assert planned.y_proba.tobytes() == loaded.y_proba.tobytes()
        config = AuditConfig(**CONFIG)
        assert canonical(run_audit(planned, config)) == canonical(run_audit(loaded, config))


def test_the_cli_checks_the_rows_on_the_workers(small, monkeypatch, tmp_path):
    """``calaudit test DATASET --workers 1``: the first reduction (the loader's row rules)
    runs on the cluster as the stages do, and no stage reads the rows into the client."""
    from calaudit.data.planned import RowsData
    from tests.cli_inprocess import run_cli
    from tests.conftest import dask_partials

    calls = dask_partials(monkeypatch)
    monkeypatch.setattr(RowsData, "_loaded", property(
        lambda self: (_ for _ in ()).throw(AssertionError("rows read into the client"))))
    outcome = run_cli("test", small, "--workers", "1", "--memory-limit", "1GB",
                      "--n-resamples", "19", "--method", "features", "--exit-zero",
                      "--quiet", "--json", "r.json", cwd=tmp_path)
    assert outcome.code == 0, outcome.stderr
    assert calls[0] == "check_partial" and "summary_partial" in calls



@dataclasses.dataclass(frozen=True)
class MadeRows:
    """Rows a task makes itself (``x = sin(0.37 i)``); each read of rows ``start`` adds a
    line to the file ``log``."""

    n: int
    log: str = ""
    reads_own_rows = True

    def read(self, start, stop, names):
        if self.log:
            with open(self.log, "a") as out:
                out.write(f"{start}\n")
        return {"x": np.sin(np.arange(start, stop) * 0.37)}


def _kept_square(start, stop, *, rows):
    x = rows.read(start, stop, ["x"])["x"]
    return {"x2": x * x}


def _kept_total(start, stop, *, kept):
    return {"total": np.array([kept.read(start, stop, ["x2"])["x2"].sum()])}


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def test_kept_rows_lost_with_a_worker_are_made_again_by_dask(two_workers, monkeypatch,
                                                            tmp_path):
    """Per-range results kept on the workers (``scale.kept``): a later reduction reads
    them where they are (nothing fetched or placed from this process); after the worker
    holding one is killed, Dask makes it again from its task and the sum is the
    in-process one, without the executor's own recovery of placed data."""
    import cloudpickle

    from calaudit.local.lcb import QUANTILES, summarize
    from calaudit.local.lcb_summary import kept_summary
    from calaudit.scale import shards
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    resent = scattered(monkeypatch)
    log = tmp_path / "reads"
    rows = MadeRows(9 * 4096 + 11, str(log))  # ten ranges: kept blocks of 4, 4 and 2
    ranges = scale.task_ranges(rows.n, 4096)
    with scale.using(SerialExecutor()), scale.kept(_kept_square, ranges,
                                                   {"rows": rows}) as kept:
        single = scale.map_sum(_kept_total, ranges, {"kept": kept})["total"]
    log.unlink()
    executor = DaskExecutor(two_workers)
    with scale.using(executor), scale.kept(_kept_square, ranges, {"rows": rows}) as kept:
        assert isinstance(kept, shards.Shards) and kept.nbytes == 0
        assert [hi - lo for lo, hi in kept.bounds] == [4 * 4096, 4 * 4096, 4096 + 11]
        two_workers.gather(kept.futures)  # made, and fetched by the test only
        holder = next(iter(two_workers.who_has([kept.futures[1]])[kept.futures[1].key]))
        # the worker process and its data gone (killed: its nanny starts another)
        two_workers.run(_die, workers=[holder], on_error="ignore")
        assert eventually(lambda: holder not in two_workers.nthreads(), 60.0)
        total = scale.map_sum(_kept_total, ranges, {"kept": kept})["total"]
        assert executor.placed_bytes == executor.block_bytes == 0
        # tasks of two kept blocks each: numpy's summary of the whole column (its
        # plans and prefixes broadcast, a few kB)
        summary = kept_summary(kept, rows.n, QUANTILES, column="x2", task_rows=2 * 4096)
        assert executor.block_bytes == 0 and executor.placed_bytes < 10_000
    squares = np.sin(np.arange(rows.n) * 0.37) ** 2
    assert json.dumps(summary) == json.dumps(summarize(squares))
    assert total.tobytes() == single.tobytes()
    assert resent == []
    reads = log.read_text().split()
    # block 1 (ranges 4 to 7) made again by Dask, range by range (with the others lost)
    assert all(reads.count(str(k * 4096)) == 2 for k in range(4, 8))


def test_the_lcb_of_a_multiclass_dataset_on_two_workers_is_the_single_process_json(
        two_workers, tmp_path, monkeypatch):
    """Three classes, a numeric and a categorical covariate: the SKCE and local stages on
    two workers (the SKCE feature pass of ``p`` and the one-hot labels, its subsamples
    and block terms; the tests' feature passes of the model and of each class
    one-vs-rest, the LCB's residual columns, cells and values made by the tasks, the
    values kept there) give the JSON of the same rows loaded into one process, which
    never reads them."""
    from calaudit.audit.battery import SkceStage
    from calaudit.audit.local_calibration import LocalCalibrationStage
    from calaudit.data.planned import RowsData
    from tests.conftest import dask_partials

    rng = np.random.default_rng(9)
    n = 2_000
    proba = rng.dirichlet([2.0, 3.0, 4.0], n)
    table = {"label": np.array([rng.choice(3, p=row) for row in proba]),
             **{f"p_{k}": proba[:, k] for k in range(3)},
             "age": np.round(rng.uniform(18, 90, n), 1),
             "region": np.array(["north", "south", "east"])[rng.integers(0, 3, n)]}
    folder = str(write(tmp_path / "multi", table, (0, 700, 1_300, n)))
    options = {"covariates": "age,region"}
    stages = (SkceStage(), LocalCalibrationStage())
    config = AuditConfig(**{**CONFIG, "skce": SkceConfig(max_quadratic_n=1_000)},
                         n_features=64,
                         local=LocalConfig(n_resamples=19, group_ci_resamples=19,
                                           lcb_cv_max_rows=300, median_max_rows=700))
    single = canonical(run_audit(load(folder, **options), config, stages=stages))
    calls = dask_partials(monkeypatch)
    executor = DaskExecutor(two_workers)
    with scale.using(executor):
        data = plan(folder, **options)

    def refused(self):
        raise AssertionError("a stage read the rows into the client")

    monkeypatch.setattr(RowsData, "_loaded", property(refused))
    result = run_audit(data, dataclasses.replace(config, executor=executor), stages=stages)
    assert canonical(result) == single
    # the curves' counts, sums, normalisers and centres: reductions over the tasks' rows
    assert {"cells_partial", "_taken_partial", "cell_partial", "_counts_partial",
            "_sums_partial", "_range_partial", "label_partial", "score_partial",
            "pick_partial", "max_partial", "terms_partial"} <= set(calls)


def test_a_worker_killed_after_the_lcb_was_kept_gives_the_same_json(two_workers,
                                                                   monkeypatch, tmp_path):
    """A worker dies while a task reads its range's ``y`` and ``proba`` for the LCB's
    second pass (``r^2``), after every row's LCB was kept on the workers: Dask reruns
    what was lost from the tasks' specs (the kept values from theirs), the JSON is the
    single-process run's and the executor's own recovery of placed data never runs."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    resent, stages, config, single, flag, executor, before, data = _killing_run(
        two_workers, tmp_path, monkeypatch, 7, "age,region", 2, ("y", "proba"))
    result = run_audit(data, dataclasses.replace(config, executor=executor), stages=stages)
    assert int(flag.read_text().split()[1]) in before
    assert canonical(result) == single
    assert resent == []
