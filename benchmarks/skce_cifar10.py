"""Benchmark: SKCE_uq and its asymptotic test (Arcones-Gine bootstrap, B = 1000) on one
CIFAR-10 network (n = 10,000, m = 10). Targets: at most 5 s wall, at most 1 GB peak memory.

Command (from the repository root; a short run, not niced so that the wall time is not
dominated by other jobs' priority):

    python benchmarks/skce_cifar10.py densenet121 > benchmarks/results/skce_cifar10.txt

Data: ``../shared/datasets/cifar10`` (skipped cleanly when absent). Timed: the production
stage (``SkceStage`` with only ``skce_uq_asymptotic`` enabled: exact median bandwidth over
the full 10,000 x 10,000 TV matrix, SKCE_b/uq/ul/block, 1,000 bootstrap resamples through
the pairwise engine), after reading the CSV. Also timed separately: the median, the
estimate pass and the bootstrap pass. Peak memory: ``tracemalloc`` peak of Python/numpy
allocations during the stage, and the process's peak resident set size
(``ru_maxrss``, includes the interpreter, libraries and the loaded data). CPU time is
printed too: the machine is shared (2 cores, other jobs running), so wall time depends on
the load, shown by the load average.
"""

from __future__ import annotations

import os
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from calaudit.audit.battery import SkceStage
from calaudit.audit.config import AuditConfig, GlobalTestsConfig
from calaudit.data.dataset import CalibrationData
from calaudit.inference.skce_tests import count_forms
from calaudit.metrics.skce import choose_kernel, quadratic_terms, residual_gram
from calaudit.numerics.random import stream
from calaudit.numerics.resampling import bootstrap_counts

DATA = Path("/work/shared/datasets/cifar10")


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def main() -> int:
    model = sys.argv[1] if len(sys.argv) > 1 else "densenet121"
    if not (DATA / "labels.csv").exists():
        print(f"skipped: {DATA} not found")
        return 0
    probs = np.loadtxt(DATA / f"{model}.csv", delimiter=",")
    labels = np.loadtxt(DATA / "labels.csv", dtype=np.int64) - 1
    data = CalibrationData(probs, labels, tuple(str(k) for k in range(10)))
    config = AuditConfig(n_resamples=1000,
                         global_tests=GlobalTestsConfig(tests=("skce_uq_asymptotic",)))
    print(f"# {model}: n = {data.n}, m = {data.n_classes}; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (shared machine)")
    tracemalloc.start()
    output, wall, cpu = timed(lambda: SkceStage().run(data, config, stream(0, "skce")))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    test = output.tests[0]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"stage wall {wall:.2f} s, cpu {cpu:.2f} s; tracemalloc peak {peak / 2**20:.0f} MiB; "
          f"process peak RSS {rss:.0f} MiB")
    print(f"SKCE_uq = {test.estimate!r}; statistic = {test.statistic!r}; "
          f"p = {test.p_value} (B = {test.n_resamples}); "
          f"bandwidth = {output.metrics[0].params['bandwidth']!r}")
    residuals = data.residuals
    choice, w1, c1 = timed(lambda: choose_kernel(probs))
    gram = residual_gram(choice.kernel, probs, residuals)
    terms, w2, c2 = timed(lambda: quadratic_terms(gram))
    counts = bootstrap_counts(np.random.default_rng(0), data.n, 1000)
    _, w3, c3 = timed(lambda: count_forms(gram, terms, counts))
    print(f"parts: exact median {w1:.2f} s (cpu {c1:.2f}), estimate pass {w2:.2f} s "
          f"(cpu {c2:.2f}), bootstrap pass B=1000 {w3:.2f} s (cpu {c3:.2f})")
    ok = wall <= 5.0 and peak / 2**30 <= 1.0
    print("TARGET", "MET" if ok else "MISSED", "(5 s wall, 1 GB peak)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
