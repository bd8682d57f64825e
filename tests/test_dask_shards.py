"""Row sources placed as row blocks on Dask (``calaudit.scale.shards``): the serial
bytes with 1 and 2 workers and several block sizes (ranges inside one block and spanning
two), each block on one worker only (a broadcast would give every worker every row),
and a worker killed mid-reduction survived by sending its blocks again.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

from calaudit import scale
from calaudit.exceptions import ClusterError
from calaudit.scale import ArrayRows, DaskExecutor, SerialExecutor, task_ranges

distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")

from calaudit.scale import shards  # noqa: E402
from tests.conftest import (  # noqa: E402
    eventually,
    feature_audit_json,
    local_cluster,
    scattered,
)
from tests.test_dask import same_bytes  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])

TASK = 4096
N_ROWS = 9 * TASK + 321


def rows_sum_partial(start: int, stop: int, *, rows, weights: np.ndarray) -> dict:
    """Heavy-tailed sums of the range's rows (another order of addition gives other
    bits), and the rows' count: a partial that reads its range from a row source."""
    part = rows.read(start, stop, ("a", "b", "c"))
    values = np.exp(3.0 * part["a"]) * weights[0] + part["b"][:, 0] * part["b"][:, 1]
    return {"sum": np.array([values.sum(), (values ** 2).sum()]),
            "c": np.bincount(part["c"], minlength=5), "count": np.array([stop - start]),
            "n": np.array([rows.n])}


def rows_map_partial(start: int, stop: int, *, rows, weights: np.ndarray) -> dict:
    part = rows.read(start, stop, ("a", "c"))
    return {"y": part["a"] * weights[1] + part["c"]}


def killing_partial(start: int, stop: int, *, rows, weights: np.ndarray, flag: str,
                    victim: int) -> dict:
    """:func:`rows_sum_partial`, except that the worker running range ``victim`` kills
    itself (SIGKILL) the first time, losing the blocks it holds."""
    if start == victim and not os.path.exists(flag):
        Path(flag).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return rows_sum_partial(start, stop, rows=rows, weights=weights)


def always_killing_partial(start: int, stop: int, *, rows, weights: np.ndarray,
                           victim: int) -> dict:
    if start == victim:
        os.kill(os.getpid(), signal.SIGKILL)
    return rows_sum_partial(start, stop, rows=rows, weights=weights)


def columns(n: int = N_ROWS) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    return {"a": rng.standard_normal(n), "b": rng.standard_normal((n, 2)),
            "c": rng.integers(0, 5, n)}


WEIGHTS = {"weights": np.array([1.5, -0.25])}


@pytest.fixture(scope="module")
def expected() -> tuple[dict, dict]:
    source = ArrayRows(columns())
    ranges = task_ranges(N_ROWS, TASK)
    shared = {**WEIGHTS, "rows": source}
    return (SerialExecutor().map_sum(rows_sum_partial, ranges, shared),
            SerialExecutor().map_rows(rows_map_partial, ranges, shared))


# ------------------------------------------------------------------ the worker's source

def test_block_rows_read_global_rows_within_and_across_blocks():
    data = columns(50)
    source = ArrayRows(data)
    blocks = [[lo, min(50, lo + 7), ArrayRows({k: v[lo:lo + 7] for k, v in data.items()})]
              for lo in range(14, 35, 7)]
    rows = shards.BlockRows(50, blocks)
    assert rows.n == 50
    for start, stop in [(14, 21), (15, 19), (16, 30), (14, 35), (20, 20)]:
        got, want = rows.read(start, stop, ["a", "b"]), source.read(start, stop, ["a", "b"])
        assert all(got[k].tobytes() == want[k].tobytes() for k in want)
    for start, stop in [(13, 20), (30, 36), (0, 5)]:
        with pytest.raises(ValueError, match="outside this task's blocks"):
            rows.read(start, stop, ["a"])


# ---------------------------------------------------------------------- same bytes

@pytest.mark.parametrize("workers", ["one_worker", "two_workers"])
@pytest.mark.parametrize("block", [TASK, 3000, 5 * TASK + 1, 10 * TASK])
def test_sharded_reductions_give_the_serial_bytes(workers, block, request, expected):
    """``map_sum`` and ``map_rows`` over a kept source, blocks equal to the ranges,
    smaller (most ranges span two blocks), larger and not aligned, and one block for all."""
    client = request.getfixturevalue(workers)
    executor = DaskExecutor(client)
    executor.block_rows = block
    ranges = task_ranges(N_ROWS, TASK)
    before = set(client.who_has())
    with scale.using(executor), scale.resident(ArrayRows(columns())) as rows:
        assert isinstance(rows, shards.Shards) and len(rows.futures) == -(-N_ROWS // block)
        shared = {**WEIGHTS, "rows": rows}
        assert same_bytes(executor.map_sum(rows_sum_partial, ranges, shared), expected[0])
        assert same_bytes(executor.map_rows(rows_map_partial, ranges, shared), expected[1])
    assert eventually(lambda: set(client.who_has()) <= before)  # every block released


@pytest.mark.parametrize("workers", ["one_worker", "two_workers"])
def test_a_source_given_directly_in_shared_is_sharded_for_the_reduction(workers, request,
                                                                         expected):
    client = request.getfixturevalue(workers)
    executor = DaskExecutor(client)
    before = set(client.who_has())
    shared = {**WEIGHTS, "rows": ArrayRows(columns())}
    assert same_bytes(executor.map_sum(rows_sum_partial, task_ranges(N_ROWS, TASK), shared),
                      expected[0])
    placed = sum(v.nbytes for v in columns().values())
    assert placed <= executor.placed_bytes < placed + 1_000  # one copy in all
    assert eventually(lambda: set(client.who_has()) <= before)


def test_row_built_columns_are_built_per_block(one_worker, expected):
    """A column that builds the rows asked for (``ScaledRows``-like) is placed as the
    built rows of each block: the same bytes as the column read in one process."""

    class Built:
        def __init__(self, values):
            self.values, self.shape = values, values.shape

        def __getitem__(self, index):
            return self.values[index] * 1.0

    data = columns()
    source = ArrayRows({**data, "a": Built(data["a"])})
    executor = DaskExecutor(one_worker)
    executor.block_rows = 3000
    with scale.using(executor), scale.resident(source) as rows:
        got = executor.map_sum(rows_sum_partial, task_ranges(N_ROWS, TASK),
                               {**WEIGHTS, "rows": rows})
    assert same_bytes(got, expected[0])


# ------------------------------------------------- the audit's own reductions, sharded

def sharded_executor(client, block: int, monkeypatch) -> tuple[DaskExecutor, list]:
    """A Dask executor with blocks of ``block`` rows, and the list of the row sources it
    places as blocks (filled as the reductions run)."""
    executor = DaskExecutor(client)
    executor.block_rows = block
    placed: list = []
    original = shards.Shards.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        placed.append(len(self.bounds))

    monkeypatch.setattr(shards.Shards, "__init__", init)
    return executor, placed


@pytest.fixture(scope="module")
def in_process_audit() -> str:
    """The in-process JSON of the feature audit, for both worker counts."""
    return feature_audit_json(None)


@pytest.mark.parametrize("workers", ["one_worker", "two_workers"])
def test_the_audit_on_row_blocks_gives_the_in_process_json(workers, request, monkeypatch,
                                                          in_process_audit):
    """The default battery with the feature tests (800 rows) on blocks of 97 rows: every
    in-memory row source of the audit is placed as 9 blocks, each task's range spans
    them all; the JSON is the in-process bytes."""
    executor, placed = sharded_executor(request.getfixturevalue(workers), 97, monkeypatch)
    assert feature_audit_json(executor) == in_process_audit
    assert placed and set(placed) == {9}


@pytest.mark.parametrize("block", [TASK, 3000])
def test_the_feature_passes_on_row_blocks_give_the_serial_bytes(block, two_workers,
                                                                monkeypatch):
    """The skce and local feature passes (tasks of 4,096 rows over 5 ranges) on blocks of
    the ranges' size and of 3,000 rows (ranges spanning two blocks), 2 workers."""
    from tests.test_dask import _feature_inputs, _feature_stages

    inputs = _feature_inputs(2)
    expected = _feature_stages(inputs, SerialExecutor())
    executor, placed = sharded_executor(two_workers, block, monkeypatch)
    assert _feature_stages(inputs, executor) == expected
    assert placed and min(placed) >= 5


# ----------------------------------------------------------------- where rows live

def test_each_block_is_on_one_worker_and_no_worker_holds_every_row(two_workers):
    """Placed with ``keep``, each block is held by exactly one worker, the blocks
    alternate between the workers, and each worker's stored bytes are its own blocks
    (about half the rows), not the whole source as a broadcast would give."""
    client = two_workers
    executor = DaskExecutor(client)
    executor.block_rows = TASK
    data = columns()
    total = sum(v.nbytes for v in data.values())
    with scale.using(executor), scale.resident(ArrayRows(data)) as rows:
        handles = rows.futures if isinstance(rows, shards.Shards) else [rows]
        [f.exception(timeout=60) for f in handles]  # placed by tasks: held once run
        holders = client.who_has(handles)
        assert all(len(holders[f.key]) == 1 for f in handles)  # one copy of each
        assert len({holders[f.key][0] for f in handles}) == 2  # both workers used
        held = _held(client, handles)
        assert sum(held.values()) <= total + 2_000
        block = total * TASK / N_ROWS
        assert max(held.values()) <= total / 2 + block + 2_000


def _held(client, futures) -> dict[str, int]:
    """Bytes of ``futures``' data stored on each worker, as the scheduler counts them."""
    keys = {f.key for f in futures}

    def held(dask_scheduler, keys=keys):
        return {ws.address: sum(ts.nbytes for ts in ws.has_what if ts.key in keys)
                for ws in dask_scheduler.workers.values()}

    return client.run_on_scheduler(held)


# ---------------------------------------------------------------------- lost worker

def test_a_worker_killed_mid_reduction_loses_blocks_that_dask_makes_again(
        two_workers, expected, tmp_path, monkeypatch):
    """A worker dies (SIGKILL) while it runs a task: its blocks are gone; Dask makes them
    again from their tasks (which hold the rows) and reruns the tasks that read them; the
    client sends nothing again and the fold is the serial bytes."""
    client = two_workers
    executor = DaskExecutor(client)
    executor.block_rows = TASK
    ranges = task_ranges(N_ROWS, TASK)
    victim = ranges[3][0]
    flag = tmp_path / "killed"
    before = set(client.run(os.getpid).values())
    sent = scattered(monkeypatch)
    with scale.using(executor), scale.resident(ArrayRows(columns())) as rows:
        placed = executor.block_bytes
        result = executor.map_sum(killing_partial, ranges, {
            **WEIGHTS, "rows": rows, "flag": str(flag), "victim": victim})
        assert executor.block_bytes == placed and sent == []  # nothing sent again
    killed = int(flag.read_text())
    assert killed in before
    assert same_bytes(result, expected[0])


def test_a_task_that_keeps_killing_its_worker_is_one_cluster_error():
    """Blocks lost again and again (the task kills whichever worker runs it): Dask gives
    up after its allowed failures, and that is one ``ClusterError`` (a cluster of its own:
    its workers end up dead or restarting). The killing task is the fold's first, so the
    error names it: a later one would fail only once an earlier task, whose result the
    dead worker also held, had been recovered, and that can take attempts of its own."""
    with local_cluster(2) as client:
        executor = DaskExecutor(client, retries=0)
        executor.block_rows = TASK
        ranges = task_ranges(N_ROWS, TASK)
        with scale.using(executor), scale.resident(ArrayRows(columns())) as rows, \
                pytest.raises(ClusterError) as error:
            executor.map_sum(always_killing_partial, ranges,
                             {**WEIGHTS, "rows": rows, "victim": ranges[0][0]})
        message = str(error.value)
        # the first task's span: four ranges of 4,096 rows (dask_sums.RANGES_PER_TASK)
        assert "always_killing_partial task on rows 0-16,384" in message
        assert "lost" in message
