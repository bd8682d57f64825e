"""Clusters that cannot serve the audit fail as cleanly as bad files do, and a run that is
stopped leaves nothing behind.

- a scheduler address that accepts connections and never answers times out within
  ``dask.timeout``; a scheduler with no worker, workers that cannot import calaudit or
  run another version, and a memory limit too small for a worker to start are one line
  (exit 2) before anything is read;
- ``--workers`` and ``--threads`` above the usable cores are capped with a warning;
- a task whose cluster has lost every worker for good ends the run in one line instead
  of waiting forever; a cluster failure during the audit is a ``ClusterError``, a bug in
  calaudit is not;
- SIGTERM or Ctrl-C during a ``--workers`` run ends the local cluster's processes and
  removes the run's temporary and spill files (checked on the process table and on the
  run's own temporary directory).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from calaudit._version import __version__
from calaudit.exceptions import ClusterError, ConfigError
from calaudit.scale import cluster as cluster_module
from calaudit.scale import dask_waits
from calaudit.settings.sections import DaskConfig
from tests.cli_inprocess import assert_one_line_error, run_cli
from tests.conftest import ROOT, binary_frame
from tests.test_fuzz import _sigint_as_in_a_terminal
from tests.test_remote_inputs import silent_server


def test_a_scheduler_that_never_answers_times_out(tmp_path):
    pytest.importorskip("distributed")
    binary_frame(100).to_csv(tmp_path / "d.csv", index=False)
    with silent_server() as port:
        started = time.monotonic()
        outcome = run_cli("test", "d.csv", "--dask", f"tcp://127.0.0.1:{port}", "--json",
                          "r.json", cwd=tmp_path, env={"CALAUDIT_DASK__TIMEOUT": "1"})
        elapsed = time.monotonic() - started
    assert_one_line_error(outcome, "cannot reach the scheduler", "no answer within 1 s")
    assert elapsed < 60 and not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("size", ["1B", "20MB", "255MiB", "0.2GB"])
def test_a_memory_limit_too_small_for_a_worker_is_a_config_error(size):
    with pytest.raises(ConfigError, match="256 MiB a worker needs"):
        DaskConfig(workers=1, memory_limit=size)
    assert DaskConfig(workers=1, memory_limit="256MiB").memory_limit == "256MiB"


def test_a_scheduler_without_workers_is_one_line(tmp_path):
    distributed = pytest.importorskip("distributed")
    binary_frame(100).to_csv(tmp_path / "d.csv", index=False)
    with distributed.LocalCluster(n_workers=0, processes=True, dashboard_address=None,
                                  host="127.0.0.1",
                                  scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}
                                  ) as empty:
        outcome = run_cli("test", "d.csv", "--dask", empty.scheduler_address, cwd=tmp_path,
                          env={"CALAUDIT_DASK__TIMEOUT": "1"})
    assert_one_line_error(outcome, "no Dask worker within 1 s", "dask worker ADDRESS")


class WorkersOf:
    """A client whose workers answer ``run`` with ``answers`` (version or exception)."""

    def __init__(self, answers, workers=1):
        self.answers, self.workers = answers, workers

    def wait_for_workers(self, n, timeout=None):
        if not self.workers:
            raise TimeoutError("Only 0/1 workers arrived")

    def run(self, function, on_error="raise"):
        return self.answers


@pytest.mark.parametrize("answer, fragment", [
    (ModuleNotFoundError("No module named 'calaudit'"), "cannot import calaudit"),
    ("0.0.9", "runs calaudit 0.0.9"),
])
def test_workers_without_this_calaudit_are_refused(answer, fragment):
    client = WorkersOf({"tcp://10.0.0.7:4000": answer, "tcp://10.0.0.8:4000": __version__})
    with pytest.raises(ClusterError) as caught:
        cluster_module.check_workers(client, 1.0, "--dask tcp://10.0.0.5:8786")
    line = caught.value.one_line()
    assert fragment in line and "tcp://10.0.0.7:4000" in line
    assert f"this process runs calaudit {__version__}" in line
    cluster_module.check_workers(WorkersOf({"w": __version__}), 1.0, "--dask x:1")


def test_no_worker_at_all_is_refused():
    with pytest.raises(ClusterError, match="no Dask worker within 2 s"):
        cluster_module.check_workers(WorkersOf({}, workers=0), 2.0, "--dask x:1")


def test_more_workers_or_threads_than_cores_are_capped(monkeypatch):
    monkeypatch.setattr(cluster_module, "usable_cores", lambda: 2)
    said = []
    assert cluster_module.capped("--workers", 16, said.append) == 2
    assert cluster_module.capped("--threads", 2, said.append) == 2
    assert said == ["--workers 16: this machine has 2 usable core(s); using 2"]


class Pending:
    """A future that never finishes."""

    def exception(self, timeout=None):
        time.sleep(min(timeout or 0, 0.01))
        raise TimeoutError

    def result(self):
        raise AssertionError("never fetched")


class NoWorkers:
    def nthreads(self):
        return {}


def test_a_task_on_a_cluster_that_lost_every_worker_ends_the_run(monkeypatch):
    monkeypatch.setattr(dask_waits, "WAIT_SECONDS", 0.2)
    started = time.monotonic()
    with pytest.raises(ClusterError, match="no worker for 0.2 s"):
        dask_waits.await_result(NoWorkers(), Pending())
    assert time.monotonic() - started < 5


def test_cluster_failures_and_bugs_are_told_apart():
    class CommClosedError(OSError):
        pass

    CommClosedError.__module__ = "distributed.comm.core"
    with pytest.raises(ClusterError, match="the Dask cluster failed"), \
            cluster_module.cluster_errors("--workers 2"):
        raise CommClosedError("Stream is closed")
    with pytest.raises(ValueError), cluster_module.cluster_errors("--workers 2"):
        raise ValueError("a bug")
    with pytest.raises(OSError), cluster_module.cluster_errors("--workers 2"):
        raise OSError("raised by calaudit itself")


# ------------------------------------------------------------------- stopping a run

def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (from /proc), however deep."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _start_local_cluster_run(tmp_path: Path) -> tuple[subprocess.Popen, Path, set[int]]:
    """``calaudit test --workers 1`` on a long audit, in a session of its own (as in a
    terminal), once its local cluster runs the audit: the run, its TMPDIR, the processes
    seen under it."""
    binary_frame(3000).to_csv(tmp_path / "d.csv", index=False)
    temp = Path(tempfile.mkdtemp(prefix="signal-", dir=tmp_path))
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(ROOT)}
    run = subprocess.Popen(
        [sys.executable, "-m", "calaudit", "test", "d.csv", "--covariates", "age,race",
         "--workers", "1", "--spill", "always", "--n-resamples", "100000", "--json", "r.json"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=_sigint_as_in_a_terminal)
    seen: set[int] = set()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and run.poll() is None:
        seen |= _descendants(run.pid)
        # the scheduler, a nanny and its worker
        if any(p.name.startswith("calaudit-dask-") for p in temp.iterdir()) and \
                len(seen) >= 3:
            break
        time.sleep(0.1)
    time.sleep(1.0)  # the audit is under way on the worker
    return run, temp, seen | _descendants(run.pid)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signum, code, word, group", [
    (signal.SIGTERM, 143, "terminated", False), (signal.SIGINT, 130, "interrupted", False),
    (signal.SIGINT, 130, "interrupted", True)])
def test_a_signal_mid_run_ends_the_workers_and_leaves_no_files(tmp_path, signum, code, word,
                                                               group):
    """Sent to calaudit's process, or (Ctrl-C in a terminal) to its whole process group,
    the local cluster's scheduler, nannies and workers included: one line, no process
    and no file left."""
    pytest.importorskip("distributed")
    run, temp, seen = _start_local_cluster_run(tmp_path)
    try:
        if group:
            os.killpg(run.pid, signum)
        else:
            run.send_signal(signum)
        _, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    time.sleep(0.5)
    assert run.returncode == code, stderr
    assert stderr.strip().splitlines() == [f"calaudit: error: {word}" +
                                           (" (SIGTERM)" if signum == signal.SIGTERM else "")]
    assert len(seen) >= 3, "the local cluster never started"
    assert not [pid for pid in seen if _alive(pid)]
    assert list(temp.iterdir()) == []
    assert not (tmp_path / "r.json").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_run_leaves_no_cluster_process(tmp_path):
    """calaudit's process killed (SIGKILL: it cannot close anything): the local cluster's
    scheduler, nannies and workers end by themselves within seconds."""
    pytest.importorskip("distributed")
    run, _, seen = _start_local_cluster_run(tmp_path)
    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and [pid for pid in seen if _alive(pid)]:
        time.sleep(0.2)
    left = [pid for pid in seen if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert len(seen) >= 3, "the local cluster never started"
    assert left == []


def test_a_client_that_cannot_connect_says_which_cluster():
    class NoClient:
        @staticmethod
        def Client(address, **kwargs):  # noqa: N802 - distributed's name
            raise OSError(f"Timed out trying to connect to {address} after 0.001 s")

    with pytest.raises(ClusterError, match="cannot connect to the local Dask cluster"):
        cluster_module._connect(NoClient, object(), 0.001, "--workers 1")
    with pytest.raises(ClusterError, match="cannot reach the scheduler") as caught:
        cluster_module._connect(NoClient, "tcp://10.0.0.5:8786", 0.001, "--dask x")
    assert "dask.timeout" in caught.value.one_line()


@pytest.mark.parametrize("apart", [True, False])
def test_the_local_cluster_runs_its_scheduler_beside_this_process(monkeypatch, apart):
    """``--workers``: the scheduler and the nannies are processes of their own (the client
    only plans and adds up); on Windows, which has no subprocess deployment, they run in
    this process. Either way the workers run the tasks and the cluster closes with the
    block."""
    distributed = pytest.importorskip("distributed")
    monkeypatch.setattr(cluster_module, "SUBPROCESS_DEPLOYMENT", apart)
    with cluster_module.open_executor(DaskConfig(workers=1, timeout=30)) as executor:
        client = executor.client
        assert client.submit(os.getpid).result() != os.getpid()
        scheduler_pid = client.run_on_scheduler(os.getpid)
        cluster = client.cluster
        assert (scheduler_pid != os.getpid()) == apart
        assert isinstance(cluster, distributed.LocalCluster) != apart
    assert cluster.status.name == "closed"
