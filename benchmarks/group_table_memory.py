"""Benchmark: what the group table, its panels and the disparity hold in the client, on a
Parquet dataset read by its tasks against the same rows loaded into memory.

Command (saved output, with a 200,000-row dataset too: benchmarks/results/group_table_memory_1e6.txt):

    python benchmarks/group_table_memory.py /work/valruns/d27/d1e6 age,region \
        > benchmarks/results/group_table_memory_1e6.txt

Both runs make the stage's calls (:func:`calaudit.local.group_sources.level_table`,
:func:`~calaudit.local.group_reliability.group_panels`,
:func:`~calaudit.attribution.disparity.disparity`) with 4 bands per numeric covariate,
the intersections, no LCB values, in this process, one range after another
(``SerialExecutor``). ``tracemalloc`` peak of the three calls (one task's per-range
temporaries included: a few MiB, whatever n) and what the result keeps
(``GroupValues``: the gathered rows); the loaded run's inputs (levels' codes, outcome,
prediction) are made before the measurement, so its peak is the pieces' own, the same
code on arrays. The dataset run reads no row into the client (``RowsData._loaded``
refused) and reads the levels' edges and labels only.
"""

from __future__ import annotations

import dataclasses
import sys
import time
import tracemalloc

import numpy as np

from calaudit import scale
from calaudit.attribution.disparity import disparity
from calaudit.data.load import load
from calaudit.data.planned import RowsData, plan
from calaudit.local import groups as grp
from calaudit.local.group_reliability import group_panels
from calaudit.local.group_sources import level_table
from calaudit.local.lcb import top_label_residual
from calaudit.scale import SerialExecutor


def pieces(data, levels, outcome, prediction) -> tuple[float, int, int, str]:
    """Seconds, tracemalloc peak, gathered bytes and the JSON of the three pieces."""
    import json

    rng = np.random.default_rng(3).spawn(3)
    tracemalloc.start()
    tracemalloc.reset_peak()
    start = time.perf_counter()
    specs, table, values = level_table(data, levels, True, outcome, prediction, None,
                                       rng[0], grp.GroupSettings())
    panels = group_panels(table, specs, None, None, n_bins=15, strategy="uniform",
                          n_resamples=1000, level=0.95, rng=rng[1], values=values)
    gaps = disparity(table, specs, [lv.name for lv in levels], values, rng[2], 1000, 0.95)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    kept = sum(y.nbytes + p.nbytes for y, p in values.gathered.values())
    text = json.dumps({"groups": table, "panels": panels, "disparity": gaps},
                      sort_keys=True, default=float)
    return seconds, peak, kept, text


def main(path: str, covariates: str) -> None:
    loaded = load(path, covariates=covariates)
    n = loaded.n
    levels = [grp.covariate_levels(c, 4) for c in loaded.covariates]
    outcome, prediction = top_label_residual(loaded.y_true, loaded.y_proba)
    print(f"{path}: {n:,} rows, covariates {covariates}, "
          f"{len(levels)} covariates + {len(levels) * (len(levels) - 1) // 2} pairs")
    with scale.using(SerialExecutor()):
        sec, peak, kept, memory = pieces(loaded, levels, outcome, prediction)
    print(f"loaded rows (arrays in the client): {sec:6.1f} s, peak {peak / 2**20:7.1f} MiB "
          f"({peak / n:5.1f} B/row), gathered {kept / 2**20:.2f} MiB")
    no_codes = [dataclasses.replace(lv, codes=None) for lv in levels]
    del loaded, outcome, prediction, levels
    def refused(self):
        raise AssertionError("read into the client")

    with scale.using(SerialExecutor()):
        data = plan(path, covariates=covariates)
        RowsData._loaded = property(refused)
        sec, peak, kept, tasks = pieces(data, no_codes, None, None)
    print(f"dataset read by its tasks:          {sec:6.1f} s, peak {peak / 2**20:7.1f} MiB "
          f"({peak / n:5.1f} B/row), gathered {kept / 2**20:.2f} MiB")
    print("same JSON:", tasks == memory)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "age,region")
