"""Thread-CPU seconds spent filling kernel blocks (``calaudit.local.kernel._fill``) during
the AHS exact run, in process, with the process's CPU and wall time.

Command (run it alternately with PYTHONPATH set to an old tree and to this one; saved output
with the load averages: benchmarks/results/local_ahs_alternating.txt):

    python benchmarks/local_ahs_fills.py OUT.json LABEL [PREDS.csv]

PREDS.csv (default /tmp/exp13/ahs_preds.csv) is written by ``write_predictions`` of
``benchmarks/local_ahs.py``.
"""
import sys
import threading
import time

from calaudit.local import kernel
totals = {"cpu": 0.0, "entries": 0}
lock = threading.Lock()
orig = kernel._fill
def timed(out, a, b):
    t = time.thread_time()
    orig(out, a, b)
    dt = time.thread_time() - t
    with lock:
        totals["cpu"] += dt; totals["entries"] += out.size
kernel._fill = timed
from calaudit.cli.app import run
c = time.process_time(); w = time.perf_counter()
run(["test", sys.argv[3] if len(sys.argv) > 3 else "/tmp/exp13/ahs_preds.csv", "--covariates", "HINCP,BLACK", "--categorical", "BLACK",
     "--local-resamples", "500", "--method", "exact", "--json", sys.argv[1], "--exit-zero", "-q"])
print(f"{sys.argv[2]}: process cpu {time.process_time()-c:.1f} s, wall {time.perf_counter()-w:.1f} s, "
      f"fills thread-cpu {totals['cpu']:.1f} s over {totals['entries']/1e9:.3f}e9 entries = "
      f"{totals['cpu']/totals['entries']*1e9:.2f} ns/entry")
