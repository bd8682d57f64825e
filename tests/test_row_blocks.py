"""The row-block contract: block streams keyed by global block index, fixed task ranges and
ordered reductions (calaudit.numerics.row_blocks)."""

import numpy as np
import pytest

from calaudit.numerics.row_blocks import (
    ROW_BLOCK,
    TASK_ROWS,
    SerialExecutor,
    block_rng,
    blocks,
    fold,
    n_blocks,
    task_ranges,
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
