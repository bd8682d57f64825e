"""Benchmark: peak memory per stage of ``calaudit test``, and bytes per row from two sizes.

The data are those of ``benchmarks/scale_rows.py`` (binary, ``age`` numeric + ``region``
categorical, a calibrated model). For each size the CLI runs in a child process (this
script with ``--child``) with every stage wrapped: a thread samples the resident set size
every 5 ms and records, per stage, the RSS when the stage starts and its maximum while it
runs (and the same for loading and for writing the reports). glibc is told to serve every
allocation above 256 KiB by ``mmap`` (``MALLOC_MMAP_THRESHOLD_``), so freed arrays leave
the RSS at once and the maxima are live memory, not heap high-water marks.

From two sizes ``n1 < n2``, ``(peak2 - peak1) / (n2 - n1)`` is the stage's peak in bytes
per row (what grows with ``n``); the intercept is the interpreter, imports and
fixed-size buffers. RSS is load-independent, so the figures mean the same on a shared
machine.

    python benchmarks/stage_memory.py 3e5 1e6 [extra CLI args]

With ``STAGE_MEMORY_ANON=1`` the sampled figure is ``RssAnon`` of ``/proc/self/status``
instead of the RSS: the anonymous memory only, which is what matters with
``--spill always`` (spilled columns are file pages the system can drop).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIB = 2**20


def child(data: Path, out: Path, extra: list[str]) -> None:
    """Run the CLI in this process, writing ``{phase: [rss at start, max rss]}`` to
    ``out`` (bytes)."""
    sys.path.insert(0, str(ROOT))
    import psutil

    import calaudit.audit.runner as runner
    from calaudit.cli.app import run

    proc = psutil.Process()
    if os.environ.get("STAGE_MEMORY_ANON") == "1":
        proc = _AnonOnly()
    phases: dict[str, list[int]] = {}
    current = ["load"]
    phases["load"] = [proc.memory_info().rss, 0]

    def sample() -> None:
        while True:
            rss = proc.memory_info().rss
            entry = phases[current[0]]
            entry[1] = max(entry[1], rss)
            time.sleep(0.005)

    def enter(name: str) -> None:
        rss = proc.memory_info().rss
        phases[name] = [rss, rss]
        current[0] = name

    class Watched:
        def __init__(self, stage) -> None:
            self.stage, self.name = stage, stage.name

        def run(self, *args):
            enter(self.name)
            try:
                return self.stage.run(*args)
            finally:
                enter("after " + self.name)

    original = runner.run_stages

    def watched(data_, config, stages):
        outputs = original(data_, config, tuple(Watched(s) for s in stages))
        enter("reports")
        return outputs

    runner.run_stages = watched
    threading.Thread(target=sample, daemon=True).start()
    run(["test", str(data), "--covariates", "age,region", "--json",
         str(out.with_suffix(".result.json")), "--html", str(out.with_suffix(".html")),
         "--exit-zero", "-q", *extra])
    time.sleep(0.02)
    out.write_text(json.dumps({k: v for k, v in phases.items()
                               if not k.startswith("after ")}))


class _AnonOnly:
    """``memory_info().rss`` reporting ``RssAnon`` (bytes) of this process."""

    def memory_info(self):
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("RssAnon:"):
                    return _Rss(int(line.split()[1]) * 1024)
        return _Rss(0)


class _Rss:
    def __init__(self, rss: int) -> None:
        self.rss = rss


def measure(n: int, tmp: Path, extra: list[str]) -> dict[str, list[int]]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from scale_rows import make_data

    data = tmp / f"rows_{n}.parquet"
    make_data(n, data)
    out = tmp / f"phases_{n}.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MALLOC_MMAP_THRESHOLD_": "262144"}
    subprocess.run([sys.executable, __file__, "--child", str(data), str(out), *extra],
                   check=True, env=env)
    return json.loads(out.read_text())


def main() -> int:
    if sys.argv[1] == "--child":
        child(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:])
        return 0
    n1, n2 = (int(float(a)) for a in sys.argv[1:3])
    extra = sys.argv[3:]
    before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        small, large = measure(n1, Path(tmp), extra), measure(n2, Path(tmp), extra)
    what = "RssAnon" if os.environ.get("STAGE_MEMORY_ANON") == "1" else "RSS"
    print(f"{what}; calaudit test, binary rows, age + region, JSON + HTML, args "
          f"{' '.join(extra) or '(defaults)'}; load average {before:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after (RSS does not depend on it)")
    print(f"{'phase':<20} {'start MiB':>10} {'peak MiB':>9} {'start MiB':>10} "
          f"{'peak MiB':>9} {'peak B/row':>11} {'rise B/row':>11} {'10^7 MiB':>9}")
    print(f"{'':<20} {f'n = {n1:,}':>20} {f'n = {n2:,}':>20}")
    for phase in large:
        s1, p1 = small.get(phase, [0, 0])
        s2, p2 = large[phase]
        per_row = (p2 - p1) / (n2 - n1)
        rise = ((p2 - s2) - (p1 - s1)) / (n2 - n1)
        at_1e7 = (p2 + per_row * (10**7 - n2)) / MIB
        print(f"{phase:<20} {s1 / MIB:10.0f} {p1 / MIB:9.0f} {s2 / MIB:10.0f} "
              f"{p2 / MIB:9.0f} {per_row:11.0f} {rise:11.0f} {at_1e7:9.0f}")
    print("peak B/row: growth of the phase's peak RSS per row; rise B/row: growth of "
          "(peak - RSS at the phase's start) per row, what the phase itself allocates; "
          "10^7 MiB: the phase's peak extrapolated linearly to 10^7 rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
