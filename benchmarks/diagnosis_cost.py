"""Cost of the issue-12 diagnostics against the local test itself, on 50,000 rows.

Command (saved output: benchmarks/results/diagnosis_cost.txt):

    PYTHONPATH=. python benchmarks/diagnosis_cost.py > benchmarks/results/diagnosis_cost.txt

Data: ``tests/diagnosis_cases.one_region`` (five regions, gender, age; South under-
predicted by 0.11). Timed separately, in one process, with the default settings:

* the local test: the KLCE^2 pass (double precision) and ``klce_consistency`` with 500
  resamples (single precision) -- what the stage computed before these diagnostics;
* the new diagnostics: LCB bandwidth selection (LOO-CV, two stages), the LCB pass with
  the chosen bandwidths, the plotted rows' products (pointwise intervals, curve weights),
  the attribution GLMs, the explained-by check, the disparity bootstrap and the
  per-group reliability panels.

The target (issue 12): diagnostics <= local test. Wall-clock on a shared machine: the
ratio is the figure to read.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calaudit.attribution.disparity import disparity  # noqa: E402
from calaudit.attribution.explain import mark_explained  # noqa: E402
from calaudit.audit import local_calibration as lc  # noqa: E402
from calaudit.audit.config import AuditConfig  # noqa: E402
from calaudit.data.dataset import CalibrationData  # noqa: E402
from calaudit.local import groups as grp  # noqa: E402
from calaudit.local.group_reliability import group_panels  # noqa: E402
from calaudit.local.lcb import curve_design, plot_points, row_products, top_label_residual  # noqa: E402
from tests.diagnosis_cases import one_region  # noqa: E402

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
    streams = dict(zip(lc.STREAMS, np.random.default_rng(1).spawn(len(lc.STREAMS)),
                       strict=True))
    audit = lc.LocalAudit(data, config, streams)
    outcome, prediction = top_label_residual(data.y_true, data.y_proba)
    r = outcome - prediction
    print(f"# n = {N}, covariates region, gender, age; cpus {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.1f}")
    test: dict[str, float] = {}
    print("local test:")
    statistic = timed("KLCE^2 pass", lambda: lc.klce2(audit.gram, audit.r), test)
    timed("klce_consistency (500 resamples)",
          lambda: audit.tests_and_products(statistic, np.zeros((N, 0))), test)
    diag: dict[str, float] = {}
    print("new diagnostics:")
    bias, _, gram = timed("LCB bandwidths (CV) + LCB pass", lambda: audit.local_bias(r), diag)
    design = curve_design(audit.curve_requests(), bias.weight_sums, 40)
    timed("plotted rows: intervals + curve weights",
          lambda: row_products(gram.features, plot_points(N, 2000, streams["points"]), r,
                               bias.weight_sums, design.columns), diag)
    levels = [grp.covariate_levels(c, 4) for c in data.covariates]
    specs = grp.define_groups(levels, True)
    table = grp.group_table(specs, outcome, prediction, bias.values, streams["groups"],
                            audit.group_settings())
    attribution = timed("attribution GLMs", lambda: audit.attribution(levels, outcome,
                                                                      prediction), diag)
    timed("explained_by", lambda: mark_explained(table, specs, attribution, outcome, 0.05),
          diag)
    timed("disparity bootstrap", lambda: disparity(table, specs, data.covariate_names,
                                                   outcome, prediction, streams["disparity"],
                                                   1000, 0.95), diag)
    timed("group reliability panels", lambda: group_panels(
        table, specs, outcome, prediction, n_bins=15, strategy="uniform", n_resamples=1000,
        level=0.95, rng=streams["group_reliability"]), diag)
    total_test, total_diag = sum(test.values()), sum(diag.values())
    print(f"local test total      {total_test:8.1f} s")
    print(f"diagnostics total     {total_diag:8.1f} s")
    print(f"ratio diagnostics / test = {total_diag / total_test:.2f} (target <= 1)")
    print(f"attribution: {attribution.section['summary']}")


if __name__ == "__main__":
    main()
