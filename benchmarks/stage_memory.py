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
fixed-size buffers. With more sizes, one slope per consecutive pair. RSS is
load-independent, so the figures mean the same on a shared machine.

    python benchmarks/stage_memory.py 3e5 1e6 [extra CLI args]
    python benchmarks/stage_memory.py 1e5 1e6 3e6 --files 20 --code /tmp/main -- --spill always

``--files K``: the data are ``benchmarks/make_partitioned.py``'s dataset in ``K`` Parquet
files (the same model, plus a biased region) instead of one file of ``scale_rows.py``.
``--code DIR``: the child imports ``calaudit`` from ``DIR`` (e.g. a ``git archive`` of
another commit), so two versions are measured by the same script. Arguments after
``--`` (or any not recognised) go to ``calaudit test``.

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
    sys.path.insert(0, os.environ.get("STAGE_MEMORY_CODE", str(ROOT)))
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


def make(n: int, tmp: Path, files: int) -> Path:
    """The data of ``n`` rows: one Parquet file of ``scale_rows.py`` (``files = 0``) or
    ``make_partitioned.py``'s dataset in ``files`` files."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    if files:
        from make_partitioned import write_dataset

        data = tmp / f"rows_{n}"
        write_dataset(data, n, files)
        return data
    from scale_rows import make_data

    data = tmp / f"rows_{n}.parquet"
    make_data(n, data)
    return data


def measure(n: int, tmp: Path, extra: list[str], files: int = 0, code: str | None = None
            ) -> dict[str, list[int]]:
    data = make(n, tmp, files)
    out = tmp / f"phases_{n}.json"
    code = str(Path(code).resolve()) if code else str(ROOT)
    env = {**os.environ, "PYTHONPATH": code, "STAGE_MEMORY_CODE": code,
           "MALLOC_MMAP_THRESHOLD_": "262144"}
    subprocess.run([sys.executable, __file__, "--child", str(data), str(out), *extra],
                   check=True, env=env)
    return json.loads(out.read_text())


def arguments(argv: list[str]) -> tuple[list[int], int, str | None, list[str]]:
    """``(sizes, files, code, extra CLI args)`` from the command line."""
    sizes, files, code, extra = [], 0, None, []
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            extra += rest
            break
        if arg == "--files":
            files = int(rest.pop(0))
        elif arg == "--code":
            code = rest.pop(0)
        elif not extra and arg.replace(".", "", 1).replace("e", "", 1).isdigit():
            sizes.append(int(float(arg)))
        else:
            extra.append(arg)
    if len(sizes) < 2 or sizes != sorted(sizes):
        raise SystemExit("give at least two increasing sizes")
    return sizes, files, code, extra


def main() -> int:
    if sys.argv[1] == "--child":
        child(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:])
        return 0
    sizes, files, code, extra = arguments(sys.argv[1:])
    before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        runs = [measure(n, Path(tmp), extra, files, code) for n in sizes]
    what = "RssAnon" if os.environ.get("STAGE_MEMORY_ANON") == "1" else "RSS"
    source = f"make_partitioned.py, {files} files" if files else "scale_rows.py, one file"
    print(f"{what}; calaudit test, binary rows ({source}), age + region, JSON + HTML, args "
          f"{' '.join(extra) or '(defaults)'}; code {code or ROOT}; load average "
          f"{before:.2f} before, {os.getloadavg()[0]:.2f} after (RSS does not depend on it)")
    if len(sizes) == 2:
        _two_sizes(sizes, runs)
    else:
        _sizes(sizes, runs)
    return 0


def _two_sizes(sizes: list[int], runs: list[dict[str, list[int]]]) -> None:
    (n1, n2), (small, large) = sizes, runs
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


def _sizes(sizes: list[int], runs: list[dict[str, list[int]]]) -> None:
    """Peak MiB per size, then the peak's slope (B/row) between consecutive sizes."""
    pairs = list(zip(sizes, sizes[1:]))
    print(f"{'phase':<20}" + "".join(f"{f'peak {n:.0e}':>12}" for n in sizes)
          + "".join(f"{f'B/row {a:.0e}-{b:.0e}':>20}" for a, b in pairs))
    for phase in runs[-1]:
        peaks = [run.get(phase, [0, 0])[1] for run in runs]
        slopes = [(peaks[i + 1] - peaks[i]) / (b - a) for i, (a, b) in enumerate(pairs)]
        print(f"{phase:<20}" + "".join(f"{p / MIB:12.0f}" for p in peaks)
              + "".join(f"{s:20.1f}" for s in slopes))
    print("peak: the phase's maximum (MiB) in each run; B/row: growth of that peak per row "
          "between two sizes")


if __name__ == "__main__":
    raise SystemExit(main())
