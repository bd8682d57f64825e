"""Benchmark: CPU seconds per stage of ``calaudit test`` (in-process), for a shared machine.

The data are those of ``benchmarks/scale_rows.py`` (binary, ``age`` numeric + ``region``
categorical, a calibrated model). The CLI runs in this process with every stage's
``run`` wrapped to record its CPU time (``time.process_time``: all threads of the process,
so BLAS threads count) and wall time. CPU seconds do not depend on other jobs the way
wall time does (they still grow a little under contention: shared caches, BLAS threads
spinning); the load average is printed.

    python benchmarks/stage_cpu.py 1e6 [extra CLI args]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from scale_rows import make_data  # noqa: E402

import calaudit.audit.runner as runner  # noqa: E402
from calaudit.cli.app import app  # noqa: E402

TIMES: list[tuple[str, float, float]] = []


def timed_stages(data, config, stages):
    wrapped = []
    for stage in stages:
        wrapped.append(_Timed(stage))
    return _original(data, config, tuple(wrapped))


class _Timed:
    def __init__(self, stage) -> None:
        self.stage, self.name = stage, stage.name

    def run(self, data, config, rng):
        cpu, wall = time.process_time(), time.perf_counter()
        out = self.stage.run(data, config, rng)
        TIMES.append((self.name, time.process_time() - cpu, time.perf_counter() - wall))
        return out


_original = runner.run_stages


def main() -> int:
    n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000
    extra = sys.argv[2:]
    runner.run_stages = timed_stages
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "rows.parquet"
        make_data(n, data)
        before = os.getloadavg()[0]
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            app(["test", str(data), "--covariates", "age,region", "--json",
                 str(Path(tmp) / "r.json"), "--html", str(Path(tmp) / "r.html"),
                 "--exit-zero", "-q", *extra])
        except SystemExit:
            pass
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        after = os.getloadavg()[0]
    print(f"calaudit test in-process, n = {n:,} binary rows, age + region, JSON + HTML, "
          f"args {' '.join(extra) or '(defaults)'}")
    print(f"load average {before:.2f} before, {after:.2f} after (2 cores, shared); "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    print(f"total (load, stages, report): {cpu:.1f} CPU-s, {wall:.1f} s wall")
    for name, c, w in TIMES:
        print(f"  stage {name:<20} {c:8.2f} CPU-s {w:8.2f} s wall")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
