"""The LCB of a dataset whose tasks read their own rows: the columns each pass multiplies
built in the tasks, the values kept on the workers.

:class:`ResidualRows` gives a range's scalar-view residual ``r`` (binary ``y - p_1``;
multi-class top-label ``1{y = argmax p} - max p``, :func:`calaudit.local.lcb.
top_label_residual`) as the columns ``[r, 1]`` of the sums ``(K r, K 1)`` or ``r^2`` of
the squared kernel's, from the range's ``y`` and ``proba``: elementwise, so the bits of
the in-memory columns. :func:`kept_lcb` runs the feature path's two passes
(:func:`calaudit.local.lcb_features.cell_matmul`) with these columns and keeps the second
one's per-row results where they were computed (:func:`calaudit.scale.kept`):
``lcb = (K r) / max(K 1, floor)`` and ``weight_sums = max(K 1, floor)``, a row source
later reductions read (``read(start, stop, ("lcb",))``). :class:`KeptBias` is the
:class:`calaudit.local.lcb.LocalBias` of those rows, its whole arrays fetched only when a
caller asks for them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.local.features import MIN_WEIGHT
from calaudit.local.lcb import top_label_residual
from calaudit.local.lcb_cells import CellKernel
from calaudit.local.lcb_features import _features, kernel_rows, mixed_sums, rows_partial
from calaudit.numerics.features import FourierFeatures
from calaudit.scale import TASK_ROWS, DerivedRows, task_ranges

#: The columns :class:`ResidualRows` gives as ``w``: ``[r, 1]`` or ``r^2``.
WIDTHS = {"sums": 2, "squares": 1}


@dataclass(frozen=True, eq=False)
class ResidualRows(DerivedRows):
    """Column ``w`` of a range (module docstring): ``[r, 1]`` (``use="sums"``) or
    ``r^2`` (``use="squares"``), built from ``source``'s ``y`` and ``proba`` once per
    task range (:data:`calaudit.scale.TASK_ROWS` rows) and sliced."""

    source: Any
    use: str = "sums"
    _built: dict[str, Any] = field(default_factory=dict, repr=False)


    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, WIDTHS[self.use])

    def residual(self, start: int, stop: int) -> NDArray[np.float64]:
        """``r`` of rows ``[start, stop)``: outcome minus prediction of the scalar view."""
        part = self.source.read(start, stop, ["y", "proba"])
        outcome, prediction = top_label_residual(part["y"], part["proba"])
        return outcome - prediction

    def read(self, start: int, stop: int, names: Any) -> dict[str, NDArray]:
        lo = start - start % TASK_ROWS
        if stop > lo + TASK_ROWS:
            raise ValueError(f"rows {start}-{stop} span two task ranges")
        if self._built.get("lo") != lo:
            r = self.residual(lo, min(lo + TASK_ROWS, self.n))
            self._built.clear()
            self._built.update(lo=lo, w=np.column_stack([r, np.ones_like(r)])
                               if self.use == "sums" else (r * r)[:, None])
        return {name: self._built[name][start - lo:stop - lo] for name in names}

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_built"] = {}
        return state


def lcb_partial(start: int, stop: int, *, kernel: Any, cell_matrix: NDArray[np.float64],
                features: FourierFeatures, mix: Any, floor: float
                ) -> dict[str, NDArray[np.float64]]:
    """The LCB of rows ``[start, stop)`` from the second pass's ``(K r, K 1)``
    (:func:`calaudit.local.lcb_features.rows_partial`): ``weight_sums = max(K 1,
    floor)`` and ``lcb = K r / weight_sums``, the bits of the in-memory division."""
    out = rows_partial(start, stop, kernel=kernel, cell_matrix=cell_matrix,
                       features=features, mix=mix)["out"]
    mass = np.maximum(out[:, 1], floor)
    return {"lcb": np.divide(out[:, 0], mass), "weight_sums": mass}


@contextlib.contextmanager
def kept_kernel_sums(kernel: CellKernel, residuals: ResidualRows, n_features: int,
                     seed: int) -> Iterator[Any]:
    """:func:`kept_lcb` with the features and floor of
    :func:`calaudit.local.lcb_features.feature_kernel_sums` (unweighted rows)."""
    with kept_lcb(kernel, residuals, _features(kernel, n_features, seed),
                  MIN_WEIGHT * 1.0) as rows:
        yield rows


@contextlib.contextmanager
def kept_lcb(kernel: CellKernel, residuals: ResidualRows, features: FourierFeatures,
             floor: float) -> Iterator[Any]:
    """The LCB and weight sums of every row kept where the tasks computed them (a row
    source with columns ``lcb`` and ``weight_sums``; module docstring), dropped when the
    block exits."""
    with scale.resident(kernel_rows(kernel)) as placed:
        mix = mixed_sums(kernel, features, residuals, placed)
        shared = {"kernel": placed, "cell_matrix": kernel.cell_matrix,
                  "features": features, "mix": mix, "floor": floor}
        with scale.kept(lcb_partial, task_ranges(residuals.n), shared) as rows:
            yield rows


def _read_partial(start: int, stop: int, *, rows: Any, names: tuple[str, ...]
                  ) -> dict[str, NDArray]:
    return rows.read(start, stop, names)


def fetch(rows: Any, names: tuple[str, ...], at: NDArray[np.intp] | None = None
          ) -> dict[str, NDArray]:
    """Columns ``names`` of a kept row source: every row (``at`` None), or the rows
    ``at`` (sorted), each task giving those in its range."""
    ranges = task_ranges(rows.n)
    if at is None:
        return scale.map_rows(_read_partial, ranges, {"rows": rows, "names": names})
    at = np.asarray(at, dtype=np.intp)
    parts = scale.map_combine(_picked_partial, ranges,
                              {"rows": rows, "names": names, "at": at}, list)
    return {name: np.concatenate([part[name] for part in parts]) for name in names}


def _picked_partial(start: int, stop: int, *, rows: Any, names: tuple[str, ...],
                    at: NDArray[np.intp]) -> dict[str, NDArray]:
    lo, hi = np.searchsorted(at, [start, stop])
    read = rows.read(start, stop, names)
    return {name: read[name][at[lo:hi] - start] for name in names}


class KeptBias:
    """:class:`calaudit.local.lcb.LocalBias` of kept rows (:func:`kept_lcb`): ``rows``
    the row source; ``values`` and ``weight_sums`` the whole arrays, fetched into this
    process when first asked for; :meth:`at` the values of a few rows."""

    def __init__(self, rows: Any) -> None:
        self.rows = rows

    @cached_property
    def values(self) -> NDArray[np.float64]:
        return fetch(self.rows, ("lcb",))["lcb"]

    @cached_property
    def weight_sums(self) -> NDArray[np.float64]:
        return fetch(self.rows, ("weight_sums",))["weight_sums"]

    def at(self, rows: NDArray[np.intp]) -> dict[str, NDArray[np.float64]]:
        """``lcb`` and ``weight_sums`` of the sorted ``rows``."""
        return fetch(self.rows, ("lcb", "weight_sums"), rows)
