"""Benchmark: a 10^7-row partitioned dataset (20 Parquet files, or CSV files with
``--format csv``; a numeric and a categorical covariate), in one process and on
``--workers 2`` (2 GB per worker): wall time, CPU and peak memory per process, and whether
the results are identical.

    python benchmarks/scale_partitioned.py --rows 1e7 --files 20 --what reduction
    python benchmarks/scale_partitioned.py --rows 1e7 --files 20 --what audit

The dataset comes from ``benchmarks/make_partitioned.py`` (``write_dataset``; seeded, the
same rows whatever the number of files), written to a temporary directory unless
``--data DIR`` names one already written.

``--what reduction``: one feature pass of the kind the kernel tests run, as a row reduction
over the fixed task ranges (``calaudit.scale``): each task reads its own rows
from the Parquet files (only the row groups it needs), maps ``z = (p, age, region)`` to
``D`` random Fourier features, redraws ``B`` label sets ``y* ~ Bernoulli(p)`` from the
row-block streams and returns ``Phi^T [r, r*_1 .. r*_B]`` (D x (B + 1)) and the ECE bin
sums. Serial: the tasks one after another in this process (BLAS limited to one thread, as
in a worker). Dask: ``DaskExecutor`` on a ``LocalCluster`` of ``--workers`` single-threaded
processes with ``--memory-limit`` each; only the D x (B + 1) partials travel. Each mode runs
in a child process, so every peak is that process's own ``ru_maxrss`` (workers report theirs
through ``client.run`` before the cluster closes). The folded arrays' SHA-256 must match.

``--what audit``: ``calaudit test DATA --covariates age,region --json`` as a child process
(``--covariates ''``: the global battery, no covariates; on Dask the client then reads the
footers and the tasks read their own rows, ``calaudit.data.planned``),
alone and with ``--workers 2 --memory-limit 2GB``: wall, CPU of every process together,
and per process (client, each worker) peak RSS and CPU (psutil samples of the process tree
every 0.25 s), whether any process went above the memory limit, and whether the two JSON
results are identical apart from the timings (else the first differing paths). The
``--verbose`` stage lines show each stage's CPU and client peak, and on Dask the data placed
on the workers and the partials fetched so far.

``--store s3``: the same files uploaded to a local S3 server (moto, started by the
benchmark as its own process, so its memory and CPU are not the client's) and audited as
``s3://bench/data/``; the worker processes reach it through ``AWS_ENDPOINT_URL_S3``, as a
user's shell would point them at a store.

The machine may be shared: the load average before and after is printed, and CPU seconds
are the figure that does not depend on other jobs.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from calaudit.scale import ROW_BLOCK, TASK_ROWS, block_rng, task_ranges  # noqa: E402

REGIONS = ("north", "south", "east", "west")
N_BINS = 15


# ------------------------------------------------------------------------ the partial

def file_index(files: list[str]) -> dict:
    """Row offsets of the files and of their row groups (Parquet metadata only)."""
    import pyarrow.parquet as pq

    groups = []
    start = 0
    for index, path in enumerate(files):
        meta = pq.ParquetFile(path).metadata
        for group in range(meta.num_row_groups):
            rows = meta.row_group(group).num_rows
            groups.append((start, start + rows, index, group))
            start += rows
    return {"files": files, "groups": np.array(groups, dtype=np.int64), "n": start}


def read_rows(index: dict, start: int, stop: int) -> dict[str, np.ndarray]:
    """Columns of the global rows ``[start, stop)``: only the overlapping row groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    groups = index["groups"]
    hit = groups[(groups[:, 0] < stop) & (groups[:, 1] > start)]
    tables = []
    for lo, hi, file, group in hit:
        table = pq.ParquetFile(index["files"][file]).read_row_group(
            int(group), columns=["label", "prob", "age", "region"])
        tables.append(table.slice(max(start - lo, 0), min(stop, hi) - max(start, lo)))
    table = pa.concat_tables(tables)
    region = table["region"].to_numpy(zero_copy_only=False)
    return {"label": table["label"].to_numpy().astype(np.float64),
            "prob": table["prob"].to_numpy(),
            "age": table["age"].to_numpy(),
            "region": np.searchsorted(np.array(sorted(REGIONS)), region)}


def feature_partial(start: int, stop: int, *, index: dict, omega: np.ndarray,
                    phase: np.ndarray, seed: int, n_resamples: int) -> dict:
    """``Phi^T [r, r*]`` and the ECE bin sums of the rows ``[start, stop)``, block by
    block (redraws from ``block_rng(seed, "bench", block)``)."""
    cols = read_rows(index, start, stop)
    d = omega.shape[1]
    products = np.zeros((d, n_resamples + 1))
    bins = np.zeros((3, N_BINS))
    for lo in range(0, stop - start, ROW_BLOCK):
        hi = min(stop - start, lo + ROW_BLOCK)
        p, y = cols["prob"][lo:hi], cols["label"][lo:hi]
        z = np.column_stack([p, (cols["age"][lo:hi] - 50.0) / 17.3,
                             np.eye(len(REGIONS))[cols["region"][lo:hi]]])
        phi = np.sqrt(2.0 / d) * np.cos(z @ omega + phase)
        rng = block_rng(seed, "bench", (start + lo) // ROW_BLOCK)
        redraws = (rng.random((hi - lo, n_resamples)) < p[:, None]) - p[:, None]
        products += phi.T @ np.column_stack([y - p, redraws])
        which = np.minimum((p * N_BINS).astype(np.int64), N_BINS - 1)
        bins += np.stack([np.bincount(which, weights=w, minlength=N_BINS)
                          for w in (np.ones_like(p), p, y)])
    return {"products": products, "bins": bins, "rows": np.array(stop - start)}


def shared_inputs(index: dict, n_features: int, n_resamples: int, seed: int = 7) -> dict:
    rng = np.random.default_rng(seed)
    dims = 2 + len(REGIONS)
    return {"index": index, "omega": rng.normal(0.0, 1.0 / 0.3, (dims, n_features)),
            "phase": rng.uniform(0, 2 * np.pi, n_features), "seed": seed,
            "n_resamples": n_resamples}


def digest(total: dict) -> str:
    h = hashlib.sha256()
    for key in sorted(total):
        h.update(key.encode())
        h.update(np.ascontiguousarray(total[key]).tobytes())
    return h.hexdigest()[:16]


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_reduction(args: argparse.Namespace) -> dict:
    """One mode, in this (child) process; returns its figures as a dict."""
    from threadpoolctl import threadpool_limits

    files = sorted(str(p) for p in Path(args.data).glob("*.parquet"))
    index = file_index(files)
    shared = shared_inputs(index, args.features, args.resamples)
    ranges = task_ranges(index["n"])
    started, cpu = time.perf_counter(), time.process_time()
    workers = {}
    if args.run == "serial":
        from calaudit.scale import fold_in_order

        with threadpool_limits(1):
            total = fold_in_order(feature_partial(a, b, **shared) for a, b in ranges)
    else:
        from calaudit.scale import open_executor
        from calaudit.settings.sections import DaskConfig

        config = DaskConfig(workers=args.workers, memory_limit=args.memory_limit, timeout=60)
        with open_executor(config) as executor:
            ready, ready_cpu = time.perf_counter(), time.process_time()
            total = executor.map_sum(feature_partial, ranges, shared)
            done, done_cpu = time.perf_counter(), time.process_time()
            workers = executor.client.run(_worker_figures)
        workers["cluster start (s)"] = round(ready - started, 1)
        workers["map_sum wall (s)"] = round(done - ready, 1)
        # client + scheduler (LocalCluster: same process) CPU per task: submit, fetch, fold
        workers["client CPU per task (ms)"] = round(1e3 * (done_cpu - ready_cpu) / len(ranges), 2)
        part = {k: np.asarray(v) for k, v in total.items()}
        from calaudit.scale import fold_in_order

        t0 = time.perf_counter()
        fold_in_order([part] * len(ranges))
        workers["fold alone per task (ms)"] = round(
            1e3 * (time.perf_counter() - t0) / len(ranges), 3)
        workers["partial size (KiB)"] = round(sum(v.nbytes for v in part.values()) / 1024, 1)
    return {"mode": args.run, "rows": index["n"], "tasks": len(ranges),
            "wall": time.perf_counter() - started, "client_cpu": time.process_time() - cpu,
            "client_peak_mib": peak_mib(), "workers": workers, "digest": digest(total),
            "rows_check": int(total["rows"])}


def sized_partial(start: int, stop: int, *, shape: tuple[int, int]) -> dict:
    """No work, a partial of the feature pass's size: the per-task cost of Dask."""
    return {"products": np.full(shape, float(start % 7)), "rows": np.array(stop - start)}


def run_overhead(args: argparse.Namespace) -> dict:
    """``--tasks`` empty tasks with feature-pass-sized partials on ``--workers``: wall and
    client (+ scheduler) CPU per task."""
    from calaudit.scale import DaskExecutor, open_executor
    from calaudit.settings.sections import DaskConfig

    ranges = [(k * TASK_ROWS, (k + 1) * TASK_ROWS) for k in range(args.tasks)]
    shared = {"shape": (args.features, args.resamples + 1)}
    config = DaskConfig(workers=args.workers, memory_limit=args.memory_limit, timeout=60)
    with open_executor(config) as executor:
        assert isinstance(executor, DaskExecutor)
        executor.map_sum(sized_partial, ranges[:10], shared)  # warm up
        started, cpu = time.perf_counter(), time.process_time()
        executor.map_sum(sized_partial, ranges, shared)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"mode": "overhead", "tasks": len(ranges), "wall_ms_per_task": 1e3 * wall / len(ranges),
            "client_cpu_ms_per_task": 1e3 * cpu / len(ranges)}


def _worker_figures() -> dict:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"peak_mib": usage.ru_maxrss / 1024, "cpu": usage.ru_utime + usage.ru_stime}


# ----------------------------------------------------------------------------- audit

class TreeSampler(threading.Thread):
    """Peak RSS of a process and of each of its descendants, sampled every 0.25 s."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        import psutil

        self.root, self.peaks, self.roles, self.done = psutil.Process(pid), {}, {}, False
        self.cpu: dict[int, float] = {}  # user + system CPU seconds at the last sample
        self.anon: dict[int, float] = {}  # peak RssAnon (MiB): memory no file backs

    def run(self) -> None:
        import psutil

        while not self.done:
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                return
            for proc in procs:
                try:
                    rss = proc.memory_info().rss / 2**20
                    times = proc.cpu_times()
                    self.cpu[proc.pid] = times.user + times.system
                    if proc.pid not in self.roles:
                        cmd = " ".join(proc.cmdline())
                        self.roles[proc.pid] = role(proc.pid == self.root.pid, cmd)
                except psutil.Error:
                    continue
                self.peaks[proc.pid] = max(self.peaks.get(proc.pid, 0.0), rss)
                self.anon[proc.pid] = max(self.anon.get(proc.pid, 0.0), rss_anon(proc.pid))
            time.sleep(0.25)


def role(root: bool, cmd: str) -> str:
    """A process of the run by its command line: the client (calaudit), a worker, a local
    cluster's scheduler or nanny (processes of their own), or another one."""
    if root:
        return "client"
    if "spawn_main" in cmd:
        return "worker"
    for name in ("Scheduler", "Nanny"):
        if f"distributed.{name}" in cmd:
            return name.lower()
    return "other"


def rss_anon(pid: int) -> float:
    """The process's resident anonymous memory in MiB (``RssAnon`` of
    ``/proc/PID/status``; NaN where there is none): what ``--spill`` bounds, since
    memory-mapped spill files are page cache the system can write back."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return math.nan


def run_audit_cli(data: Path | str, out: Path, extra: list[str], covariates: str = "age,region"
                  ) -> dict:
    """``calaudit test`` on ``data`` as a child process: exit code, wall, CPU of the whole
    process tree (``RUSAGE_CHILDREN`` before and after: the client and the workers it
    reaped), and per process (client, each worker) its peak RSS and CPU (psutil samples
    every 0.25 s: a peak between two samples, or the CPU of a worker's last 0.25 s, can be
    missed)."""
    import psutil  # noqa: F401 - fail early without it

    chosen = ["--covariates", covariates] if covariates else []
    cmd = [sys.executable, "-m", "calaudit", "test", str(data), *chosen,
           "--json", str(out), "--exit-zero", "--verbose", *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env)
    sampler = TreeSampler(proc.pid)
    sampler.start()
    _, err = proc.communicate()
    sampler.done = True
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    processes = {f"{sampler.roles.get(pid, '?')} {pid}": {
        "peak_mib": round(peak), "anon_mib": round(sampler.anon.get(pid, math.nan)),
        "cpu": round(sampler.cpu.get(pid, math.nan), 1)}
        for pid, peak in sorted(sampler.peaks.items()) if sampler.roles.get(pid) != "other"}
    return {"code": proc.returncode, "wall": wall,
            "cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
            "processes": processes,
            "sampled_cpu": sum(figures["cpu"] for figures in processes.values()),
            "stages": [line for line in err.splitlines()
                       if "stage " in line or "rows read by the tasks" in line
                       or "read into this process" in line or "needs the rows" in line
                       or "needs the column" in line],
            "error": err.strip().splitlines()[-1] if proc.returncode > 1 else ""}


def differences(a: object, b: object, path: str = "") -> list[str]:
    """Paths at which two JSON values differ (the first few)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}/{k}: only in one" for k in sorted(a.keys() ^ b.keys())]
        for k in sorted(a.keys() & b.keys()):
            out += differences(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}/{i}")]
    return [] if a == b else [f"{path}: {a!r} vs {b!r}"[:200]]


def stable_json(path: Path) -> dict:
    payload = json.loads(path.read_text())
    for key in ("created_at", "runtime_seconds"):
        payload.pop(key, None)
    return payload


# ------------------------------------------------------------------------------ main

def ensure_data(args: argparse.Namespace, scratch: Path) -> Path:
    if args.data and any(Path(args.data).glob(f"*.{args.format}")):
        paths = sorted(Path(args.data).glob(f"*.{args.format}"))
        size = sum(path.stat().st_size for path in paths) / 2**20
        if args.format == "parquet":
            import pyarrow.parquet as pq

            rows = f"{sum(pq.ParquetFile(path).metadata.num_rows for path in paths):,}"
        else:
            rows = "(not counted)"
        print(f"data: {len(paths)} {args.format} files, {rows} rows, {size:.0f} MiB, "
              "already written")
        return Path(args.data)
    from make_partitioned import write_dataset  # benchmarks/make_partitioned.py

    target = Path(args.data) if args.data else scratch / "data"
    started = time.perf_counter()
    paths = write_dataset(target, int(args.rows), args.files, args.format)
    size = sum(p.stat().st_size for p in paths) / 2**20
    print(f"data: {len(paths)} {args.format} files, {int(args.rows):,} rows, {size:.0f} MiB, "
          f"written in "
          f"{time.perf_counter() - started:.0f} s")
    return target


def child(args: argparse.Namespace, data: Path, mode: str) -> dict:
    cmd = [sys.executable, __file__, "--data", str(data), "--run", mode,
           "--workers", str(args.workers), "--memory-limit", args.memory_limit,
           "--features", str(args.features), "--resamples", str(args.resamples)]
    out = subprocess.run(cmd, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    if out.returncode:
        raise SystemExit(f"{mode} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def report_reduction(args: argparse.Namespace, data: Path) -> None:
    print(f"\n## reduction: D = {args.features} features, B = {args.resamples} label "
          f"redraws, tasks of {TASK_ROWS:,} rows")
    results = [child(args, data, "serial"), child(args, data, "dask")]
    for r in results:
        line = (f"{r['mode']:>6}: wall {r['wall']:7.1f} s, client CPU {r['client_cpu']:7.1f} "
                f"s, client peak {r['client_peak_mib']:6.0f} MiB")
        print(line)
        for name, w in r["workers"].items():
            print(f"        {name}: " + (f"{w}" if not isinstance(w, dict) else
                                         f"CPU {w['cpu']:.1f} s, peak {w['peak_mib']:.0f} MiB"))
    rows = results[0]["rows"]
    cpu = results[0]["client_cpu"]
    print(f"per-row CPU (serial): {1e6 * cpu / rows:.2f} us/row; "
          f"{results[0]['tasks']} tasks; identical: "
          f"{results[0]['digest'] == results[1]['digest']} ({results[0]['digest']})")


def report_audit(args: argparse.Namespace, data: Path | str, scratch: Path) -> None:
    chosen = f" --covariates {args.covariates}" if args.covariates else ""
    print(f"\n## calaudit test DATA{chosen} --json (default battery"
          f"{'' if args.covariates else ': the global stages, no covariates'})")
    limit = memory_bytes(args.memory_limit) / 2**20
    runs = {}
    spill = ["--spill", args.spill]
    modes = (("single", f"single process, --spill {args.spill}", spill),
             ("dask", f"--workers {args.workers} --memory-limit {args.memory_limit} "
                      f"--spill {args.spill}",
              ["--workers", str(args.workers), "--memory-limit", args.memory_limit, *spill]))
    for mode, name, extra in (m for m in modes if m[0] in args.modes.split(",")):
        load = os.getloadavg()[0]
        r = runs[name] = run_audit_cli(data, scratch / f"{len(runs)}.json", extra,
                                       args.covariates)
        if args.keep:
            Path(args.keep).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(scratch / f"{len(runs) - 1}.json", Path(args.keep) / f"{mode}.json")
        print(f"\n{name}: exit {r['code']}, wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s "
              f"(every process reaped), {r['sampled_cpu']:.1f} s (every process sampled), "
              f"load average {load:.1f} at the start")
        if r["error"]:
            print(f"  {r['error']}")
        for proc, figures in r["processes"].items():
            print(f"  {proc}: peak RSS {figures['peak_mib']:,} MiB (anonymous "
                  f"{figures['anon_mib']:,} MiB), CPU {figures['cpu']} s")
        client = next((f for p, f in r["processes"].items() if p.startswith("client")), None)
        if client is not None:
            print(f"  client CPU per row: {1e6 * client['cpu'] / args.rows:.2f} us/row")
        served = sum(f["cpu"] for p, f in r["processes"].items()
                     if p.startswith(("scheduler", "nanny")))
        if served:
            print(f"  scheduler and nannies (processes of their own) CPU per row: "
                  f"{1e6 * served / args.rows:.2f} us/row")
        largest = max((f["peak_mib"] for f in r["processes"].values()), default=math.nan)
        print(f"  largest process peak {largest:,} MiB: "
              f"{'within' if largest <= limit else 'ABOVE'} {args.memory_limit}")
        for line in r["stages"]:
            print(f"  {line}")
    if args.reference:
        for k, name in enumerate(runs):
            ours, theirs = stable_json(Path(args.reference)), stable_json(scratch / f"{k}.json")
            if args.store != "local":  # the same files, named by their URL and ETag
                ours.pop("inputs", None)
                theirs.pop("inputs", None)
            diff = differences(ours, theirs)
            print(f"\n{name}: JSON identical to {Path(args.reference).name} apart from "
                  f"timings{'' if args.store == 'local' else ' and inputs'}: {not diff}")
            for line in diff[:10]:
                print(f"  {line}")
    if len(runs) < 2:
        return
    alone, dask = runs.values()
    if alone["code"] in (0, 1) and dask["code"] in (0, 1):
        diff = differences(stable_json(scratch / "0.json"), stable_json(scratch / "1.json"))
        print(f"\nidentical JSON apart from timings: {not diff}")
        for line in diff[:10]:
            print(f"  {line}")


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def s3_copy(data: Path, fmt: str = "parquet"):
    """``data``'s files (format ``fmt``) on a local S3 server (moto, its own process): yields the
    dataset's URL, with the environment that points s3fs at the server set in this process
    (and so in the audits it starts)."""
    import fsspec

    port = free_port()
    env = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{port}"}
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                               str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                fs = fsspec.filesystem("s3", skip_instance_cache=True)
                fs.mkdir("bench")
                break
            except Exception as error:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("the S3 server (python -m moto.server) did not "
                                     "start") from error
                time.sleep(0.5)
        paths = sorted(data.glob(f"*.{fmt}"))
        for path in paths:
            fs.put_file(str(path), f"bench/data/{path.name}")
        print(f"store: {len(paths)} files uploaded to s3://bench/data/ (moto on port {port})")
        yield "s3://bench/data/"
    finally:
        server.terminate()
        server.wait()
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)


def memory_bytes(text: str) -> float:
    """``2GB`` -> 2e9 (Dask's units: kB, MB, GB, KiB, MiB, GiB)."""
    units = {"kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 2**10, "mib": 2**20, "gib": 2**30}
    lowered = text.strip().lower()
    for unit in sorted(units, key=len, reverse=True):
        if lowered.endswith(unit):
            return float(lowered[: -len(unit)]) * units[unit]
    return float(lowered)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--data", help="a directory of part-*.parquet (or .csv) files "
                                       "(written if empty)")
    parser.add_argument("--format", choices=("parquet", "csv"), default="parquet",
                        help="the files' format (csv: --what audit only; the Dask run's "
                             "tasks parse their own rows, calaudit.data.csv_rows)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--resamples", type=int, default=100)
    parser.add_argument("--what", choices=("reduction", "audit", "both", "overhead"),
                        default="both")
    parser.add_argument("--modes", default="single,dask",
                        help="--what audit: the runs to make (single, dask or both)")
    parser.add_argument("--spill", choices=("auto", "always", "never"), default="auto",
                        help="--what audit: calaudit's --spill in both runs (always: the "
                             "client's loaded columns in memory-mapped files)")
    parser.add_argument("--covariates", default="age,region",
                        help="--what audit: --covariates of both runs ('' for none: the "
                             "global battery, whose Parquet rows the Dask run's tasks read "
                             "themselves)")
    parser.add_argument("--keep", help="--what audit: a directory to keep the runs' JSON "
                                       "in (single.json, dask.json)")
    parser.add_argument("--reference", help="--what audit: a saved JSON of the same data "
                                            "(e.g. a --keep single.json) to compare with")
    parser.add_argument("--store", choices=("local", "s3"), default="local",
                        help="--what audit: read the files where they are, or from a local "
                             "S3 server (moto) as s3://bench/data/")
    parser.add_argument("--tasks", type=int, default=2000,
                        help="--what overhead: number of empty tasks")
    parser.add_argument("--run", choices=("serial", "dask"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run_reduction(args)))
        return
    if args.what == "overhead":
        result = run_overhead(args)
        print(f"## Dask per-task cost: {result['tasks']} empty tasks, partials of "
              f"{args.features} x {args.resamples + 1} float64, {args.workers} workers\n"
              f"wall {result['wall_ms_per_task']:.2f} ms/task, client + scheduler CPU "
              f"{result['client_cpu_ms_per_task']:.2f} ms/task")
        return
    if args.format == "csv" and args.what != "audit":
        parser.error("--format csv measures the audit only (--what audit)")
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="calaudit-scale-") as folder:
        scratch = Path(folder)
        data = ensure_data(args, scratch)
        if args.what in ("reduction", "both"):
            report_reduction(args, data)
        if args.what in ("audit", "both"):
            with contextlib.ExitStack() as stack:
                where = data if args.store == "local" else stack.enter_context(
                    s3_copy(data, args.format))
                report_audit(args, where, scratch)
    print(f"\nload average {load:.1f} before, {os.getloadavg()[0]:.1f} after "
          f"({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
