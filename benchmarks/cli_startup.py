"""How long ``calaudit --help`` and ``calaudit test --help`` take (target: < 0.5 s).

    python benchmarks/cli_startup.py [--repeat 7]

Runs each command in a fresh interpreter several times and prints the median and best
wall time, plus the heavy modules that were imported (there should be none).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

HEAVY = ("numpy", "pandas", "scipy", "matplotlib", "pyarrow", "jinja2")
COMMANDS = (["--help"], ["test", "--help"], ["metrics", "--help"])


def time_command(args: list[str], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "calaudit", *args], check=True,
                       capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def heavy_imports(args: list[str]) -> list[str]:
    probe = (f"import io, sys, runpy; sys.argv = ['calaudit', *{args!r}]\n"
             "real, sys.stdout = sys.stdout, io.StringIO()\n"
             "try:\n    runpy.run_module('calaudit', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "sys.stdout = real\n"
             f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    lines = out.stdout.strip().splitlines()
    return [m for m in (lines[-1] if lines else "").split(",") if m]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    print(f"{'command':<28}{'median s':>10}{'best s':>10}  heavy imports")
    for args in COMMANDS:
        times = time_command(args, repeat)
        label = "calaudit " + " ".join(args)
        heavy = ", ".join(heavy_imports(args)) or "none"
        print(f"{label:<28}{statistics.median(times):>10.3f}{min(times):>10.3f}  {heavy}")


if __name__ == "__main__":
    main()
