"""The SKCE battery's exact path on a binary row source whose tasks read their own rows
(up to ``skce.max_quadratic_n`` rows): :class:`PairInputs`.

The in-memory path (:class:`calaudit.inference.skce_battery.ArrayInputs`) holds ``p`` and
the residuals and cuts the pairs' blocks from them. Here each piece is computed where the
rows are, with the in-memory bits:

* the median heuristic over the full ``n x n`` matrix: one task reads every row and runs
  :func:`calaudit.metrics.skce.choose_kernel` (a worker holds the rows, not the client);
* ``H 1`` and the bootstrap's count forms ``C^T H C`` (Widmann et al. 2019, eq. 6; the
  Arcones-Gine bootstrap, app. G): every pair of row blocks is a task that reads its two
  blocks and builds ``H_IJ = kappa(p_I, p_J) <r_I, r_J>`` there
  (:func:`calaudit.numerics.pair_rows.forms_and_matmul_of_rows`; without a bootstrap the
  tile walk of ``kernel_matmul``, :func:`~calaudit.numerics.pair_rows.matmul_of_rows`);
* the bootstrap counts ``C`` (n x B per batch): drawn by one task where the partials run
  (:func:`calaudit.scale.made`, from a copy of the stream: Dask draws them again if that
  worker is lost), each pair task taking its blocks' rows; the count forms' sums over rows
  (``C^T diag H``, ``C^T H 1``, ...) by one task holding ``C``;
* ``diag H`` by the tasks that read each range.

* the consistency test (labels redrawn from ``p``): each batch of redrawn residuals made by
  one task (:func:`redraw_batch`, from a copy of the stream), the passes over ``K`` by pair
  tasks reading ``p``, the precision of the passes and the columns' masses by one task
  each, the near replicates recomputed in float64 by pair tasks too.

What the client holds: ``H 1`` and ``diag H`` (8 bytes a row each, folded in pair order as
in memory) and the forms (B floats a batch).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.inference.consistency import (
    CONSISTENCY_GEMM_DTYPE,
    ResamplingTest,
    SkceRedraws,
    redraw_columns,
)
from calaudit.inference.skce_rows import RowInputs
from calaudit.inference.skce_tests import BOOTSTRAP_GEMM_DTYPE, CountForms
from calaudit.metrics.skce import QuadraticTerms, choose_kernel
from calaudit.numerics.grams import ResidualGram, cached
from calaudit.numerics.kernels import StationaryKernel
from calaudit.numerics.pair_rows import (
    block_columns,
    dense,
    forms_and_matmul_of_rows,
    matmul_of_rows,
)
from calaudit.numerics.resampling import (
    batch_sizes,
    bootstrap_counts,
    column_mass,
    near_columns,
)
from calaudit.scale import task_ranges


@dataclass(frozen=True)
class ResidualBlocks:
    """A pair pass's recipe (:mod:`calaudit.numerics.pair_rows`): the rows' Gram ``H``
    (``ResidualGram`` of ``kernel`` on ``proba`` and the residuals), ``Z`` the rows of
    ``counts`` (none without), ``W`` a column of ones (``ones``)."""

    kernel: StationaryKernel
    ones: bool = False
    names = ("proba", "residuals")
    cached = True  # as residual_gram: a few rows' H held as one matrix

    def block(self, read: dict[str, NDArray], start: int, stop: int,
              counts: NDArray | None = None) -> tuple[Any, NDArray, NDArray | None]:
        size = stop - start
        gram = ResidualGram(self.kernel.on(read["proba"]), read["residuals"])
        z = np.zeros((size, 0)) if counts is None else counts[start:stop]
        return gram, z, np.ones((size, 1)) if self.ones else None


def batch_counts(rng: np.random.Generator, n: int, sizes: tuple[int, ...], batch: int
                 ) -> NDArray[np.float64]:
    """The bootstrap counts of batch ``batch`` (``bootstrap_counts`` of a copy of ``rng``,
    the batches before it drawn and dropped): the in-memory draws' bits."""
    draw = copy.deepcopy(rng)
    for size in sizes[:batch]:
        bootstrap_counts(draw, n, size)
    return bootstrap_counts(draw, n, sizes[batch])


def count_partial(start: int, stop: int, *, counts: NDArray[np.float64],
                  diagonal: NDArray[np.float64], row_sums: NDArray[np.float64]
                  ) -> dict[str, NDArray]:
    """The count forms' sums over the rows of one batch (the task holding ``counts``):
    ``C^T diag H``, ``C^T H 1``, ``(C^2)^T diag H`` and the column sums of ``C^2``."""
    squared = counts * counts
    return {"diagonal": counts.T @ diagonal, "linear": counts.T @ row_sums,
            "squared": squared.T @ diagonal, "ties": squared.sum(axis=0)}


def diagonal_partial(start: int, stop: int, *, rows: Any, kernel: StationaryKernel
                     ) -> dict[str, NDArray]:
    """``H_ii`` of the rows ``[start, stop)`` (of every row, from their dense ``H``, when
    the in-memory pass holds it: :func:`calaudit.numerics.pair_rows.dense`)."""
    recipe = ResidualBlocks(kernel)
    whole = dense(recipe, rows.n)
    _, diagonal = block_columns(rows, recipe, 0 if whole else start, rows.n if whole else stop,
                                np.float64, np.float64, {}, dense=whole)
    return {"diagonal": diagonal}


def median_partial(start: int, stop: int, *, rows: Any, kernel: str, exact_max_n: int
                   ) -> dict[str, Any]:
    """:func:`choose_kernel`'s median heuristic over every row (one task reads them)."""
    proba = rows.read(start, stop, ["proba"])["proba"]
    return {"choice": choose_kernel(proba, kernel, None, exact_max_n=exact_max_n)}


@dataclass(frozen=True)
class KernelBlocks:
    """The consistency test's recipe: the rows' Gram ``K`` of ``kernel`` on ``proba``,
    ``Z`` the rows of the redrawn residuals ``z`` (its columns ``pick``)."""

    kernel: StationaryKernel
    names = ("proba",)
    cached = True  # as the in-memory test's cached(kernel.on(p))

    def block(self, read: dict[str, NDArray], start: int, stop: int, z: NDArray,
              pick: NDArray | None = None) -> tuple[Any, NDArray, None]:
        rows = z[start:stop]
        return (self.kernel.on(read["proba"]),
                rows if pick is None else np.take(rows, pick, axis=-1), None)


def redraw_batch(rows: Any, rng: np.random.Generator, sizes: tuple[int, ...], batch: int
                 ) -> NDArray[np.float64]:
    """The redrawn residuals of batch ``batch`` (:func:`redraw_columns` of a copy of
    ``rng``, the batches before it drawn and dropped) from every row's ``p``: the in-memory
    draws' bits."""
    proba, draw = rows.read(0, rows.n, ["proba"])["proba"], copy.deepcopy(rng)
    for size in sizes[:batch]:
        redraw_columns(proba, draw, size)
    return redraw_columns(proba, draw, sizes[batch])


def precision_partial(start: int, stop: int, *, rows: Any, kernel: StationaryKernel,
                      plan: SkceRedraws, dtype: str) -> dict[str, Any]:
    """:meth:`SkceRedraws.precision` of the in-memory Gram (one task reads every row)."""
    proba = rows.read(start, stop, ["proba"])["proba"]
    chosen = plan.precision(cached(kernel.on(proba)), np.dtype(dtype).type, proba)
    return {"dtype": np.dtype(chosen).name}


def mass_partial(start: int, stop: int, *, z: NDArray[np.float64]) -> dict[str, NDArray]:
    """:func:`column_mass` of a batch of redraws (the task holding them)."""
    return {"mass": column_mass(z)}


def _only(parts: Any) -> Any:
    return next(iter(parts))


@dataclass(frozen=True)
class PairInputs(RowInputs):
    """:class:`RowInputs` of a binary source of at most ``skce.max_quadratic_n`` rows, with
    the exact path's pieces computed by the tasks that read the rows (module docstring)."""

    def kernel_choice(self, kernel: str, bandwidth: float | None, max_quadratic_n: int,
                      rng: np.random.Generator) -> Any:
        if bandwidth is not None or self.n > max_quadratic_n:
            return super().kernel_choice(kernel, bandwidth, max_quadratic_n, rng)
        return scale.map_combine(median_partial, [(0, self.n)], {
            "rows": self.source, "kernel": kernel, "exact_max_n": max_quadratic_n},
            _only)["choice"]

    def consistency(self, kernel: StationaryKernel, observed: float,
                    rng: np.random.Generator, n_resamples: int) -> ResamplingTest:
        """:func:`~calaudit.inference.consistency.skce_consistency_test` with the redraws
        made by a task where the partials run and the pair tasks reading their rows."""
        n, recipe = self.n, KernelBlocks(kernel)
        plan = SkceRedraws(n, 2, observed, n_resamples)
        dtype = np.dtype(scale.map_combine(precision_partial, [(0, n)], {
            "rows": self.source, "kernel": kernel, "plan": plan,
            "dtype": np.dtype(CONSISTENCY_GEMM_DTYPE).name}, _only)["dtype"]).type
        sizes, done = tuple(plan.sizes()), []

        def batch(q: int) -> NDArray[np.float64]:
            with scale.made(redraw_batch, self.source, rng, sizes, len(done)) as z:
                done.append(q)
                forms, _ = forms_and_matmul_of_rows(self.source, recipe, inputs={"z": z},
                                                    dtype=dtype)
                if dtype != np.float64:
                    mass = scale.map_combine(mass_partial, [(0, n)], {"z": z}, _only)["mass"]
                    near = near_columns(forms, mass, observed / plan.scale,
                                        plan.factor(dtype), plan.tie / plan.scale)
                    if near.size:
                        forms[near] = forms_and_matmul_of_rows(
                            self.source, recipe, inputs={"z": z, "pick": near})[0]
            return forms * plan.scale

        return plan.run(batch)

    def diagonal(self, kernel: StationaryKernel) -> NDArray[np.float64]:
        ranges = [(0, self.n)] if dense(ResidualBlocks(kernel), self.n) \
            else task_ranges(self.n)
        return scale.map_rows(diagonal_partial, ranges,
                              {"rows": self.source, "kernel": kernel})["diagonal"]

    def quadratic(self, kernel: StationaryKernel, n_resamples: int | None,
                  rng: np.random.Generator | None
                  ) -> tuple[QuadraticTerms, CountForms | None]:
        """The quadratic terms and (``n_resamples``) the bootstrap's count forms, as
        :meth:`ArrayInputs.quadratic <calaudit.inference.skce_battery.ArrayInputs.
        quadratic>` computes them."""
        n, diagonal = self.n, self.diagonal(kernel)
        if n_resamples is None:
            row_sums = matmul_of_rows(self.source, ResidualBlocks(kernel, ones=True))
            return QuadraticTerms(row_sums[:, 0], diagonal), None
        sizes = tuple(batch_sizes(n_resamples, n))
        terms, parts = None, []
        for batch in range(len(sizes)):
            with scale.made(batch_counts, rng, n, sizes, batch) as counts:
                quadratic, products = forms_and_matmul_of_rows(
                    self.source, ResidualBlocks(kernel, ones=terms is None),
                    inputs={"counts": counts}, exclude_diagonal=False,
                    dtype=BOOTSTRAP_GEMM_DTYPE,
                    matmul_dtype=np.float64 if terms is None else None)
                if terms is None:
                    terms = QuadraticTerms(products[:, 0], diagonal)
                sums = scale.map_combine(count_partial, [(0, n)], {
                    "counts": counts, "diagonal": terms.diagonal,
                    "row_sums": terms.row_sums}, _only)
            parts.append(CountForms(quadratic, sums["diagonal"], sums["linear"],
                                    sums["squared"], sums["ties"], n))
        return terms, CountForms(*(np.concatenate([getattr(p, f) for p in parts])
                                   for f in ("quadratic", "diagonal", "linear", "squared",
                                             "ties")), n=n)


__all__ = ["KernelBlocks", "PairInputs", "ResidualBlocks", "batch_counts", "count_partial",
           "redraw_batch"]
