"""Peak memory of the load alone and of the default battery, with and without spill
(out of core on one machine).

    python benchmarks/spill_memory.py DATASET [--what load|audit|both] [--spill never,always]
        [--main /path/to/main/checkout] [--covariates age,region] [--data-limit MiB]

Each run is a child process whose ``/proc/PID/status`` is sampled every 20 ms:

* ``VmHWM``: the peak resident set (anonymous + file-backed pages; spilled columns that
  are resident count here, but the kernel may drop them at any time);
* ``RssAnon`` (its maximum over the samples): the anonymous memory, which is what cannot be
  paged out without swap; the spill option is meant to bound this one;
* ``VmData`` (its maximum): the private writable address space, which ``RLIMIT_DATA``
  limits (spill files are shared file mappings and do not count; thread stacks, malloc
  arenas and reserved but untouched pages do).

With ``--data-limit MiB`` every child runs under ``RLIMIT_DATA`` of that size (as
``prlimit --data``): the run either completes or must fail with one ``calaudit: error:``
line and exit 2; the last line of its stderr is printed.

The load run is ``calaudit.load`` and nothing else; the audit run is ``calaudit test`` with
the default battery and ``--json``. CPU seconds are the child's user + system time. With
``--main`` the audit also runs from that checkout, and every JSON is compared byte for byte
(``SOURCE_DATE_EPOCH`` fixes the timestamps; timings are zeroed by it too).
"""

from __future__ import annotations

import argparse
import filecmp
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOAD = ("import sys, calaudit; extra = {} if sys.argv[3] == 'main' else "
        "{'spill': sys.argv[3]}; d = calaudit.load(sys.argv[1], covariates=sys.argv[2], "
        "**extra); print(d.n)")
IMPORTS = "import calaudit, pyarrow.dataset, pandas, scipy.special"


def sample(cmd: list[str], env: dict[str, str], data_limit: int | None = None
           ) -> dict[str, float]:
    """Run ``cmd`` (under ``RLIMIT_DATA = data_limit`` bytes if given); its peak VmHWM,
    RssAnon and VmData (MiB), CPU seconds, wall seconds and the last line of stderr."""
    def limit() -> None:
        if data_limit is not None:
            resource.setrlimit(resource.RLIMIT_DATA, (data_limit, data_limit))

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                preexec_fn=limit)
        peaks = {"VmHWM:": 0, "RssAnon:": 0, "VmData:": 0}
        while proc.poll() is None:
            try:
                with open(f"/proc/{proc.pid}/status", encoding="ascii") as handle:
                    for line in handle:
                        key = line.split(maxsplit=1)[0] if line.strip() else ""
                        if key in peaks:
                            peaks[key] = max(peaks[key], int(line.split()[1]))
            except OSError:
                pass
            time.sleep(0.02)
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"rc": proc.returncode, "hwm": peaks["VmHWM:"] / 1024,
            "anon": peaks["RssAnon:"] / 1024, "data": peaks["VmData:"] / 1024, "cpu": cpu,
            "wall": wall, "stderr": lines[-1] if lines else "", "stderr_lines": len(lines)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--what", default="both", choices=("load", "audit", "both"))
    parser.add_argument("--spill", default="never,always")
    parser.add_argument("--covariates", default="age,region")
    parser.add_argument("--main", default=None, help="a checkout of main to compare with")
    parser.add_argument("--out", default=None, help="folder of the JSON results")
    parser.add_argument("--data-limit", type=float, default=None,
                        help="RLIMIT_DATA of every child, MiB (as prlimit --data)")
    parser.add_argument("--spill-dir", default=None, help="--spill-dir of the audit runs")
    args = parser.parse_args()
    repo = str(Path(__file__).resolve().parents[1])
    out = Path(args.out or tempfile.mkdtemp(prefix="spill-memory-"))
    out.mkdir(parents=True, exist_ok=True)
    data_limit = None if args.data_limit is None else int(args.data_limit * 2**20)
    print(f"# {args.dataset}; load average {os.getloadavg()}; {time.strftime('%Y-%m-%d %H:%M')}"
          + ("" if data_limit is None else f"; RLIMIT_DATA {args.data_limit:.0f} MiB"))
    print(f"{'run':<26} {'rc':>3} {'VmHWM MiB':>10} {'max RssAnon MiB':>16} "
          f"{'max VmData MiB':>15} {'CPU s':>7} {'wall s':>7}")
    jsons = []
    for what in ("load", "audit"):
        if args.what not in (what, "both"):
            continue
        runs = [(mode, repo) for mode in args.spill.split(",")]
        if what == "load":
            runs.insert(0, ("imports only", repo))
        if args.main:
            runs.append(("main", args.main))
        for mode, root in runs:
            env = dict(os.environ, PYTHONPATH=root, SOURCE_DATE_EPOCH="0")
            if mode == "imports only":
                cmd = [sys.executable, "-c", IMPORTS]
            elif what == "load":
                cmd = [sys.executable, "-c", LOAD, args.dataset, args.covariates, mode]
            else:
                target = out / f"audit_{mode}.json"
                jsons.append(target)
                cmd = [sys.executable, "-m", "calaudit", "test", args.dataset,
                       "--covariates", args.covariates, "--json", str(target), "-q"]
                cmd += [] if mode == "main" else ["--spill", mode]
                cmd += ["--spill-dir", args.spill_dir] if args.spill_dir and mode != "main" \
                    else []
            got = sample(cmd, env, data_limit)
            print(f"{what + ' ' + mode:<26} {got['rc']:>3} {got['hwm']:>10.0f} "
                  f"{got['anon']:>16.0f} {got['data']:>15.0f} {got['cpu']:>7.1f} "
                  f"{got['wall']:>7.1f}", flush=True)
            if got["rc"] not in (0, 1) or data_limit is not None:
                print(f"    stderr ({got['stderr_lines']} lines), last: {got['stderr']}")
                if got["rc"] not in (0, 1) and what == "audit":
                    jsons.pop()
    if len(jsons) > 1:
        same = all(filecmp.cmp(jsons[0], other, shallow=False) for other in jsons[1:])
        print(f"JSON identical across {', '.join(p.stem for p in jsons)}: {same}")
    print(f"# load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
