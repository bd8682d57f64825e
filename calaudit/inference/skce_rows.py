"""The SKCE battery's inputs from a row source whose tasks read their own rows (columns
``y``, ``proba``, ``residuals``): :class:`RowInputs`, used by
:func:`calaudit.inference.skce_battery.skce_battery_of_rows` above ``max_quadratic_n``
rows. The feature pass of two classes reads :class:`LabelRows` (``x = p_1``, ``p_1``, the
observed labels, ``sqrt(2) (y - p_1)``, built per range), of more classes
:class:`~calaudit.inference.skce_class_rows.ClassRows` (``x = p``, ``p``, ``e_y``,
``e_y - p``); the subsamples are gathered by one reduction each
(:func:`gather`); the linear estimators' terms are summarised by the tasks that read their
rows (:func:`terms_partial`); the bootstrap's per-block draw totals are drawn by one task
where the partials run (:func:`calaudit.scale.made`).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.inference.feature_passes import (
    _bound_of_norm,
    label_partial,
    shared_labels,
)
from calaudit.inference.feature_tests import (
    APPROXIMATION_ROWS,
    FeaturePass,
    SkceFeatures,
    approximation_error,
    finish_pass,
)
from calaudit.inference.skce_class_rows import ClassRows
from calaudit.inference.skce_tests import LinearTerms, combine_terms, range_terms
from calaudit.metrics.row_bootstrap import Draws
from calaudit.metrics.row_summary import where_rows_are
from calaudit.metrics.skce import KERNEL_DISTANCES, MEDIAN_SUBSAMPLE, block_terms, choose_kernel
from calaudit.numerics.block_draws import totals_table
from calaudit.numerics.features import FourierFeatures, grid_exponent
from calaudit.scale import ROW_BLOCK, TASK_ROWS, DerivedRows, blocks, stream_seed, task_ranges

SCALE = math.sqrt(2.0)


@dataclass(frozen=True)
class LabelRows(DerivedRows):
    """The feature pass's columns of a binary source (``y``, ``proba``), built per range:
    ``x`` and ``proba`` (``p_1``), ``observed`` (``y``, uint8), ``residuals``
    (``sqrt(2) (y - p_1)``), each (n, 1)."""

    source: Any

    def read(self, start: int, stop: int, names: Any) -> dict[str, NDArray]:
        part = self.source.read(start, stop, ["y", "proba", "residuals"])
        full = part["proba"]
        columns = {"x": full[:, 1:2].copy(), "proba": full[:, 1].copy()[:, None],
                   "observed": (part["y"] == 1).astype(np.uint8)[:, None],
                   "residuals": (SCALE * part["residuals"][:, 1]).reshape(-1, 1)}
        return {name: columns[name] for name in names}


def pick_partial(start: int, stop: int, *, rows: Any, pick: NDArray[np.int64],
                 names: dict[str, int]) -> dict[str, NDArray]:
    """The rows ``pick`` (sorted) in ``[start, stop)``, in their places of arrays of
    ``len(pick)`` rows and ``names[name]`` columns (zeros elsewhere)."""
    lo, hi = np.searchsorted(pick, [start, stop])
    read = rows.read(start, stop, list(names)) if hi > lo else {}
    out = {}
    for name, width in names.items():
        values = np.zeros((pick.size, width))
        if read:
            values[lo:hi] = np.asarray(read[name]).reshape(stop - start, width)[
                pick[lo:hi] - start]
        out[name] = values
    return out


def gather(rows: Any, pick: NDArray[np.int64], names: dict[str, int]) -> dict[str, NDArray]:
    """The rows ``pick`` (sorted) of the columns ``names`` (name: columns) of ``rows``."""
    return scale.map_exact_sum(pick_partial, task_ranges(rows.n),
                               {"rows": rows, "pick": np.asarray(pick, np.int64), "names": names})


def max_partial(start: int, stop: int, *, rows: Any, tasks: int, root: float = 0.0,
                slack: float = 0.0) -> dict[str, NDArray]:
    """In the range's own slot (``start // TASK_ROWS``): ``max |r|`` of the residual
    column, or with ``root`` ``max_i sum_k (root |r_ik| + slack)^2``."""
    r = rows.read(start, stop, ["residuals"])["residuals"]
    out = np.zeros(tasks)
    if root:
        value = root * np.abs(r) + slack
        out[start // TASK_ROWS] = np.max(np.sum(value * value, axis=1))
    else:
        out[start // TASK_ROWS] = np.max(np.abs(r))
    return {"max": out}


def _largest(rows: Any, **shared: float) -> float:
    ranges = task_ranges(rows.n)
    return float(np.max(scale.map_exact_sum(max_partial, ranges,
                                            {"rows": rows, "tasks": len(ranges), **shared})["max"]))


def terms_partial(start: int, stop: int, *, rows: Any, kernel: Any, blocksize: int
                  ) -> dict[str, NDArray]:
    """The summary (:func:`calaudit.inference.skce_tests.range_terms`) of ``block_terms``
    of the blocks ``[start, stop)`` of ``blocksize`` rows."""
    part = rows.read(start * blocksize, stop * blocksize, ["proba", "residuals"])
    return range_terms(block_terms(kernel, part["proba"], part["residuals"], blocksize))


def terms_of_rows(rows: Any, kernel: Any, blocksize: int) -> LinearTerms:
    """The :class:`~calaudit.inference.skce_tests.LinearTerms` of ``block_terms`` of every
    complete block of the source."""
    count, per_range = rows.n // blocksize, max(1, TASK_ROWS // blocksize)
    if count == 0:
        return LinearTerms.of(np.empty(0), per_range)
    shared = {"rows": rows, "kernel": kernel, "blocksize": blocksize}
    return scale.map_combine(terms_partial, task_ranges(count, per_range), shared,
                             combine_terms)


def replicate_terms_partial(start: int, stop: int, *, rows: Any, kernel: Any,
                            blocksize: int, draws: Draws, totals: Any) -> dict[str, NDArray]:
    """``sum_t C[t, b] h_t`` over the terms ``h_t`` (``block_terms``) of the blocks
    ``[start, stop)`` of ``blocksize`` rows, ``C`` the bootstrap counts of the terms
    (``draws``: term ``t`` in the counts' row block ``t // ROW_BLOCK``)."""
    part = rows.read(start * blocksize, stop * blocksize, ["proba", "residuals"])
    terms = block_terms(kernel, part["proba"], part["residuals"], blocksize)
    out = np.zeros(draws.n_resamples)
    for block, lo, hi in blocks(start, stop):
        counts = draws.counts(totals, block, hi - lo)
        out += np.add.reduce(terms[lo - start:hi - start, None] * counts, axis=0)
    return {"sums": out}


def linear_replicates(rows: Any, kernel: Any, blocksize: int, draws: Draws
                      ) -> NDArray[np.float64]:
    """Bootstrap replicates of a linear estimator (the mean of the ``T`` complete blocks'
    terms, Efron & Tibshirani 1993, ch. 6): the terms resampled, ``sum_t C[t, b] h_t /
    T`` with block-factorised multinomial counts of the terms drawn by the tasks that
    compute them (each task: whole row blocks of terms, about ``TASK_ROWS`` rows)."""
    count = rows.n // blocksize
    per_range = max(ROW_BLOCK, TASK_ROWS // blocksize // ROW_BLOCK * ROW_BLOCK)
    with where_rows_are(rows), scale.made(totals_table, draws.seed, draws.stream, count,
                                          draws.n_resamples) as totals:
        sums = scale.map_sum(replicate_terms_partial, task_ranges(count, per_range), {
            "rows": rows, "kernel": kernel, "blocksize": blocksize, "draws": draws,
            "totals": totals})["sums"]
    return sums / count


@dataclass(frozen=True)
class RowFeatures:
    """:class:`calaudit.inference.feature_tests.SkceFeatures` of a row source: ``rows``
    the feature pass's columns, ``scale`` the residuals' factor (``sqrt(2)`` for two
    classes' scalar residual, else 1), ``labels`` the label matrices per draw (1 for two
    classes, else ``m``)."""

    features: FourierFeatures
    rows: LabelRows | ClassRows
    scale: float = SCALE
    labels: int = 1

    def one_pass(self, consistency_rng: np.random.Generator | None,
                 boot_rng: np.random.Generator | None, n_resamples: int) -> FeaturePass:
        """:func:`calaudit.inference.feature_tests.feature_skce_pass` on the source."""
        n, features = self.rows.n, self.features
        b_cons = n_resamples if consistency_rng is not None else 0
        seed = stream_seed(consistency_rng) if consistency_rng is not None else 0
        shared = shared_labels(features, self.labels, seed, "skce_consistency", b_cons)
        with contextlib.ExitStack() as stack:
            if boot_rng is not None and n_resamples:
                shared.update(self.bootstrap_shared(stream_seed(boot_rng), n_resamples,
                                                    stack))
            total = scale.map_exact_sum(label_partial, task_ranges(n),
                                        {**shared, "rows": self.rows})
        return finish_pass(features, total, n, self.scale, b_cons)

    def bootstrap_shared(self, seed: int, n_boot: int, stack: contextlib.ExitStack
                         ) -> dict[str, Any]:
        """:func:`calaudit.inference.feature_passes.bootstrap_shared` of the source (totals
        drawn where the partials run, held until ``stack`` exits)."""
        features, n = self.features, self.rows.n
        totals = stack.enter_context(scale.made(totals_table, seed, "skce_bootstrap", n,
                                                n_boot))
        top = math.sqrt(1.0 / features.frequencies.shape[1]) + 2.0 ** -(features.grid + 1)
        grid = grid_exponent(top * max(_largest(self.rows), 1e-12) * (1 + 1e-9))
        slack = math.sqrt(features.n_features) * 2.0 ** -(grid + 1)
        h_bound = _largest(self.rows, root=math.sqrt(_bound_of_norm(features)),
                           slack=slack) * (1 + 1e-9) + 1e-300
        return {"boot_totals": totals, "boot_seed": int(seed),
                "boot_stream": "skce_bootstrap", "psi_grid": grid, "h_bound": h_bound}

    def approximation(self, kernel: Any, rng: np.random.Generator) -> dict:
        """:meth:`SkceFeatures.approximation` of the source, the subsample gathered."""
        n = self.rows.n
        pick = (np.arange(n) if n <= APPROXIMATION_ROWS
                else np.sort(rng.choice(n, APPROXIMATION_ROWS, replace=False)))
        width = self.features.frequencies.shape[0]
        got = gather(self.rows, pick, {"x": width, "residuals": self.labels})
        proba = (got["x"] if self.labels > 1
                 else gather(self.rows.source, pick, {"proba": 2})["proba"])
        residuals = got["residuals"][:, 0] if self.labels == 1 else got["residuals"]
        return approximation_error(self.features, got["x"], residuals, kernel.on(proba))


@dataclass(frozen=True)
class RowInputs:
    """:class:`calaudit.inference.skce_battery.ArrayInputs` of a row source of ``classes``
    classes above ``max_quadratic_n`` rows, made in the tasks that read the rows."""

    source: Any
    classes: int = 2

    @property
    def n(self) -> int:
        return self.source.n

    @property
    def m(self) -> int:
        return self.classes

    def kernel_choice(self, kernel: str, bandwidth: float | None, max_quadratic_n: int,
                      rng: np.random.Generator) -> Any:
        """``choose_kernel``'s choice, the median heuristic on its subsample gathered."""
        if bandwidth is not None:
            return choose_kernel(np.zeros((1, self.m)), kernel, bandwidth)
        size = min(MEDIAN_SUBSAMPLE, max_quadratic_n)
        pick = np.sort(rng.choice(self.n, size, replace=False))
        choice = choose_kernel(gather(self.source, pick, {"proba": self.m})["proba"], kernel,
                               None, exact_max_n=size)
        return replace(choice, source="median_subsample") \
            if choice.source == "median" else choice

    def features(self, choice: Any, method: Any) -> RowFeatures:
        """The features of :meth:`SkceFeatures.build` (two classes: the kernel on ``p_1``,
        :data:`SkceFeatures.BINARY`; more: on ``p``) over the source's columns."""
        distance = KERNEL_DISTANCES[choice.name]
        if self.m > 2:
            return RowFeatures(FourierFeatures.draw(
                distance, choice.gamma, self.m, method.n_features, method.frequency_seed),
                ClassRows(self.source), 1.0, self.m)
        distance, factor = SkceFeatures.BINARY[distance]
        return RowFeatures(FourierFeatures.draw(
            distance, factor * choice.gamma, 1, method.n_features, method.frequency_seed),
            LabelRows(self.source))

    def terms(self, kernel: Any, blocksize: int) -> LinearTerms:
        return terms_of_rows(self.source, kernel, blocksize)

    def replicates(self, kernel: Any, blocksize: int, draws: Draws) -> NDArray[np.float64]:
        """:func:`linear_replicates` of the source."""
        return linear_replicates(self.source, kernel, blocksize, draws)
