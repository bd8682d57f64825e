"""Where row reductions run.

A row reduction is ``partial(start, stop, **shared) -> dict[str, ndarray]`` summed over
the fixed task ranges of :func:`calaudit.numerics.row_blocks.task_ranges`, in range order
(the shared contract of ``calaudit.numerics.row_blocks``). An *executor* runs it:

- ``SerialExecutor`` (``calaudit.numerics.row_blocks``): in this process, the default;
- :class:`DaskExecutor`: on a Dask cluster, in-memory row sources and row-blocked values
  placed as row blocks, each on one worker (:mod:`calaudit.execution.shards`), the rest
  of ``shared`` (small values) scattered once to every worker, one task per range, the
  partials folded in range order on the client, so the result is the same bytes as the
  serial executor's; ``keep`` / ``release`` place a value (a row source,
  :mod:`calaudit.numerics.row_sources`) on the workers once for several
  reductions (an iterative fit); ``map_rows`` runs a per-row map the same way (each
  task returns its range's rows, concatenated in range order);
- :func:`open_executor`: the executor chosen by the ``[dask]`` settings (``--dask
  ADDRESS``, ``--workers N``), closed (client and local cluster) when the block exits,
  also on errors and Ctrl-C.

Dask is optional (the ``calaudit[dask]`` extra): nothing here imports it until a cluster
is asked for.
"""

from __future__ import annotations

from calaudit.execution.cluster import open_executor
from calaudit.execution.dask_executor import DaskExecutor, fold_in_order

__all__ = ["DaskExecutor", "fold_in_order", "open_executor"]
