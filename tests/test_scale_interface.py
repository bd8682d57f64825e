"""The scale layer's one interface (:mod:`calaudit.scale`): the executor chosen for a
block, reductions started inside a task, and row sources placed for a block."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from calaudit import scale
from calaudit.scale import ArrayRows, SerialExecutor, ThreadExecutor, task_ranges


def _sum_partial(start: int, stop: int, x: np.ndarray) -> dict[str, np.ndarray]:
    return {"total": np.array([x[start:stop].sum()])}


def _nested_partial(start: int, stop: int, x: np.ndarray) -> dict[str, np.ndarray]:
    """A partial that starts a reduction of its own and says where it ran."""
    inner = scale.map_sum(_sum_partial, [(start, stop)], {"x": x})["total"]
    serial = isinstance(scale.current(), SerialExecutor)
    return {"total": inner, "serial": np.array([float(serial)])}


def test_the_default_is_threads_on_the_usable_cores():
    assert isinstance(scale.current(), ThreadExecutor)
    assert scale.current().threads == scale.usable_cores()


def test_using_chooses_the_executor_for_the_block_and_restores_it():
    serial, threads = SerialExecutor(), ThreadExecutor(3)
    with scale.using(serial) as chosen:
        assert chosen is serial and scale.current() is serial
        with scale.using(threads):
            assert scale.current() is threads
        with scale.using(None) as kept:  # None keeps the executor in force
            assert kept is serial and scale.current() is serial
        assert scale.current() is serial
    assert isinstance(scale.current(), ThreadExecutor) and scale.current() is not threads


def test_using_restores_the_executor_when_the_block_raises():
    with pytest.raises(RuntimeError), scale.using(SerialExecutor()):
        raise RuntimeError("boom")
    assert isinstance(scale.current(), ThreadExecutor)


def test_an_object_without_map_sum_is_refused():
    with pytest.raises(TypeError, match="map_sum"), scale.using(object()):
        pass


@pytest.mark.parametrize("executor", [SerialExecutor(), ThreadExecutor(1), ThreadExecutor(3)])
def test_a_reduction_inside_a_task_runs_in_the_task(executor):
    x = np.arange(300_000, dtype=np.float64)
    ranges = task_ranges(x.size, 4096 * 8)
    assert len(ranges) > 3
    with scale.using(executor):
        out = scale.map_sum(_nested_partial, ranges, {"x": x})
    assert out["total"][0] == x.sum()
    assert out["serial"][0] == len(ranges)  # every task's inner reduction ran serially


def test_the_choice_does_not_leak_into_other_threads():
    seen = []
    with scale.using(SerialExecutor()):
        thread = threading.Thread(target=lambda: seen.append(scale.current()))
        thread.start()
        thread.join()
    assert type(seen[0]) is ThreadExecutor


class _Placing(SerialExecutor):
    """An executor that places values (as a cluster does) and records it."""

    def __init__(self) -> None:
        self.kept, self.released = [], []

    def keep(self, value):
        self.kept.append(value)
        return ("handle", len(self.kept))

    def release(self, handle):
        self.released.append(handle)


def test_resident_places_a_source_for_the_block_and_releases_it():
    source = ArrayRows({"x": np.arange(10.0)})
    with scale.using(SerialExecutor()), scale.resident(source) as rows:
        assert rows is source  # nothing to place in this process
    placing = _Placing()
    with scale.using(placing):
        with pytest.raises(KeyError), scale.resident(source) as handle:
            assert handle == ("handle", 1) and placing.kept == [source]
            raise KeyError("the block fails")
    assert placing.released == [("handle", 1)]  # released on the way out, also on errors
