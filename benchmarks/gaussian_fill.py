"""CPU nanoseconds per kernel entry of a Gaussian kernel block: the fused compiled fill
(:func:`calaudit.numerics.gaussian_fill.gaussian_fill`, the code of today) against the
previous ``cdist`` + ``np.exp`` (float32 blocks: the distances rounded to float32, then
numpy's single-precision ``exp``), on the block shapes the exact path fills.

Command (saved output: benchmarks/results/gaussian_fill.txt):

    python benchmarks/gaussian_fill.py > benchmarks/results/gaussian_fill.txt

Shapes (rows x columns; ``d`` columns of features): 134 x 1953, the row chunk of a
1024 x 1953 tile block of ``kernel_forms_and_matmul`` (``CHUNK_ENTRIES // 1953`` rows);
67 x 1953, a row group of the products-only pass (the LCB's ``K @ [r, 1]``); 512 x 2048,
a column chunk of the LCB's standard-error pass. One thread; the CPU time of the process
(``time.process_time``) over repeated calls, the best of 5 rounds old and new
alternating; the load average is printed (the machine may be shared).
Also: the import and first-call costs of the compiled fill, in a child process (numba's
import, loading the cached machine code; with an empty cache: compiling it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy.spatial.distance import cdist

from calaudit.numerics.gaussian_fill import gaussian_fill

SHAPES = [(134, 1953), (67, 1953), (512, 2048)]


def old_fill(out, a, b) -> None:
    """The fill of calaudit.local.kernel before the fused kernel."""
    d = cdist(a, b, "sqeuclidean")
    if out.dtype != np.float64:
        d = d.astype(out.dtype)
    np.negative(d, out=d)
    np.exp(d, out=out)


def cpu_ns(fill, out, a, b, entries: int = 40_000_000) -> float:
    calls = max(1, entries // out.size)
    start = time.process_time()
    for _ in range(calls):
        fill(out, a, b)
    return (time.process_time() - start) / (calls * out.size) * 1e9


def first_call(cache_dir: str) -> tuple[float, float]:
    """Seconds to import numba and the compiled module, then of the first fill (loading
    the cached machine code, or compiling it), in a new process (numpy already loaded)."""
    probe = ("import time, numpy as np\n"
             "from calaudit.numerics.gaussian_fill import gaussian_block, tables\n"
             "tables(); t = time.perf_counter()\n"
             "import calaudit.numerics._gaussian_jit\n"
             "u = time.perf_counter()\n"
             "gaussian_block(np.zeros((2, 2)), np.zeros((3, 2)))\n"
             "print(u - t, time.perf_counter() - u)")
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=env, check=True)
    first, second = done.stdout.split()[-2:]
    return float(first), float(second)


def main() -> None:
    print(f"# load average at start {os.getloadavg()}, cpus {os.cpu_count()}")
    rng = np.random.default_rng(0)
    print("dims dtype   rows x cols   old ns/entry  new ns/entry  speed-up")
    for dims in (2, 3, 4):
        for dtype in (np.float64, np.float32):
            for rows, cols in SHAPES:
                a = rng.normal(size=(rows, dims))
                b = rng.normal(size=(cols, dims))
                out = np.empty((rows, cols), dtype=dtype)
                gaussian_fill(out, a, b)
                old, new = [], []
                for _ in range(5):
                    old.append(cpu_ns(old_fill, out, a, b))
                    new.append(cpu_ns(gaussian_fill, out, a, b))
                print(f"{dims:4d} {np.dtype(dtype).name:7s} {rows:5d} x {cols:5d} "
                      f"{min(old):12.2f}  {min(new):12.2f}  {min(old) / min(new):7.2f}x")
    with tempfile.TemporaryDirectory() as cache:
        cold = first_call(cache)
        warm = [first_call(cache) for _ in range(3)]
    imports, loads = min(w[0] for w in warm), min(w[1] for w in warm)
    print(f"in a new process: import numba + the compiled module {imports:.2f} s (best of 3); "
          f"first fill with the machine code cached {loads:.2f} s (best of 3), with an "
          f"empty cache (compiles) {cold[1]:.2f} s")
    print(f"# load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
