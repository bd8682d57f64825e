"""Benchmark: binned ECE on 1,000,000 binary rows (target: at most 0.5 s), with netcal's
and relplot's ECE timed on the same data in the same process.

Command (from the repository root, with the ``bench`` extra installed):

    nice -n 10 python benchmarks/ece_million.py > benchmarks/results/ece_million.txt

Data: p ~ Beta(2, 5), y ~ Bernoulli(p^1.1) (slightly miscalibrated), seed 0. Each call is
timed as the best of 5 repetitions (``time.perf_counter``). calaudit: ``ece`` with 15
equal-width right-closed bins (the default metric). netcal: ``ECE(bins=15).measure(p, y)``.
relplot: ``metrics.binnedECE(p, y, nbins=15)`` (left-closed bins) and, for information,
``smECE`` (smooth ECE, a different estimator). Bin conventions differ slightly between the
libraries (see the guides), so the values agree only approximately. Timings were measured
on a shared 2-core machine with other jobs running.
"""

from __future__ import annotations

import time

import numpy as np

from calaudit.metrics.ece import expected_calibration_error

N, BINS, REPEAT = 1_000_000, 15, 5


def best_time(fn) -> tuple[float, float]:
    value, times = None, []
    for _ in range(REPEAT):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return float(value), min(times)


def main() -> None:
    rng = np.random.default_rng(0)
    p = rng.beta(2.0, 5.0, size=N)
    y = (rng.random(N) < p ** 1.1).astype(np.int64)
    probs = np.column_stack([1.0 - p, p])
    rows = [("calaudit ece (15 bins)",
             *best_time(lambda: expected_calibration_error(y, probs, n_bins=BINS)))]
    try:
        from netcal.metrics import ECE

        metric = ECE(bins=BINS)
        rows.append(("netcal ECE(bins=15).measure", *best_time(lambda: metric.measure(p, y))))
    except Exception as exc:  # noqa: BLE001 - report why the comparison is missing
        rows.append((f"netcal unavailable ({type(exc).__name__}: {exc})", float("nan"),
                     float("nan")))
    try:
        from relplot import metrics, smECE

        rows.append(("relplot binnedECE(nbins=15)",
                     *best_time(lambda: metrics.binnedECE(p, y, nbins=BINS))))
        rows.append(("relplot smECE (smooth ECE)", *best_time(lambda: smECE(p, y))))
    except Exception as exc:  # noqa: BLE001
        rows.append((f"relplot unavailable ({type(exc).__name__}: {exc})", float("nan"),
                     float("nan")))
    ours = rows[0][2]
    print(f"# ECE on {N:,} binary rows, best of {REPEAT}; target for calaudit: <= 0.5 s")
    print(f"{'implementation':40s} {'value':>12s} {'seconds':>9s} {'x calaudit':>10s}")
    for name, value, seconds in rows:
        print(f"{name:40s} {value:12.6f} {seconds:9.4f} {seconds / ours:10.1f}")
    print("TARGET", "MET" if ours <= 0.5 else "MISSED")


if __name__ == "__main__":
    main()
