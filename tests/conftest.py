"""Shared fixtures: small synthetic tables written in every supported format, and the
local Dask clusters of the executor tests."""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data"


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook (absent under -p no:xdist)
def pytest_xdist_auto_num_workers(config) -> int | None:
    """``-n auto``: one worker per core this process may run on (its affinity mask, as
    ``calaudit.scale.usable_cores``), not psutil's physical cores (one on a
    2-vCPU VM whose vCPUs are hyperthreads of one core). ``PYTEST_XDIST_AUTO_NUM_WORKERS``
    still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity masks (macOS, Windows): every core
        return os.cpu_count() or 1


def _uses(item, fixture: str) -> bool:
    """``item`` asks for ``fixture``: as an argument or by name, as a parameter's value
    (``request.getfixturevalue(workers)``)."""
    callspec = getattr(item, "callspec", None)
    return (fixture in getattr(item, "fixturenames", ())
            or (callspec is not None and any(isinstance(value, str) and value == fixture
                                             for value in callspec.params.values())))


def pytest_collection_modifyitems(config, items) -> None:
    """In a parallel run (pytest-xdist's workers, ``--dist loadfile``, see pyproject.toml):
    the files using the two-process cluster (``two_workers``) first, so that each worker
    keeps one cluster for them (:class:`_SharedCluster`), then the other files holding a
    test marked ``slow`` or using the in-process cluster (``one_worker``), then the others
    by their number of tests (each order otherwise kept), so that the long files start
    early instead of ending the run on one worker while the others wait. A serial run
    keeps the file order."""
    _TWO_WORKERS.modules = {item.path for item in items if _uses(item, "two_workers")}
    if not hasattr(config, "workerinput"):
        return
    slow = {item.path for item in items if item.get_closest_marker("slow")
            or _uses(item, "one_worker")}
    counts: dict[Path, int] = {}
    for item in items:
        counts[item.path] = counts.get(item.path, 0) + 1
    items.sort(key=lambda item: (item.path not in _TWO_WORKERS.modules,
                                 item.path not in slow, -counts[item.path]))


def binary_frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """Calibrated binary predictions with a numeric and a categorical covariate."""
    rng = np.random.default_rng(seed)
    prob = np.round(rng.uniform(0.02, 0.98, n), 6)
    label = (rng.uniform(size=n) < prob).astype(np.int64)
    return pd.DataFrame({
        "id": np.arange(n), "label": label, "prob": prob,
        "age": rng.integers(20, 80, n), "race": rng.choice(["A", "B", "C"], n),
    })


def audit_json(executor, *, n: int, seed: int, method: str, resamples: int,
               local_resamples: int, random_state: int, n_features: int | None = None) -> str:
    """The JSON of ``run_audit`` on :func:`binary_frame` (age, race) with ``executor``,
    timings removed: what the executor tests compare byte for byte. ``n_features``: ``D``
    of the features method (``None``: the size rule)."""
    import json

    import calaudit
    from calaudit.audit.config import LocalConfig

    frame = binary_frame(n, seed=seed)
    data = calaudit.CalibrationData.from_arrays(
        frame["label"].to_numpy(), frame["prob"].to_numpy(),
        covariates=frame[["age", "race"]])
    config = calaudit.AuditConfig(method=method, n_features=n_features, n_resamples=resamples,
                                  random_state=random_state,
                                  local=LocalConfig(n_resamples=local_resamples),
                                  executor=executor)
    payload = calaudit.run_audit(data, config).to_dict()
    for volatile in ("created_at", "runtime_seconds"):
        payload.pop(volatile, None)
    return json.dumps(payload, sort_keys=True)


def feature_audit_json(executor) -> str:
    """:func:`audit_json` of 800 rows on the features method with 49 resamples: the audit
    the executor tests run on every executor and compare byte for byte."""
    return audit_json(executor, n=800, seed=3, method="features", resamples=49,
                      local_resamples=49, random_state=5)


def dask_partials(monkeypatch) -> list[str]:
    """The names of the partials that go through ``DaskExecutor.map_sum`` (and
    ``map_exact_sum``, ``map_combine``, ``map_pairs``: the exact passes' block pairs) from
    now on (the list
    fills as the reductions run): which reductions a test's run sent to Dask."""
    from calaudit.scale import DaskExecutor

    calls: list[str] = []
    original, pairs = DaskExecutor.map_sum, DaskExecutor.map_pairs
    combined, exact = DaskExecutor.map_combine, DaskExecutor.map_exact_sum

    def counted(self, partial, ranges, shared):
        calls.append(getattr(partial, "__name__", ""))
        return original(self, partial, ranges, shared)

    def counted_combine(self, partial, *args):
        calls.append(getattr(partial, "__name__", ""))
        return combined(self, partial, *args)

    def counted_pairs(self, partial, *args):
        calls.append(getattr(partial, "__name__", ""))
        return pairs(self, partial, *args)

    monkeypatch.setattr(DaskExecutor, "map_sum", counted)
    monkeypatch.setattr(DaskExecutor, "map_pairs", counted_pairs)
    monkeypatch.setattr(DaskExecutor, "map_combine", counted_combine)
    monkeypatch.setattr(DaskExecutor, "map_exact_sum", lambda self, partial, *args: (
        calls.append(getattr(partial, "__name__", "")), exact(self, partial, *args))[1])
    return calls


def multiclass_frame(n: int = 200, m: int = 4, seed: int = 1) -> pd.DataFrame:
    """Dirichlet predictions for classes c0..c{m-1}, string labels."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(m), n)
    labels = np.array([rng.choice(m, p=row) for row in probs])
    frame = pd.DataFrame({f"p_c{k}": probs[:, k] for k in range(m)})
    frame.insert(0, "y", [f"c{k}" for k in labels])
    return frame


def write_frame(frame: pd.DataFrame, path: Path) -> Path:
    """Write ``frame`` in the format given by ``path``'s suffix."""
    name = path.name
    if name.endswith((".csv", ".csv.gz")):
        frame.to_csv(path, index=False)
    elif name.endswith((".tsv", ".tsv.gz")):
        frame.to_csv(path, index=False, sep="\t")
    elif name.endswith(".parquet"):
        frame.to_parquet(path, index=False)
    elif name.endswith(".npz"):
        np.savez(path, **{c: _plain_array(frame[c]) for c in frame.columns})
    else:
        raise ValueError(name)
    return path


def write_parts(folder: Path, columns: dict[str, np.ndarray], cuts: tuple[int, ...]) -> str:
    """``columns`` as Parquet files ``part-k`` of rows ``cuts[k]:cuts[k + 1]`` in the new
    directory ``folder`` (a dataset of several files)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    for k in range(len(cuts) - 1):
        part = {name: values[cuts[k]:cuts[k + 1]] for name, values in columns.items()}
        pq.write_table(pa.table(part), folder / f"part-{k}.parquet")
    return str(folder)


def _plain_array(column: pd.Series) -> np.ndarray:
    """Numeric columns as they are; text as fixed-width unicode (never object arrays)."""
    if pd.api.types.is_numeric_dtype(column):
        return column.to_numpy()
    return column.to_numpy().astype(str)


@pytest.fixture
def binary_csv(tmp_path: Path) -> Path:
    return write_frame(binary_frame(), tmp_path / "preds.csv")


@pytest.fixture
def multiclass_csv(tmp_path: Path) -> Path:
    return write_frame(multiclass_frame(), tmp_path / "multi.csv")


# ------------------------------------------------------------------ Dask clusters

@contextmanager
def local_cluster(workers: int, processes: bool = True) -> Iterator[Any]:
    """A ``distributed.Client`` on a ``LocalCluster`` of ``workers`` single-thread
    workers, once they have all registered (a broadcast reaches only the workers running
    when it is sent): worker processes (1 GB each, killable) or, with ``processes=False``,
    threads of this process. Skips the test without ``distributed``."""
    distributed = pytest.importorskip("distributed")
    # the scheduler's HTTP server on a free port, not the default 8787 (taken by another
    # cluster of a parallel run: a warning and another port)
    options = ({"memory_limit": "1GB", "host": "127.0.0.1"} if processes else {})
    options["scheduler_kwargs"] = {"dashboard_address": "127.0.0.1:0"}
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                  processes=processes, dashboard_address=None,
                                  **options) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(workers, timeout=60)
        yield client


@pytest.fixture(scope="module")
def one_worker() -> Iterator[Any]:
    """One in-process worker thread, shared by a test module."""
    with local_cluster(1, processes=False) as client:
        yield client


class _SharedCluster:
    """The two-process cluster of :func:`two_workers`, started by the first module that
    needs it and kept for the next ones (its workers' start and first imports take
    seconds); closed before a test of a module that does not need it (the modules using
    a cluster run first, see :func:`pytest_collection_modifyitems`): idle, each of its
    processes still takes a few per cent of a core."""

    def __init__(self) -> None:
        self.modules: set[Path] = set()  # the test files using ``two_workers``
        self.client: Any = None
        self._stack: ExitStack | None = None

    def open(self) -> Any:
        if self.client is None:
            self._stack = ExitStack()
            self.client = self._stack.enter_context(local_cluster(2))
        return self.client

    def close(self) -> None:
        stack, self._stack, self.client = self._stack, None, None
        if stack is not None:
            stack.close()


_TWO_WORKERS = _SharedCluster()


def pytest_runtest_setup(item) -> None:
    if item.path not in _TWO_WORKERS.modules:
        _TWO_WORKERS.close()


def pytest_sessionfinish(session) -> None:
    _TWO_WORKERS.close()


@pytest.fixture(scope="module")
def _two_workers_module(request) -> None:
    """The shared cluster holds no data when a module starts (what earlier modules left
    is released, or the workers are restarted)."""
    _TWO_WORKERS.modules.add(request.path)  # also when asked for by name only
    client = _TWO_WORKERS.open()
    gc.collect()  # futures held in reference cycles of earlier modules
    try:
        if not eventually(lambda: not client.who_has(), 10.0):
            client.restart()
    except Exception:  # noqa: BLE001 - a cluster that cannot restart: a new one
        _TWO_WORKERS.close()


@pytest.fixture()
def two_workers(_two_workers_module) -> Any:
    """Two worker processes of the shared cluster, both running when the test starts:
    a worker an earlier test killed has come back, or the cluster is started anew."""
    client = _TWO_WORKERS.open()
    try:
        client.wait_for_workers(2, timeout=60)
    except Exception:  # noqa: BLE001 - the nanny did not bring the killed worker back
        _TWO_WORKERS.close()
        client = _TWO_WORKERS.open()
    return client


def scattered(monkeypatch) -> list[int]:
    """The calls of ``distributed.Client.scatter`` (data without lineage, which Dask could
    not make again), recorded as they run: calaudit places everything as tasks."""
    distributed = pytest.importorskip("distributed")
    calls: list[int] = []
    original = distributed.Client.scatter
    monkeypatch.setattr(distributed.Client, "scatter", lambda self, *a, **k: (
        calls.append(1), original(self, *a, **k))[1])
    return calls


def eventually(condition, seconds: float = 20.0) -> bool:
    """``condition()`` became true within ``seconds`` (the scheduler forgets released
    keys asynchronously)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def refused(monkeypatch):
    """Reading a planned dataset's rows into this process (``RowsData._loaded``) fails
    the test: what runs must read its rows in its tasks."""
    from calaudit.data.planned import RowsData

    def refuse(self):
        raise AssertionError("the rows were read into the client")
    monkeypatch.setattr(RowsData, "_loaded", property(refuse))
