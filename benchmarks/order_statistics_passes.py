"""Benchmark: the exact quantiles a Parquet dataset's audit takes without reading its rows
into the client (``calaudit.numerics.order_statistics``): the numeric covariates' band
edges (``n_bands + 1`` levels), every panel's quantile bin edges (``n_bins - 1`` inner
levels) and Hosmer-Lemeshow's breaks (``groups + 1`` levels).

    python benchmarks/order_statistics_passes.py DATA --covariates age,region --workers 2

For each quantile set: the reductions it costs (counting passes, the gathering pass), the
open key prefixes and the bytes of one partial per pass, the wall time and this process's
CPU time (the client's; on ``--workers N`` a ``LocalCluster`` of N single-threaded
processes reads the rows), and, with ``--check``, whether the values are the bytes of
``np.quantile`` on the loaded rows (loaded after the timings).
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from calaudit import scale
from calaudit.data.planned import plan
from calaudit.metrics.row_summary import PanelScores, panel_columns
from calaudit.numerics.binning import inner_levels
from calaudit.numerics.order_statistics import column_quantiles


def quantile_sets(data, n_bands: int, n_bins: int, groups: int) -> dict:
    """``{set: (source, {column: q})}`` of the three quantile sets of an audit."""
    rows = data.rows
    bands = {rows.covariate_column(c.name): np.linspace(0.0, 1.0, n_bands + 1)
             for c in data.covariates if c.kind != "categorical"}
    panels = 1 + (1 if len(data.classes) == 2 else len(data.classes))
    bins = {f"panel:{k}": inner_levels(n_bins) for k in range(panels)}
    return {"covariate bands": (rows, bands), "quantile bins": (PanelScores(rows), bins),
            "Hosmer-Lemeshow": (rows, {"p": np.linspace(0.0, 1.0, groups + 1)})}


def run(path: str, covariates: str, workers: int, check: bool, n_bands: int, n_bins: int,
        groups: int) -> list[str]:
    lines = []
    executor = scale.ThreadExecutor() if workers == 0 else None
    cluster = None
    if workers:
        from dask.distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               memory_limit="2GB", dashboard_address=None)
        executor = scale.DaskExecutor(Client(cluster))
    found = {}
    try:
        with scale.using(executor):
            data = plan(path, covariates=covariates)
            lines.append(f"{path}: {data.n:,} rows, {len(data.rows.files.files)} files, "
                         f"{'in this process (threads)' if not workers else f'{workers} workers'}")
            for name, (source, wanted) in quantile_sets(data, n_bands, n_bins, groups).items():
                if not wanted:
                    continue
                costs: list[dict] = []
                wall, cpu = time.perf_counter(), time.process_time()
                found[name] = column_quantiles(source, wanted, costs)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                passes = ", ".join(f"{c['pass']} ({c['open']} open, "
                                   f"{c['partial_bytes'] / 2**20:.2f} MiB)" for c in costs)
                levels = sum(np.size(q) for q in wanted.values())
                lines.append(f"  {name}: {len(wanted)} column(s), {levels} levels; "
                             f"{len(costs)} reductions: {passes}; wall {wall:.2f} s, "
                             f"client CPU {cpu:.2f} s ({1e6 * cpu / data.n:.3f} us/row)")
    finally:
        if cluster is not None:
            executor.client.close()
            cluster.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines.append(f"  client peak RSS {peak:.0f} MiB (before --check)")
    if check:
        lines.extend(_check(path, covariates, found, n_bands, n_bins, groups))
    return lines


def _check(path, covariates, found, n_bands, n_bins, groups) -> list[str]:
    from calaudit.data.load import load

    data = load(path, covariates=covariates)
    expected = {"Hosmer-Lemeshow": {"p": np.quantile(data.positive_proba,
                                                     np.linspace(0.0, 1.0, groups + 1))},
                "covariate bands": {f"x:{c.name}": np.quantile(
                    c.values, np.linspace(0.0, 1.0, n_bands + 1))
                    for c in data.covariates if c.kind != "categorical"},
                "quantile bins": {f"panel:{k}": np.quantile(scores, inner_levels(n_bins))
                                  for k, (scores, _) in enumerate(
                                      panel_columns(data.y_true, data.y_proba))}}
    lines = []
    for name, values in found.items():
        same = all(values[col].tobytes() == expected[name][col].tobytes() for col in values)
        lines.append(f"  {name}: {'the bytes of np.quantile' if same else 'DIFFERENT'}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data")
    parser.add_argument("--covariates", default="age,region")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--n-bands", type=int, default=4)
    parser.add_argument("--n-bins", type=int, default=15)
    parser.add_argument("--groups", type=int, default=10)
    args = parser.parse_args()
    print("\n".join(run(args.data, args.covariates, args.workers, args.check,
                        args.n_bands, args.n_bins, args.groups)))


if __name__ == "__main__":
    main()
