"""Row reductions on Dask (``calaudit.scale``): the same bytes as in one process with
1 and 2 workers, a worker killed mid-run survived, an unreachable scheduler is one line,
and everything works as before without Dask installed.

The clusters are ``distributed.LocalCluster``: in-process threads for one worker, two
single-threaded worker processes otherwise (module-scoped, started once).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from pathlib import Path

import numpy as np
import pytest

from calaudit import scale
from calaudit.exceptions import ClusterError, ConfigError
from calaudit.scale import DaskExecutor, fold_in_order, open_executor
from calaudit.settings.sections import DaskConfig
from tests.cli_inprocess import assert_one_line_error, run_cli
from tests.conftest import (
    audit_json,
    binary_frame,
    dask_partials,
    eventually,
    feature_audit_json,
    local_cluster,
)

distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")

from calaudit.scale import SerialExecutor, task_ranges

# the partials below travel to the worker processes by value, not by module name
cloudpickle.register_pickle_by_value(sys.modules[__name__])

N_ROWS = 10 * 4096 + 123
TASK = 4096


def toy_partial(start: int, stop: int, *, weights: np.ndarray, power: int) -> dict:
    """Sums over the rows [start, stop) of heavy-tailed values: float addition in another
    order gives other bits, so only the in-order fold reproduces the serial result."""
    rows = np.random.default_rng([11, start]).standard_normal((stop - start, 3))
    values = np.exp(4.0 * rows) * weights
    return {"sum": values.sum(axis=0), "gram": values.T @ values,
            "moment": np.array([(values[:, 0] ** power).sum()]), "count": stop - start}


def killing_partial(start: int, stop: int, *, weights: np.ndarray, power: int,
                    flag: str, victim: int) -> dict:
    """:func:`toy_partial`, except that the worker process running range ``victim``
    kills itself (SIGKILL, as the out-of-memory killer would) the first time."""
    if start == victim and not os.path.exists(flag):
        Path(flag).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return toy_partial(start, stop, weights=weights, power=power)


SHARED = {"weights": np.array([1.0, 0.5, 2.0]), "power": 3}


def same_bytes(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        np.asarray(a[k]).dtype == np.asarray(b[k]).dtype
        and np.asarray(a[k]).tobytes() == np.asarray(b[k]).tobytes() for k in a)


@pytest.fixture(scope="module")
def serial() -> dict:
    return SerialExecutor().map_sum(toy_partial, task_ranges(N_ROWS, TASK), SHARED)


# ----------------------------------------------------------------------- same bytes

def test_the_fold_order_decides_the_bits(serial):
    """The check below can fail: the same partials added in another order differ."""
    parts = [toy_partial(a, b, **SHARED) for a, b in task_ranges(N_ROWS, TASK)]
    assert len(parts) == 11
    assert same_bytes(fold_in_order(parts), serial)
    assert not same_bytes(fold_in_order(parts[::-1]), serial)


@pytest.mark.parametrize("workers", ["one_worker", "two_workers"])
def test_dask_executor_gives_the_serial_bytes(workers, serial, request):
    client = request.getfixturevalue(workers)
    executor = DaskExecutor(client)
    result = executor.map_sum(toy_partial, task_ranges(N_ROWS, TASK), SHARED)
    assert same_bytes(result, serial)
    assert result["count"] == N_ROWS
    assert "worker(s)" in executor.describe()
    # nothing is left on the cluster: the partials and the scattered `shared` are released
    assert eventually(lambda: not client.who_has())


def grid_partial(start: int, stop: int, *, weights: np.ndarray, power: int) -> dict:
    """:func:`toy_partial`'s rows bounded and rounded to a grid of ``2^-20``: every sum
    is exact (41 bits at most), so any order of addition gives the same bytes."""
    rows = np.random.default_rng([11, start]).standard_normal((stop - start, 3))
    values = np.round(np.clip(rows, -8.0, 8.0) * 2**20) / 2**20 * weights
    return {"sum": values.sum(axis=0), "count": np.array(stop - start)}


def test_exact_sums_are_added_on_the_workers_with_the_serial_bytes(two_workers, serial):
    """11 ranges: the workers add groups of 8 and 3 (each last to first), the client
    fetches the two totals only, and the bytes are the serial fold's; the check can fail:
    sums that are not exact (:func:`toy_partial`) come out different."""
    ranges = task_ranges(N_ROWS, TASK)
    executor = DaskExecutor(two_workers)
    result = executor.map_exact_sum(grid_partial, ranges, SHARED)
    assert same_bytes(result, SerialExecutor().map_sum(grid_partial, ranges, SHARED))
    assert executor.fetched_bytes < 3 * sum(np.asarray(v).nbytes for v in result.values())
    with scale.using(SerialExecutor()):  # executors without it fall back to map_sum
        assert same_bytes(scale.map_exact_sum(toy_partial, ranges, SHARED), serial)
    assert not same_bytes(executor.map_exact_sum(toy_partial, ranges, SHARED), serial)
    assert eventually(lambda: not two_workers.who_has())


def table_partial(start: int, stop: int, *, table: np.ndarray) -> dict:
    return {"rows": np.array(stop - start), "table": table.astype(np.float64)}


def test_a_made_value_is_made_on_a_worker(two_workers):
    """``scale.made``: the value itself in one process; on Dask a handle of a value a
    task made on a worker, which the tasks read, released after the block."""
    ranges = task_ranges(N_ROWS, TASK)
    with scale.using(SerialExecutor()), scale.made(np.arange, 4) as value:
        assert value.tolist() == [0, 1, 2, 3]
    executor = DaskExecutor(two_workers)
    with scale.using(executor), scale.made(np.arange, 4) as handle:
        assert type(handle).__name__ == "Future"
        total = scale.map_exact_sum(table_partial, ranges, {"table": handle})
    assert total["rows"] == N_ROWS and total["table"].tolist() == [0, 11, 22, 33]
    assert executor.placed_bytes == 0  # the table was never sent from here
    assert eventually(lambda: not two_workers.who_has())


def test_reductions_sharing_names_do_not_release_each_others_data(one_worker, serial):
    """``shared`` goes to the cluster under fresh keys, not under its names: two
    reductions at once, both with ``weights``, each get their own."""
    from concurrent.futures import ThreadPoolExecutor

    executor = DaskExecutor(one_worker)
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(executor.map_sum, toy_partial, task_ranges(N_ROWS, TASK),
                            {**SHARED, "power": power}) for power in (3, 3, 1)]
        results = [run.result() for run in runs]
    assert same_bytes(results[0], serial) and same_bytes(results[1], serial)
    assert not same_bytes(results[2], serial)


def test_partials_must_keep_their_shapes(one_worker):
    def growing(start, stop):
        return {"x": np.zeros(1 + start // TASK)}

    with pytest.raises(ValueError, match="shape"):
        DaskExecutor(one_worker).map_sum(growing, task_ranges(3 * TASK, TASK), {})


def test_a_bug_in_a_partial_is_raised_as_it_is(one_worker):
    def broken(start, stop):
        raise ZeroDivisionError("in the partial")

    with pytest.raises(ZeroDivisionError, match="in the partial"):
        DaskExecutor(one_worker, retries=0).map_sum(broken, [(0, 10)], {})


def _resolved(value):
    if isinstance(value, FakeFuture):
        return value.result()
    if isinstance(value, dict):
        return {k: _resolved(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_resolved(v) for v in value)
    return value


class FakeFuture:
    def __init__(self, client, fn, args):
        self.client, self.fn, self.args, self.released = client, fn, args, False

    def result(self):  # the futures among the arguments replaced by their values, as Dask does
        return self.fn(*[_resolved(arg) for arg in self.args])

    def exception(self, timeout=None):  # the task has ended: the executor then fetches it
        return None

    def release(self):
        self.released = True
        self.client.live.discard(self)


class FakeClient:
    """Enough of ``distributed.Client`` to watch what the executor keeps in flight."""

    def __init__(self, threads: int):
        self.threads, self.live, self.most, self.cancelled = threads, set(), 0, 0

    def nthreads(self):
        return {f"w{k}": 1 for k in range(self.threads)}

    def scatter(self, values, broadcast, hash):
        return list(values)

    def submit(self, fn, *args, **options):
        future = FakeFuture(self, fn, args)
        self.live.add(future)
        self.most = max(self.most, len(self.live))
        return future

    def cancel(self, futures):
        for future in futures:
            if isinstance(future, FakeFuture):
                self.cancelled += 1
                self.live.discard(future)


@pytest.mark.parametrize("threads", [1, 3])
def test_tasks_in_flight_are_bounded_by_the_window(threads, serial):
    client = FakeClient(threads)
    executor = DaskExecutor(client)
    assert executor.window() == max(8, 4 * threads)
    ranges = task_ranges(N_ROWS, TASK // 64)  # 588 ranges, 16 per task: 37 tasks
    result = executor.map_sum(toy_partial, ranges, SHARED)
    # the window's tasks and the task making the shared values
    assert client.most == executor.window() + 1 < len(ranges) // 16
    assert not client.live
    assert result["count"] == N_ROWS


def test_a_failed_fold_cancels_the_tasks_in_flight():
    def bad_shape(start, stop):
        return {"x": np.zeros(1 if start == 0 else 2)}

    client = FakeClient(2)
    with pytest.raises(ValueError, match="shape"):
        DaskExecutor(client).map_sum(bad_shape, task_ranges(40 * TASK, TASK), {})
    assert client.cancelled == DaskExecutor(client).window() - 1 and not client.live


# ---------------------------------------------------------------------- lost worker

def test_a_worker_killed_mid_run_is_retried_and_the_result_is_unchanged(
        two_workers, serial, tmp_path):
    """A worker process dies (SIGKILL) while it runs a task; Dask reruns the task on a
    live worker (the nanny restarts the dead one) and the fold is the same bytes."""
    ranges = task_ranges(N_ROWS, TASK)
    victim = ranges[4][0]
    flag = tmp_path / "killed"
    before = set(two_workers.run(os.getpid).values())
    result = DaskExecutor(two_workers).map_sum(
        killing_partial, ranges, {**SHARED, "flag": str(flag), "victim": victim})
    killed = int(flag.read_text())
    assert killed in before  # the task did kill one of the original worker processes
    assert same_bytes(result, serial)
    assert killed not in set(two_workers.run(os.getpid).values())


@pytest.fixture(scope="module")
def _lone_worker_cluster():
    with local_cluster(1) as client:
        yield client


@pytest.fixture()
def lone_worker_process(_lone_worker_cluster):
    """A cluster of one worker process: it holds the only copy of every broadcast value,
    and the worker its nanny starts after a kill holds none (running when a test starts;
    the tests sharing it kill it)."""
    _lone_worker_cluster.wait_for_workers(1, timeout=60)
    return _lone_worker_cluster


def test_shared_values_lost_with_their_only_worker_are_made_again_by_dask(
        lone_worker_process, serial, tmp_path):
    """The one worker dies (SIGKILL) mid-reduction and takes the only copy of the shared
    values along: Dask makes them again from their task on the restarted worker, and the
    fold is the serial bytes; the client sends nothing again."""
    client = lone_worker_process
    ranges = task_ranges(N_ROWS, TASK)
    flag = tmp_path / "killed"
    before = set(client.run(os.getpid).values())
    executor = DaskExecutor(client)
    result = executor.map_sum(killing_partial, ranges,
                              {**SHARED, "flag": str(flag), "victim": ranges[2][0]})
    assert int(flag.read_text()) in before
    assert same_bytes(result, serial)
    sent = [key for name, key, _ in executor.broadcasts if name == "killing_partial"]
    assert sorted(sent) == sorted([*SHARED, "flag", "victim"])  # once each


def test_a_pair_pass_survives_losing_the_only_copy_of_its_shared_values(
        lone_worker_process, tmp_path):
    """The same for a block-pair pass: the one worker dies with its blocks and the only
    copy of the pass's shared values; Dask makes the blocks and the values again, and
    the forms and products are the serial bytes."""
    flag = tmp_path / "killed"
    executor = DaskExecutor(lone_worker_process)
    blocks, same_as_serial = _killed_pair_pass(executor, 131, flag, victim=(1, 3))
    assert flag.exists()
    assert len(executor.broadcasts) == 5  # the five values, sent once
    assert same_as_serial


# ------------------------------------------- statistics on tasks reading their own rows

@pytest.fixture(scope="module")
def parquet_rows(tmp_path_factory):
    """The same rows (three reduction ranges) as datasets of 1, 3 and 7 Parquet files, and
    the columns."""
    from calaudit.data.locations import locate
    from calaudit.data.row_source import ParquetRows
    from tests.test_row_sources import table, write_files

    columns = table()
    base = tmp_path_factory.mktemp("dask_rows")
    return [ParquetRows.of(locate(str(write_files(base / f"p{k}", columns, k))))
            for k in (1, 3, 7)], columns


@pytest.mark.parametrize("workers", ["one_worker", "two_workers"])
def test_the_attribution_fit_on_dask_gives_the_serial_bytes(workers, request):
    from calaudit.attribution.irls import fit_many, model_rows

    def fit_logistic(y, offset, cell, design):
        with scale.resident(model_rows(y, offset, cell)) as rows:
            (fit,) = fit_many(y.size, [design], rows)
        return fit

    client = request.getfixturevalue(workers)
    rng = np.random.default_rng(9)
    n = 3 * TASK + 77
    cell = rng.integers(0, 4, n).astype(np.int32)
    offset = rng.normal(0, 1, n)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-offset - 0.2 * cell))).astype(float)
    design = np.column_stack([np.ones(4), np.eye(4)[:, 1:]])
    from calaudit.attribution import irls

    before = set(client.who_has())  # keys earlier tests may have left
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(irls, "PART_ROWS", TASK)  # several tasks at this size
        with scale.using(SerialExecutor()):
            serial_fit = fit_logistic(y, offset, cell, design)
        with scale.using(DaskExecutor(client)):
            dask_fit = fit_logistic(y, offset, cell, design)
    assert dask_fit.params.tobytes() == serial_fit.params.tobytes()
    assert dask_fit.cov.tobytes() == serial_fit.cov.tobytes()
    assert dask_fit.deviance == serial_fit.deviance
    assert eventually(lambda: set(client.who_has()) <= before)


# ------------------------------------------------------------------- the whole audit

@pytest.fixture(scope="module")
def audit_in_process() -> str:
    return feature_audit_json(None)


@pytest.mark.parametrize("workers", ["one_worker", "two_workers"])
def test_the_audit_through_dask_gives_the_same_json(workers, request, monkeypatch,
                                                    audit_in_process):
    """The default battery with the feature tests, in-process and on 1 and 2 workers.
    Once the feature passes take an executor (calaudit.scale), their
    reductions must have gone through Dask."""
    client = request.getfixturevalue(workers)
    calls = dask_partials(monkeypatch)
    assert feature_audit_json(DaskExecutor(client)) == audit_in_process
    assert calls, "no reduction of the audit ran on the executor"
    assert "glm_partial" in calls, "the attribution fit did not run on the executor"
    for partial in ("label_partial", "spiegelhalter_partial", "cell_partial", "mean_partial"):
        assert partial in calls, f"{partial} did not run on the executor"


def test_the_executor_is_not_a_setting_and_not_recorded():
    from calaudit.audit.config import AuditConfig

    config = AuditConfig(executor=SerialExecutor())
    assert "executor" not in config.to_dict()
    assert config.to_dict() == AuditConfig().to_dict()
    with pytest.raises(ConfigError, match="map_sum"):
        AuditConfig(executor=object())


# ------------------------------------------------------------------------- settings

@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"scheduler": "localhost"}, "host:port"),
    ({"scheduler": "tcp://a b:1"}, "host:port"),
    ({"scheduler": "tcp://h:8786", "workers": 2}, "not both"),
    ({"workers": 0}, "dask.workers must be an integer in [1, 1024]"),
    ({"threads": 0}, "dask.threads must be an integer in [1, 1024]"),
    ({"workers": 2, "memory_limit": "2 parsecs"}, "memory_limit"),
    ({"workers": 2, "memory_limit": "0GB"}, "memory_limit"),
    ({"timeout": 0}, "dask.timeout"),
    ({"timeout": float("inf")}, "dask.timeout"),
])
def test_bad_dask_settings_are_config_errors(kwargs, fragment):
    with pytest.raises(ConfigError) as caught:
        DaskConfig(**kwargs)
    assert fragment in str(caught.value)


@pytest.mark.parametrize("address", ["tcp://10.0.0.5:8786", "scheduler:8786",
                                     "tls://dask.example.org:8786", "[::1]:8786"])
def test_scheduler_addresses(address):
    assert DaskConfig(scheduler=address).scheduler == address


def test_nothing_set_runs_in_process():
    with open_executor(DaskConfig()) as executor:
        assert executor is None
    with open_executor(None) as executor:
        assert executor is None


def test_config_show_lists_the_dask_settings(tmp_path):
    (tmp_path / "calaudit.toml").write_text('[dask]\nscheduler = "tcp://10.0.0.5:8786"\n')
    outcome = run_cli("config", "show", cwd=tmp_path)
    assert outcome.code == 0, outcome.stderr
    for key in ("dask.scheduler", "dask.workers", "dask.memory_limit", "dask.timeout",
                "dask.threads"):
        assert key in outcome.stdout
    assert "tcp://10.0.0.5:8786" in outcome.stdout


# --------------------------------------------------------------------------- faults

def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_scheduler_is_one_line_and_nothing_is_written(tmp_path):
    frame = binary_frame(200)
    frame.to_csv(tmp_path / "d.csv", index=False)
    address = f"tcp://127.0.0.1:{_closed_port()}"
    outcome = run_cli("test", "d.csv", "--dask", address, "--json", "r.json",
                      cwd=tmp_path, env={"CALAUDIT_DASK__TIMEOUT": "1"})
    line = assert_one_line_error(outcome, f"--dask {address}: cannot reach the scheduler",
                                 "hint:")
    assert "Traceback" not in outcome.stderr, line
    assert not (tmp_path / "r.json").exists()


def test_open_executor_raises_a_cluster_error():
    with pytest.raises(ClusterError, match="cannot reach the scheduler"), open_executor(
            DaskConfig(scheduler=f"127.0.0.1:{_closed_port()}", timeout=1)):
        pass


def test_the_cli_on_a_local_cluster_gives_the_same_json(tmp_path):
    """``--workers 1`` starts (and closes) a local cluster; the JSON is the same bytes
    apart from the timings, and the [dask] settings are not in it."""
    binary_frame(400).to_csv(tmp_path / "d.csv", index=False)
    common = ("test", "d.csv", "--covariates", "age,race", "--n-resamples", "49",
              "--local-resamples", "49", "--method", "features", "--exit-zero", "--quiet")
    alone = run_cli(*common, "--json", "alone.json", cwd=tmp_path)
    on_dask = run_cli(*common, "--workers", "1", "--memory-limit", "1GB", "--json",
                      "dask.json", cwd=tmp_path)
    assert alone.code == on_dask.code == 0, on_dask.stderr
    assert on_dask.stderr == ""

    def stable(name):
        payload = json.loads((tmp_path / name).read_text())
        for volatile in ("created_at", "runtime_seconds"):
            payload.pop(volatile)
        return payload

    assert stable("alone.json") == stable("dask.json")
    assert "dask" not in stable("dask.json")["config"]


# --------------------------------------------------------------------- without Dask

WITHOUT_DASK = """
import json, sys

class NoDask:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("dask", "distributed"):
            raise ImportError(f"No module named {name!r} (blocked)")
        return None

sys.meta_path.insert(0, NoDask())
from tests.cli_inprocess import run_cli

out = {"plain": run_cli("test", "d.csv", "--n-resamples", "20", "--json", "r.json").code,
       "imported": sorted(m for m in sys.modules if m.split(".")[0] in ("dask", "distributed"))}
for flag in (["--workers", "2"], ["--dask", "tcp://127.0.0.1:8786"]):
    outcome = run_cli("test", "d.csv", *flag, "--json", "s.json")
    out[flag[0]] = [outcome.code, outcome.error_lines]
print(json.dumps(out))
"""


def test_without_dask_everything_works_as_before(tmp_path):
    """Dask missing (its imports blocked, in a child process): a plain run works and never
    imports Dask; asking for a cluster is one line naming the extra, nothing written."""
    import subprocess

    binary_frame(200).to_csv(tmp_path / "d.csv", index=False)
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(root), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-c", WITHOUT_DASK], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["plain"] in (0, 1) and (tmp_path / "r.json").exists()
    assert out["imported"] == []
    for flag in ("--workers", "--dask"):
        code, lines = out[flag]
        assert code == 2 and len(lines) == 1, (flag, lines)
        assert lines[0].startswith(f"calaudit: error: {flag} ")
        assert "Dask is not installed" in lines[0]
        assert "pip install 'calaudit[dask]'" in lines[0]
    assert not (tmp_path / "s.json").exists()


# ------------------------------------------- feature passes: rows placed once per stage

def record_placements(monkeypatch) -> tuple[list[int], list[int]]:
    """The pickled sizes of what ``DaskExecutor.keep`` places and of the values each
    reduction shares with every worker besides (lists that fill as the reductions run;
    sources that read their own rows are not counted: they travel in the tasks)."""
    from calaudit.scale import dask_executor, dask_sums

    kept: list[int] = []
    scattered: list[int] = []
    original_keep, original_shared = DaskExecutor.keep, dask_sums.shared_task

    def keep(self, value):
        kept.append(len(cloudpickle.dumps(value)))
        return original_keep(self, value)

    def shared_task(executor, name, token, shared):
        arguments, values = original_shared(executor, name, token, shared)
        plain = [k for k in shared if k not in arguments
                 and not getattr(shared[k], "reads_own_rows", False)]
        if plain:
            scattered.append(sum(len(cloudpickle.dumps(shared[k])) for k in plain))
        return arguments, values

    monkeypatch.setattr(DaskExecutor, "keep", keep)
    monkeypatch.setattr(dask_executor, "shared_task", shared_task)
    monkeypatch.setattr(dask_sums, "shared_task", shared_task)
    return kept, scattered


FEATURE_ROWS = 5 * TASK + 77


def _feature_inputs(classes: int) -> dict:
    from calaudit.numerics.features import FourierFeatures

    rng = np.random.default_rng(21 + classes)
    n = FEATURE_ROWS
    p = rng.dirichlet(np.ones(classes), n)
    y = (rng.uniform(size=n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    onehot = np.eye(classes)[y]
    if classes == 2:
        x, proba, scale = p[:, 1:2].copy(), p[:, 1].copy(), float(np.sqrt(2.0))
        r, klce = scale * (y - p[:, 1]), y - p[:, 1]
    else:
        x, proba, scale, r = p, p, 1.0, onehot - p
        klce = r
    z = np.column_stack([x, rng.normal(size=(n, 2))])
    return {"x": x, "z": z, "proba": proba, "scale": scale, "r": r, "klce": klce,
            "skce_features": FourierFeatures.draw("sqeuclidean", 2.0, x.shape[1], 32, 5),
            "local_features": FourierFeatures.draw("sqeuclidean", 1.0, z.shape[1], 32, 6)}


def _feature_stages(inputs: dict, executor) -> list[bytes]:
    """The SKCE stage's pass and the local stage's first pass (with each fused test) and
    a separate consistency test on ``executor``, as bytes."""
    with scale.using(executor):
        return _feature_passes(inputs)


def _feature_passes(inputs: dict) -> list[bytes]:
    from calaudit.inference.feature_tests import feature_consistency_test, feature_skce_pass
    from calaudit.local.features import feature_local_pass

    out = []
    rng = np.random.default_rng
    skce = feature_skce_pass(inputs["skce_features"], inputs["x"], inputs["r"],
                             inputs["proba"], rng(1), 19, rng(2), 19,
                             residual_scale=inputs["scale"], task_rows=TASK)
    out += [np.array([skce.terms.total, *skce.terms.diagonal]).tobytes(),
            skce.consistency.null_distribution.tobytes(), skce.forms.quadratic.tobytes(),
            skce.forms.linear.tobytes(), skce.forms.ties.tobytes()]
    for test in ("klce_consistency", "klce_bootstrap"):
        local = feature_local_pass(inputs["local_features"], inputs["z"], inputs["klce"],
                                   inputs["proba"], test, rng(4), 19, task_rows=TASK)
        out += [local.test.null_distribution.tobytes(), np.float64(local.statistic).tobytes()]
    single = feature_consistency_test(inputs["local_features"], inputs["z"], inputs["klce"],
                                      inputs["proba"], rng(8), 19, task_rows=TASK)
    return out + [single.null_distribution.tobytes()]


@pytest.fixture(scope="module", params=[2, 3], ids=["binary", "three_classes"])
def feature_case(request) -> tuple[dict, list[bytes]]:
    inputs = _feature_inputs(request.param)
    return inputs, _feature_stages(inputs, SerialExecutor())


@pytest.mark.parametrize("executor", ["threads1", "threads2", "threads3", "threads8",
                                      "one_worker", "two_workers"])
def test_the_feature_passes_give_the_serial_bytes_on_threads_and_dask(executor, request,
                                                                       feature_case):
    from calaudit.scale import ThreadExecutor

    inputs, expected = feature_case
    if executor.startswith("threads"):
        runner = ThreadExecutor(int(executor[len("threads"):]))
    else:
        runner = DaskExecutor(request.getfixturevalue(executor))
    assert _feature_stages(inputs, runner) == expected


@pytest.mark.parametrize("workers", ["one_worker", "two_workers"])
def test_the_feature_passes_place_their_rows_once_per_stage(workers, request, monkeypatch):
    """The per-row columns of a stage's passes go to the workers once (``keep``), the
    residual bootstrap's residuals once more (any row can be drawn); what each reduction
    scatters besides holds nothing per row. Everything placed is released."""
    from calaudit.local.features import feature_local_pass

    client = request.getfixturevalue(workers)
    inputs = _feature_inputs(2)
    n = FEATURE_ROWS
    kept, scattered = record_placements(monkeypatch)
    passes = []
    original_map = DaskExecutor.map_sum

    def map_sum(self, partial, ranges, shared):
        passes.append(partial.__name__)
        return original_map(self, partial, ranges, shared)

    monkeypatch.setattr(DaskExecutor, "map_sum", map_sum)
    before = set(client.who_has())
    executor = DaskExecutor(client)
    with scale.using(executor):
        feature_local_pass(inputs["local_features"], inputs["z"], inputs["klce"],
                           inputs["proba"], "klce_bootstrap", np.random.default_rng(4), 19,
                           task_rows=TASK)
    assert passes == ["label_partial", "resample_partial"]
    # z (3 columns), p, y: 3 x 8 n + 8 n + n bytes, once; then the residuals (8 n) for the
    # bootstrap
    columns = 8 * n * 3 + 8 * n + n
    assert len(kept) == 2
    assert columns <= kept[0] < columns + 4_000
    assert 8 * n <= kept[1] < 8 * n + 4_000
    assert max(scattered) < 8 * n / 10  # no reduction sends a per-row array
    # the executor's own count (dask.sizeof, for the --verbose lines) sees the same
    assert columns + 8 * n <= executor.placed_bytes < columns + 8 * n + 8 * n / 5
    assert executor.fetched_bytes > 0
    assert eventually(lambda: set(client.who_has()) <= before)


@pytest.mark.parametrize("workers", ["one_worker", "two_workers"])
def test_classical_tests_on_dask_give_the_serial_bytes(workers, request):
    """Spiegelhalter's and Hosmer-Lemeshow's reductions over several ranges (3 ranges of
    ``TASK_ROWS``) on 1 and 2 workers give the in-process bytes."""
    from calaudit.inference.classical import hosmer_lemeshow_test, spiegelhalter_test
    from calaudit.scale import TASK_ROWS

    client = request.getfixturevalue(workers)
    rng = np.random.default_rng(12)
    p = np.round(rng.beta(2, 5, 2 * TASK_ROWS + 5), 3)
    y = (rng.uniform(size=p.size) < p).astype(np.int64)
    executor = DaskExecutor(client)
    before = set(client.who_has())
    with scale.using(executor):
        on_dask = spiegelhalter_test(y, p), hosmer_lemeshow_test(y, p, 10)
    assert repr(on_dask[0]) == repr(spiegelhalter_test(y, p))
    serial, dask = hosmer_lemeshow_test(y, p, 10), on_dask[1]
    assert (dask.statistic, dask.df, dask.p_value) == (serial.statistic, serial.df,
                                                       serial.p_value)
    assert dask.expected.tobytes() == serial.expected.tobytes()
    assert eventually(lambda: set(client.who_has()) <= before)


# ------------------------------------- the local stage's row passes: placed once, same bytes

def _attribution_inputs():
    from calaudit.local.groups import Levels

    rng = np.random.default_rng(31)
    n = 3 * TASK + 77
    age, region = rng.integers(0, 4, n), rng.integers(0, 3, n)
    p = 1 / (1 + np.exp(-rng.normal(-0.5, 1.0, n)))
    y = (rng.uniform(size=n) < np.clip(p + 0.08 * (region == 1), 0, 1)).astype(float)
    levels = [Levels("age", age.astype(np.int32), ("a", "b", "c", "d")),
              Levels("region", region.astype(np.int32), ("n", "s", "e"))]
    return levels, y, p


def _attribution_json(executor) -> str:
    import json

    from calaudit.attribution.explain import AttributionSettings, attribute

    levels, y, p = _attribution_inputs()
    with scale.using(executor):
        out = attribute(levels, ["numeric", "categorical"], y, p, AttributionSettings())
    return json.dumps(out.section, sort_keys=True)


@pytest.mark.parametrize("workers", ["one_worker", "two_workers"])
def test_the_attribution_places_its_rows_once_for_all_its_fits(workers, request,
                                                               monkeypatch):
    """Every fit and standardised bias of the attribution reads the rows (``y``, offset,
    cell: 20 B/row) placed once on the workers; each Newton round sends only the models'
    ``C beta`` rows; the section is the in-process bytes; everything is released."""
    from calaudit.attribution import irls

    client = request.getfixturevalue(workers)
    n = 3 * TASK + 77
    monkeypatch.setattr(irls, "PART_ROWS", TASK)  # several tasks at this size
    expected = _attribution_json(SerialExecutor())
    kept, scattered = record_placements(monkeypatch)
    calls = dask_partials(monkeypatch)
    before = set(client.who_has())
    assert _attribution_json(DaskExecutor(client)) == expected
    assert len(kept) == 1 and 20 * n <= kept[0] < 20 * n + 4_000
    assert max(scattered) < n  # the rounds send C beta, no per-row array
    # 6 models (full, null, 2 x (others, alone)) in lockstep; the biases in one pass
    assert calls.count("mean_partial") == 1 and calls.count("glm_partial") <= 12
    assert eventually(lambda: set(client.who_has()) <= before)


def _lcb_products(executor) -> list[bytes]:
    """The LCB's kernel sums at every row and its plotted rows' products through the
    cell kernel (``local/lcb_features.py``), as bytes."""
    from calaudit.local.lcb_cells import cell_kernel
    from calaudit.local.lcb_features import feature_kernel_sums, feature_row_products

    rng = np.random.default_rng(41)
    n = 3 * TASK + 77
    scaled = np.column_stack([rng.normal(size=n), rng.integers(0, 3, n) / np.sqrt(2.0)])
    kernel = cell_kernel(scaled, [1])
    r = rng.normal(size=n)
    rows = np.sort(rng.choice(n, 500, replace=False))
    curves = rng.normal(size=(n, 3))
    with scale.using(executor):
        weighted, mass = feature_kernel_sums(kernel, r, 64, 3)
        at = feature_row_products(kernel, rows, r, mass, curves, 64, 3)
    return [weighted.tobytes(), mass.tobytes(), at.se.tobytes(),
            at.curve_weights.tobytes()]


@pytest.mark.parametrize("executor", ["threads2", "threads3", "threads8", "one_worker",
                                      "two_workers"])
def test_the_lcb_row_passes_give_the_serial_bytes_on_threads_and_dask(executor, request,
                                                                     monkeypatch):
    from calaudit.local import lcb_features
    from calaudit.scale import ThreadExecutor

    monkeypatch.setattr(lcb_features, "PASS_ROWS", TASK)  # several tasks at this size
    calls = dask_partials(monkeypatch)
    original_rows, kept = DaskExecutor.map_rows, []
    monkeypatch.setattr(DaskExecutor, "map_rows", lambda self, partial, ranges, shared:
                        calls.append(partial.__name__) or original_rows(self, partial,
                                                                        ranges, shared))
    original_keep = DaskExecutor.keep
    monkeypatch.setattr(DaskExecutor, "keep", lambda self, value: kept.append(value) or
                        original_keep(self, value))
    expected = _lcb_products(SerialExecutor())
    if executor.startswith("threads"):
        runner = ThreadExecutor(int(executor[len("threads"):]))
    else:
        runner = DaskExecutor(request.getfixturevalue(executor))
    assert _lcb_products(runner) == expected
    if not executor.startswith("threads"):
        # K [r, 1] at every row: a reduction, then a per-row map on the workers; the
        # plotted rows' products: two reductions; the kernel placed once for each
        assert calls == ["cell_partial", "rows_partial", "cell_partial", "cell_partial"]
        assert len(kept) == 2


def rows_partial(start: int, stop: int, *, weights: np.ndarray, power: int) -> dict:
    """A per-row map: the rows [start, stop) of :func:`toy_partial`'s values."""
    rows = np.random.default_rng([11, start]).standard_normal((stop - start, 3))
    return {"values": np.exp(4.0 * rows) * weights, "index": np.arange(start, stop)}


@pytest.mark.parametrize("executor", ["serial", "threads3", "one_worker", "two_workers"])
def test_a_row_map_gives_the_ranges_rows_in_order(executor, request):
    from calaudit.scale import ThreadExecutor

    ranges = task_ranges(N_ROWS, TASK)
    runner = (SerialExecutor() if executor == "serial" else ThreadExecutor(3)
              if executor == "threads3" else DaskExecutor(request.getfixturevalue(executor)))
    with scale.using(runner):
        out = scale.map_rows(rows_partial, ranges, SHARED)
    assert np.array_equal(out["index"], np.arange(N_ROWS))
    want = np.concatenate([rows_partial(a, b, **SHARED)["values"] for a, b in ranges])
    assert out["values"].tobytes() == want.tobytes()
    assert runner.map_rows(rows_partial, ranges, SHARED)["values"].tobytes() == want.tobytes()


@pytest.mark.parametrize("workers", ["one_worker", "two_workers"])
def test_the_lcb_curve_sums_on_dask_give_the_serial_bytes(workers, request, monkeypatch):
    """The curves' normalisers and centres (``curve_sums_partial``) over several ranges;
    the requests (rows and covariate values) placed once per pass."""
    from calaudit.local import lcb_curves
    from tests.test_lcb_columns import _requests

    monkeypatch.setattr(lcb_curves, "CURVE_ROWS", TASK)
    rng = np.random.default_rng(8)
    n = 3 * TASK + 17
    requests, values, sums = _requests(rng, n), rng.normal(size=n), rng.uniform(0.5, 2, n)
    with scale.using(SerialExecutor()):
        serial = lcb_curves.curve_design(requests, sums, 12, dense=False)
        serial_centres = serial.centres(values)
    calls = dask_partials(monkeypatch)
    with scale.using(DaskExecutor(request.getfixturevalue(workers))):
        design = lcb_curves.curve_design(requests, sums, 12, dense=False)
        centres = design.centres(values)
    assert [a.tobytes() for a in design.normalisers] == [
        b.tobytes() for b in serial.normalisers]
    assert [a.tobytes() for a in centres] == [b.tobytes() for b in serial_centres]
    assert calls == ["curve_sums_partial"] * 2


# ------------------------------------------------ exact passes: block pairs

def _exact_case(n: int = 301):
    from calaudit.local.kernel import product_gram

    rng = np.random.default_rng(23)
    gram = product_gram(rng.uniform(0.05, 0.95, n), 7.0, rng.normal(size=(n, 2)), 0.3,
                        lazy=True)
    return gram, rng.normal(size=(n, 3, 5)), rng.normal(size=(n, 4))


@pytest.mark.parametrize("workers", ["one_worker", "two_workers"])
@pytest.mark.parametrize("block_rows", [16, 45, 128])
def test_the_exact_pass_on_dask_gives_the_serial_bytes(workers, block_rows, request):
    """Forms and ``K @ W`` (float64, float32, products only) from block pairs on 1 and 2
    workers: the serial bytes, for blocks of 16 (190 pairs), 45 and 128 rows."""
    from calaudit.numerics.pairwise import kernel_forms_and_matmul

    gram, z, w = _exact_case()
    client = request.getfixturevalue(workers)
    for args, kwargs in (((z, w), {}), ((z, w), {"dtype": np.float32}),
                         ((z, None), {}), ((np.zeros((gram.n, 0)), w), {})):
        with scale.using(SerialExecutor()):
            expected = kernel_forms_and_matmul(gram, *args, tile_rows=block_rows, **kwargs)
        with scale.using(DaskExecutor(client)):
            got = kernel_forms_and_matmul(gram, *args, tile_rows=block_rows, **kwargs)
        assert got[0].tobytes() == expected[0].tobytes()
        assert got[1].tobytes() == expected[1].tobytes()


class RecordingClient:
    """A ``distributed.Client`` whose ``scatter`` and ``submit`` calls are recorded."""

    def __init__(self, client) -> None:
        self.client, self.scattered, self.submitted, self.options = client, [], [], []
        self.futures = []

    def scatter(self, value, **kwargs):
        future = self.client.scatter(value, **kwargs)
        self.scattered.append((value, kwargs, future))
        return future

    def submit(self, *args, **kwargs):
        self.submitted.append(args)
        self.options.append(kwargs)
        future = self.client.submit(*args, **kwargs)
        self.futures.append(future)
        return future

    def __getattr__(self, name):
        return getattr(self.client, name)


@pytest.mark.parametrize("group", [1, 3])
def test_no_task_of_the_exact_pass_receives_more_than_two_blocks(two_workers, group):
    """Each placed block (a group of ``group`` row blocks of 32 rows) is placed once, by
    a task holding its own rows only (nothing scattered); each task's arguments hold the
    handles of its two blocks and nothing else of size (its other dependencies are the
    pass's broadcast scalars); the bytes are the serial ones."""
    from calaudit.numerics.pairwise import RowBlock, kernel_forms_and_matmul, pair_blocks

    gram, z, w = _exact_case()
    client = RecordingClient(two_workers)
    with scale.using(DaskExecutor(client, pair_group=group)):
        got = kernel_forms_and_matmul(gram, z, w, tile_rows=32)
    with scale.using(SerialExecutor()):
        expected = kernel_forms_and_matmul(gram, z, w, tile_rows=32)
    assert got[0].tobytes() == expected[0].tobytes()
    assert got[1].tobytes() == expected[1].tobytes()
    ranges = pair_blocks(gram.n, 32 * group)
    assert client.scattered == []
    blocks = [(args[1], future) for args, future in zip(client.submitted, client.futures)
              if args[0].__name__ == "identity" and isinstance(args[1], RowBlock)]
    assert len(blocks) == len(ranges) == -(-10 // group)
    handles = {}
    for (value, future), (start, stop) in zip(blocks, ranges):
        assert (value.start, value.stop, value.offset) == (start, stop, 0)
        assert value.gram.n == value.z.shape[0] == value.w.shape[0] == stop - start
        handles[future.key] = start // (32 * group)
    tasks = [args for args in client.submitted if args[0].__name__ == "_call_pair"]
    assert len(tasks) == len(ranges) * (len(ranges) + 1) // 2
    for _, _, i, j, left, right, _ in tasks:
        assert (handles[left.key], handles[right.key]) == (i, j)
    # the pass's shared values: scalars, made once by one task for all pair tasks
    made = [args[1] for args in client.submitted
            if args[0].__name__ == "identity" and not isinstance(args[1], RowBlock)]
    assert len(made) == 1 and all(np.ndim(value) == 0 for value in made[0].values())
    # on the scheduler a task depends on the futures among its arguments: its two blocks
    # and the shared values' task, no other rows
    futures = type(left)
    for args, options in zip(client.submitted, client.options):
        if args[0].__name__ == "_call_pair":
            found = [v for v in (*args, *args[-1].values(), *options.values())
                     if isinstance(v, futures)]
            assert [f.key for f in found if f.type is RowBlock] == [args[4].key, args[5].key]
            assert [f.type for f in found if f.type is not RowBlock] == [dict]


def killing_pair(i: int, j: int, left, right, *, flag: str, victim: tuple, **shared):
    """``pair_partial``, except that the worker running pair ``victim`` kills itself
    (SIGKILL) the first time: the blocks placed on it are lost with it."""
    from calaudit.numerics.pairwise import pair_partial

    if (i, j) == tuple(victim) and not os.path.exists(flag):
        Path(flag).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return pair_partial(i, j, left, right, **shared)


def test_a_worker_killed_mid_exact_pass_is_survived_with_the_same_bytes(two_workers,
                                                                        tmp_path):
    """A worker dies during a block-pair pass, with the blocks placed on it: Dask makes
    them again from their tasks and reruns the pairs that need them; the client sends
    nothing again, and the forms and products are the serial bytes."""
    flag = tmp_path / "killed"
    before = set(two_workers.run(os.getpid).values())
    executor = DaskExecutor(two_workers)
    blocks, same_as_serial = _killed_pair_pass(executor, 301, flag, victim=(3, 7))
    assert int(flag.read_text()) in before  # a worker holding blocks was killed
    from calaudit.scale.dask_sizes import size_of

    placed_once = sum(size_of(block.detached()) for block in blocks)
    assert executor.block_bytes == placed_once  # placed once, as tasks
    assert same_as_serial


def _killed_pair_pass(executor, n: int, flag, victim: tuple) -> tuple[list, bool]:
    """A block-pair pass (blocks of 32 rows) of :func:`_exact_case` on ``executor`` whose
    pair ``victim`` kills its worker once: ``(the blocks, forms and products equal the
    serial bytes)``."""
    from calaudit.numerics.pairwise import (
        RowBlock,
        block_pairs,
        kernel_forms_and_matmul,
        pair_blocks,
        partial_fold,
    )

    gram, z, w = _exact_case(n)
    with scale.using(SerialExecutor()):
        expected = kernel_forms_and_matmul(gram, z, w, tile_rows=32, exclude_diagonal=False)
    ranges = pair_blocks(gram.n, 32)
    flat = z.reshape(gram.n, -1)
    blocks = [RowBlock(a, b, gram, a, flat[a:b], w[a:b]) for a, b in ranges]
    forms, products = executor.map_pairs(
        killing_pair, block_pairs(len(ranges)), blocks,
        {"dtype": "float64", "native": True, "pooled": True, "flag": str(flag),
         "victim": victim}, partial_fold(gram.n, flat.shape[1], w.shape[1], ranges))
    same = (forms.reshape(3, 5).sum(axis=0).tobytes() == expected[0].tobytes()
            and products.tobytes() == expected[1].tobytes())
    return blocks, same


@pytest.fixture(scope="module")
def serial_exact_json() -> dict[int, str]:
    """The serial JSON of the exact audit per block size, computed once for both worker
    counts (filled by the test as it needs them)."""
    return {}


@pytest.mark.parametrize("workers", ["one_worker", "two_workers"])
def test_the_exact_audit_on_dask_gives_the_serial_json_for_any_block_size(
        workers, request, monkeypatch, serial_exact_json):
    """``--method exact`` (the local consistency test, the LCB's kernel pass and the SKCE
    consistency test) through block pairs of 256 and 700 rows on 1 and 2 workers: the
    serial JSON, and the pairs did run on Dask."""
    import calaudit.numerics.pairwise as pairwise

    client = request.getfixturevalue(workers)

    def exact(executor) -> str:
        return audit_json(executor, n=1500, seed=4, method="exact", resamples=29,
                          local_resamples=49, random_state=3)

    for block_rows in (256, 700):
        monkeypatch.setattr(pairwise, "FUSED_TILE_ROWS", block_rows)
        if block_rows not in serial_exact_json:
            serial_exact_json[block_rows] = exact(SerialExecutor())
        expected = serial_exact_json[block_rows]
        calls = dask_partials(monkeypatch)
        assert exact(DaskExecutor(client)) == expected
        assert calls.count("group_partial") >= 2  # the test's pass and the LCB's
