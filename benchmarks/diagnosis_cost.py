"""Cost of the local stage's diagnostics against its test, on 50,000 rows.

Command (saved output: benchmarks/results/diagnosis_cost.txt):

    PYTHONPATH=. python benchmarks/diagnosis_cost.py > benchmarks/results/diagnosis_cost.txt

Data: ``one_region`` of ``validation/diagnosis_cases.py`` (five regions, gender, age; South under-
predicted by 0.11); ``DIAG_N`` rows (default 50,000). Timed separately, in one process,
with the default settings (``--method auto``):

* the local test: the setup (encoding, median-heuristic bandwidths, the exact or feature
  path) and the tests (:class:`calaudit.local.kernel_tests.LocalTests`);
* the diagnostics: the attribution GLMs, the LCB (bandwidth selection, kernel sums,
  plotted rows, curves: :class:`calaudit.local.lcb_estimation.LcbEstimation`), the group
  table, the explained-by check, the per-group reliability panels and the disparity
  bootstrap.

The target: diagnostics <= local test. Wall-clock on a shared machine: the ratio is the
figure to read.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

from diagnosis_cases import one_region  # noqa: E402

from calaudit.attribution.disparity import disparity  # noqa: E402
from calaudit.attribution.explain import mark_explained  # noqa: E402
from calaudit.audit.config import AuditConfig  # noqa: E402
from calaudit.audit.local_calibration import STREAMS, attribute_levels  # noqa: E402
from calaudit.data.dataset import CalibrationData  # noqa: E402
from calaudit.local import groups as grp  # noqa: E402
from calaudit.local.group_reliability import group_panels  # noqa: E402
from calaudit.local.group_sources import level_table  # noqa: E402
from calaudit.local.kernel_tests import LocalTests  # noqa: E402
from calaudit.local.lcb_estimation import LcbEstimation, categorical_separation  # noqa: E402

N = int(os.environ.get("DIAG_N", "50000"))


def timed(label: str, fn, log: dict):
    started = time.perf_counter()
    out = fn()
    log[label] = time.perf_counter() - started
    print(f"  {label:<38} {log[label]:8.1f} s", flush=True)
    return out


def main() -> None:
    y, p, covs, _ = one_region(N, 1)
    data = CalibrationData.from_arrays(y, p, covariates=covs, categorical=["region", "gender"])
    config = AuditConfig(seed=1)
    lc = config.local
    streams = dict(zip(STREAMS, np.random.default_rng(1).spawn(len(STREAMS)), strict=True))
    print(f"# n = {N}, covariates region, gender, age; cpus {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    test: dict[str, float] = {}
    print("local test:")
    setup = timed("setup (encoding, bandwidths, path)",
                  lambda: LocalTests(data, config, streams), test)
    r = setup.r
    outcome, prediction = data.y_true.astype(np.float64), setup.proba
    timed(f"tests {', '.join(lc.tests)} ({lc.n_resamples} resamples)",
          setup.run, test)
    diag: dict[str, float] = {}
    print("diagnostics:")
    attribution = timed("attribution GLMs",
                        lambda: attribute_levels(setup, outcome, prediction), diag)
    lcb, _ = timed("LCB (bandwidths, kernel sums, curves)", lambda: LcbEstimation(setup).run(
        r, prediction, categorical_separation(attribution.section)), diag)
    settings = grp.GroupSettings(min_rows=lc.min_group_rows, min_events=lc.min_group_events,
                                 adjust=lc.group_adjust, alpha=config.alpha,
                                 ci_resamples=lc.group_ci_resamples,
                                 level=lc.confidence_level)
    specs, table, values = timed("group table", lambda: level_table(
        None, setup.levels, lc.intersections, outcome, prediction, lcb, streams["groups"],
        settings), diag)
    timed("explained_by", lambda: mark_explained(table, specs, attribution, outcome, 0.05),
          diag)
    timed("group reliability panels", lambda: group_panels(
        table, specs, None, None, n_bins=15, strategy="uniform", n_resamples=1000,
        level=0.95, rng=streams["group_reliability"], values=values), diag)
    timed("disparity bootstrap", lambda: disparity(table, specs, data.covariate_names,
                                                   values, streams["disparity"], 1000, 0.95),
          diag)
    total_test, total_diag = sum(test.values()), sum(diag.values())
    print(f"local test total      {total_test:8.1f} s")
    print(f"diagnostics total     {total_diag:8.1f} s")
    print(f"ratio diagnostics / test = {total_diag / total_test:.2f} (target <= 1)")
    print(f"attribution: {attribution.section['summary']}")


if __name__ == "__main__":
    main()
