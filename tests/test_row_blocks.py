"""The row-block contract: block streams keyed by global block index, fixed task ranges and
ordered reductions (calaudit.scale)."""

import numpy as np
import pytest

from calaudit import scale
from calaudit.scale import (
    ROW_BLOCK,
    TASK_ROWS,
    SerialExecutor,
    ThreadExecutor,
    block_rng,
    blocks,
    fold,
    n_blocks,
    task_ranges,
    usable_cores,
)


def test_task_ranges_cover_rows_on_block_boundaries():
    n = 3 * TASK_ROWS + 17
    ranges = task_ranges(n)
    assert ranges[0][0] == 0 and ranges[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    assert all(start % ROW_BLOCK == 0 for start, _ in ranges)
    assert task_ranges(n) == ranges  # a function of n only
    with pytest.raises(ValueError):
        task_ranges(n, 0)
    with pytest.raises(ValueError):  # a block-stream partial needs aligned ranges
        list(blocks(*task_ranges(n, ROW_BLOCK + 1)[1]))


def test_blocks_and_counts():
    got = list(blocks(ROW_BLOCK, 3 * ROW_BLOCK + 5))
    assert got == [(1, ROW_BLOCK, 2 * ROW_BLOCK), (2, 2 * ROW_BLOCK, 3 * ROW_BLOCK),
                   (3, 3 * ROW_BLOCK, 3 * ROW_BLOCK + 5)]
    assert n_blocks(0) == 0 and n_blocks(1) == 1 and n_blocks(ROW_BLOCK + 1) == 2
    with pytest.raises(ValueError):
        list(blocks(5, 10))


def test_block_streams_are_keyed_by_seed_name_and_block():
    a = block_rng(7, "labels", 3).random(4)
    assert np.array_equal(a, block_rng(7, "labels", 3).random(4))
    for other in (block_rng(8, "labels", 3), block_rng(7, "boot", 3), block_rng(7, "labels", 4)):
        assert not np.array_equal(a, other.random(4))


def _partial(start, stop, *, x, w):
    return {"s": np.array([x[start:stop].sum()]), "m": x[start:stop] @ w[start:stop]}


def test_serial_map_sum_is_an_ordered_fold():
    rng = np.random.default_rng(0)
    n = 5 * ROW_BLOCK + 11
    x, w = rng.normal(size=n), rng.normal(size=(n, 3))
    ranges = task_ranges(n, ROW_BLOCK)
    got = SerialExecutor().map_sum(_partial, ranges, {"x": x, "w": w})
    parts = [_partial(a, b, x=x, w=w) for a, b in ranges]
    expected = parts[0]["m"].copy()
    for p in parts[1:]:
        expected = expected + p["m"]
    assert np.array_equal(got["m"], expected)
    assert np.allclose(got["s"], x.sum())
    with pytest.raises(ValueError):
        fold([])


class _Boom(Exception):
    pass


def _failing(start, stop, *, x, w):
    if start >= 3 * ROW_BLOCK:
        raise _Boom(f"rows {start}-{stop}")
    return _partial(start, stop, x=x, w=w)


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_thread_map_sum_is_the_serial_fold(threads):
    """Partials computed on a pool of threads, folded in range order: the serial bytes
    (even for float64 sums whose value depends on the order of addition)."""
    rng = np.random.default_rng(1)
    n = 9 * ROW_BLOCK + 5
    x, w = rng.normal(size=n) * 1e8, rng.normal(size=(n, 3))
    ranges = task_ranges(n, ROW_BLOCK)
    shared = {"x": x, "w": w}
    serial = SerialExecutor().map_sum(_partial, ranges, shared)
    threaded = ThreadExecutor(threads).map_sum(_partial, ranges, shared)
    assert serial.keys() == threaded.keys()
    assert all(serial[k].tobytes() == threaded[k].tobytes() for k in serial)
    with pytest.raises(_Boom):  # a task's error reaches the caller
        ThreadExecutor(threads).map_sum(_failing, ranges, shared)
    with pytest.raises(ValueError):
        ThreadExecutor(threads).map_sum(_partial, [], shared)


def test_default_executor_uses_the_usable_cores():
    assert scale.current().threads == usable_cores() >= 1
    assert ThreadExecutor(1).threads == 1
    with pytest.raises(ValueError):
        ThreadExecutor(0)


@pytest.mark.slow
def test_the_audit_on_threads_gives_the_serial_json():
    """The default battery with the feature tests on two task ranges: the JSON of the
    thread executor is the serial executor's, byte for byte. ``D`` = 256 random features
    (the size rule's smallest; the rule would give 2,048 here): the same passes over the
    same two ranges, a fifth of the time."""
    import json

    import calaudit
    from calaudit.audit.config import LocalConfig
    from tests.conftest import binary_frame

    frame = binary_frame(TASK_ROWS + ROW_BLOCK + 11, seed=4)
    data = calaudit.CalibrationData.from_arrays(
        frame["label"].to_numpy(), frame["prob"].to_numpy(),
        covariates=frame[["age", "race"]])

    def audit(executor) -> str:
        config = calaudit.AuditConfig(method="features", n_features=256, n_resamples=19,
                                      random_state=3, local=LocalConfig(n_resamples=19),
                                      executor=executor)
        payload = calaudit.run_audit(data, config).to_dict()
        for volatile in ("created_at", "runtime_seconds"):
            payload.pop(volatile, None)
        return json.dumps(payload, sort_keys=True)

    assert audit(ThreadExecutor(2)) == audit(SerialExecutor())
