"""Benchmark: memory and CPU of the diagnosis steps at large n.

The steps of the local stage outside the kernel passes, on the data of
``benchmarks/scale_rows.py`` (binary, ``age`` numeric + ``region`` 4 categories, calibrated
model; ``--segment`` under-predicts 2 % of rows by 0.08): covariate levels, the attribution
model (:func:`calaudit.attribution.explain.attribute`), the group table, the spill-over
check (``mark_explained``), the per-group reliability panels and the disparity intervals.
Per step: CPU seconds and the peak of traced allocations above what the step started with
(``tracemalloc``; numpy reports its buffers to it), and the process' peak RSS so far.

Command (from the repository root)::

    nice -n 10 python benchmarks/diagnosis_memory.py 1e6 > benchmarks/results/diagnosis_1e6.txt
"""

from __future__ import annotations

import resource
import sys
import time
import tracemalloc

import numpy as np

from calaudit.attribution.disparity import disparity
from calaudit.attribution.explain import AttributionSettings, attribute, mark_explained
from calaudit.local import groups as grp
from calaudit.local.group_reliability import group_panels
from calaudit.local.group_sources import level_table

#: Bands of age: 10, more levels than the default 4 (a harder case: 14 model columns, 54 groups).
BANDS = 10


def make(n: int, segment: bool, seed: int = 20261122):
    rng = np.random.default_rng(seed)
    age = rng.uniform(20, 80, n)
    region = rng.integers(0, 4, n)
    p = 1.0 / (1.0 + np.exp(-(-1.0 + 0.03 * (age - 50) + rng.normal(0, 1, n))))
    truth = np.where((region == 0) & (age > 75.2), np.minimum(1.0, p + 0.08), p) if segment else p
    y = (rng.random(n) < truth).astype(np.float64)
    return age, region, p, y


def step(name: str, fn):
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    started = time.process_time()
    out = fn()
    cpu = time.process_time() - started
    peak = (tracemalloc.get_traced_memory()[1] - base) / 2**20
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  {name:<22} cpu {cpu:7.2f} s   traced peak +{peak:8.1f} MiB   "
          f"process peak RSS {rss:7.0f} MiB", flush=True)
    return out


def main() -> int:
    n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 1_000_000
    segment = "--segment" in sys.argv
    bands = BANDS
    age, region, p, y = make(n, segment)
    print(f"n = {n:,}, binary, age ({bands} bands) + region (4 categories), intersections"
          f"{' (segment)' if segment else ''}")
    tracemalloc.start()
    levels = step("levels", lambda: [
        grp.Levels("age", *grp.quantile_bands(age, bands)),
        grp.Levels("region", region.astype(np.intp), ("north", "south", "east", "west"))])
    settings = AttributionSettings()
    att = step("attribution", lambda: attribute(levels, ["numeric", "categorical"], y, p,
                                                settings))
    gs = grp.GroupSettings(level=1 - 0.05 / len(grp.define_groups(levels, True)))
    specs, table, values = step("group_table", lambda: level_table(
        None, levels, True, y, p, None, np.random.default_rng(1), gs))
    step("mark_explained", lambda: mark_explained(table, specs, att, y, 0.05))
    step("group_panels", lambda: group_panels(table, specs, None, None, n_bins=15,
                                              strategy="uniform", n_resamples=1000, level=0.95,
                                              rng=np.random.default_rng(2), values=values))
    step("disparity", lambda: disparity(table, specs, ["age", "region"], values,
                                        np.random.default_rng(3), 1000, 0.95))
    print("  attribution:", att.section["summary"])
    for row in grp.most_biased(table, 3):
        print(f"  group {row['group']:<36} n {row['n']:>8} bias {row['bias']:+.4f} "
              f"ci [{row['bias_ci'][0]:+.4f}, {row['bias_ci'][1]:+.4f}] {row['status']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
