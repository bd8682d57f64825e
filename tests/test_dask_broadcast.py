"""What a whole audit broadcasts to every Dask worker does not grow with the rows: every
per-row value (the rows of the LCB's kernel, the columns it multiplies, the curves' rows
and values, the SKCE bootstrap's per-block draws, the exact path's row products) is
placed as row blocks, each held by one worker (``calaudit.scale.shards``); only small
values (frequencies, grids, cell matrices) go to every worker. The row-blocked values
(``row_block`` / ``joined``) survive a killed worker like the row sources.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

from calaudit.local.lcb_curves import CurveRequest, CurveRows
from calaudit.scale import BlockTable, DaskExecutor, SerialExecutor, task_ranges

distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")

from calaudit.scale import shards  # noqa: E402
from tests.conftest import scattered  # noqa: E402
from tests.test_dask import same_bytes  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])

#: Broadcast bytes allowed to differ between two sizes of the same audit (a few small
#: values whose size depends on n without being per row, e.g. the printed row counts).
SLACK = 2048


def audit_traffic(client, monkeypatch, n: int, method: str) -> tuple[int, list]:
    """Bytes broadcast (placed minus placed as blocks) by the audit of ``n`` rows with
    ``method`` on blocks of 1,000 rows, and ``(kind, holders per block)`` of every row
    placement, looked up as it is placed."""
    from tests.conftest import audit_json

    executor = DaskExecutor(client)
    executor.block_rows = 1000
    seen: list = []
    original = shards.Shards.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        [f.exception(timeout=60) for f in self.futures]  # placed by tasks: held once run
        holders = client.who_has(self.futures)
        kind = (sorted(self.source.columns) if hasattr(self.source, "columns")
                else type(self.source).__name__)
        seen.append((kind, [len(holders[f.key]) for f in self.futures]))

    monkeypatch.setattr(shards.Shards, "__init__", init)
    resamples = 49 if method == "features" else 19
    # D = 256 random features (the size rule's smallest; it gives 2,048 at both sizes): the
    # same placements, and only the frequencies, broadcast at both sizes, are smaller
    audit_json(executor, n=n, seed=3, method=method, resamples=resamples,
               local_resamples=resamples, random_state=5,
               n_features=256 if method == "features" else None)
    return executor.placed_bytes - executor.block_bytes, seen


@pytest.mark.slow
@pytest.mark.parametrize("method, sizes", [("features", (3_000, 9_000)),
                                           ("exact", (2_000, 3_000))])
def test_the_audit_broadcasts_nothing_per_row(method, sizes, two_workers, monkeypatch):
    """The same audit at two sizes (at least 1,000 rows apart: a broadcast value of one
    byte a row would exceed the slack) broadcasts the same bytes (on the former code: about
    120 bytes per row more, the kernel's rows, ``w``, the curves' rows and values; the
    exact sizes plot the most rows, 2,000, at both), and
    every row placement, including the kernel's, the curves' and the bootstrap's, has
    each block on exactly one worker."""
    small, _ = audit_traffic(two_workers, monkeypatch, sizes[0], method)
    large, seen = audit_traffic(two_workers, monkeypatch, sizes[1], method)
    assert abs(large - small) <= SLACK, (small, large)
    assert seen and all(set(holders) == {1} for _, holders in seen)
    kinds = {str(kind) for kind, _ in seen}
    assert "CurveRows" in kinds
    if method == "features":
        assert {"['cells', 'z']", "['w']", "BlockTable"} <= kinds
    else:
        assert "['columns', 'r2', 'z']" in kinds


# ------------------------------------------------ row-blocked values and a lost worker

TASK = 4096
N_ROWS = 9 * TASK + 321
TABLE_ROWS = 1000


def blocked_values() -> dict:
    """Two curve requests (sorted global rows, values) and a per-1,000-row table."""
    rng = np.random.default_rng(11)
    requests = []
    for name, share in (("a", 0.3), ("b", 0.8)):
        rows = np.flatnonzero(rng.random(N_ROWS) < share)
        requests.append(CurveRequest("age", None, name, rows, rng.standard_normal(rows.size)))
    table = rng.integers(0, 100, (-(-N_ROWS // TABLE_ROWS), 3))
    return {"curves": CurveRows(tuple(requests), N_ROWS),
            "table": BlockTable(table, TABLE_ROWS, N_ROWS)}


def blocked_partial(start: int, stop: int, *, curves, table, flag: str = "",
                    victim: int = -1) -> dict:
    """Heavy-tailed sums over the requests' rows in the range and the table's entries of
    the range's rows; the worker running range ``victim`` kills itself the first time."""
    if start == victim and not os.path.exists(flag):
        Path(flag).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    out = {}
    for k, req in enumerate(curves.requests):
        a, b = np.searchsorted(req.rows, [start, stop])
        out[str(k)] = np.array([np.exp(3.0 * req.x[a:b]).sum(), req.rows[a:b].sum()])
    entries = range(start // TABLE_ROWS, -(-stop // TABLE_ROWS))
    out["table"] = np.sum([table[e] for e in entries], axis=0)
    return out


@pytest.mark.parametrize("block", [TASK, 3000, 997])
def test_row_blocked_values_give_the_serial_bytes_on_one_worker_each(block, two_workers):
    """Curve rows and a block table placed as blocks of ``block`` rows (inside a range,
    spanning two, not aligned with the table's entries): the serial bytes, each block
    held by one worker, no worker holding the whole value."""
    values = blocked_values()
    ranges = task_ranges(N_ROWS, TASK)
    expected = SerialExecutor().map_sum(blocked_partial, ranges, values)
    executor = DaskExecutor(two_workers)
    executor.block_rows = block
    assert same_bytes(executor.map_sum(blocked_partial, ranges, values), expected)
    assert executor.placed_bytes - executor.block_bytes < 1000  # nothing per row to all
    placed = shards.place(two_workers, values, block)
    try:
        for handle in placed.values():
            [f.exception(timeout=60) for f in handle.futures]
            holders = two_workers.who_has(handle.futures)
            assert all(len(holders[f.key]) == 1 for f in handle.futures)
            assert len({holders[f.key][0] for f in handle.futures}) == 2
    finally:
        for handle in placed.values():
            handle.release()


def test_a_worker_killed_mid_reduction_loses_row_blocked_values_made_again_by_dask(
        two_workers, tmp_path, monkeypatch):
    """A worker dies while it runs a task: its blocks of the curve rows and the table
    are gone; Dask makes them again from their tasks and reruns the tasks that read them;
    the fold is the serial bytes and the client sends nothing again."""
    client = two_workers
    values = blocked_values()
    ranges = task_ranges(N_ROWS, TASK)
    expected = SerialExecutor().map_sum(blocked_partial, ranges, values)
    executor = DaskExecutor(client)
    executor.block_rows = TASK
    flag = tmp_path / "killed"
    before = set(client.run(os.getpid).values())
    sent = scattered(monkeypatch)
    result = executor.map_sum(blocked_partial, ranges,
                              {**values, "flag": str(flag), "victim": ranges[3][0]})
    assert int(flag.read_text()) in before
    clean = DaskExecutor(client)  # the same reduction, no worker lost
    clean.block_rows = TASK
    clean.map_sum(blocked_partial, ranges, values)
    assert executor.block_bytes == clean.block_bytes and sent == []  # placed once
    assert same_bytes(result, expected)


def test_block_table_blocks_join_across_shared_entries():
    """Blocks whose boundary falls inside a table entry share it; joined, each entry is
    held once and read with its global number; an entry outside is an IndexError."""
    table = BlockTable(np.arange(20).reshape(10, 2), 100, 1000)
    pieces = [[lo, min(1000, lo + 250), table.row_block(lo, min(1000, lo + 250))]
              for lo in range(250, 1000, 250)]
    joined = BlockTable.joined(1000, pieces)
    assert joined.shape == (10, 2)
    assert [joined[k].tolist() for k in range(2, 10)] == [[2 * k, 2 * k + 1]
                                                          for k in range(2, 10)]
    with pytest.raises(IndexError):
        joined[1]
