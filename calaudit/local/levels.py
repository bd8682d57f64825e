"""A covariate cut into the group table's levels: the categories of a categorical
covariate, ``n_bands`` equal-mass quantile bands of a numeric one (edges at the
``k / n_bands`` quantiles, linear interpolation, duplicates merged; band ``b`` is
``(e_b, e_{b+1}]``, the first ``[e_0, e_1]``, labelled ``[21, 34]``, ``(34, 48]`` ...).
Any range of rows gets its codes from the edges alone (:func:`band_codes`), so on rows read
by their tasks the edges come from exact order-statistics reductions
(:func:`data_levels`) and the per-row codes are made only when a stage reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.local.encoding import CovariateLike
from calaudit.numerics.binning import weighted_quantiles
from calaudit.numerics.order_statistics import column_quantiles


def _fmt(value: float) -> str:
    """4 significant digits; whole numbers below 10^7 without an exponent (27900, not
    2.79e+04)."""
    text = f"{value:.4g}"
    if "e" in text and abs(value) < 1e7:
        return f"{round(value):d}"
    return text


class _LazyCodes:
    """:attr:`Levels.codes`: the codes given, else made when first read."""

    def __get__(self, levels: Any, owner: Any = None) -> NDArray[np.int32]:
        if levels is None:  # no default: the codes (or None) are always given
            raise AttributeError("codes")
        if levels.__dict__.get("_codes") is None:
            levels.__dict__["_codes"] = levels.made_codes()
        return levels.__dict__["_codes"]

    def __set__(self, levels: Any, codes: NDArray[np.int32] | None) -> None:
        levels.__dict__["_codes"] = codes


@dataclass(frozen=True)
class Levels:
    """A covariate cut into levels: per-row codes (int32), the level labels and, for a
    numeric covariate, the bands' sorted unique edges (:func:`band_codes` gives any
    rows' codes from them; ``None`` for categories, whose codes are the covariate's).
    Codes given as ``None`` (:func:`data_levels` of rows read by tasks) are made from
    ``covariate``'s values when first read."""

    name: str
    codes: NDArray[np.int32] | None = _LazyCodes()  # type: ignore[assignment]
    labels: tuple[str, ...]
    edges: NDArray[np.float64] | None = None
    covariate: Any = field(default=None, repr=False, compare=False)

    def made_codes(self) -> NDArray[np.int32]:
        """The codes from the covariate's values (:func:`band_codes` of a numeric one)."""
        if self.edges is None:
            return np.asarray(self.covariate.values, dtype=np.int32)
        return band_codes(np.asarray(self.covariate.values, dtype=np.float64), self.edges)


def quantile_bands(values: NDArray[np.float64], n_bands: int) -> tuple[NDArray[np.int32],
                                                                       tuple[str, ...]]:
    """Equal-mass bands: edges at the ``k / n_bands`` quantiles (linear interpolation),
    duplicates merged; band ``b`` is ``(e_b, e_{b+1}]``, the first ``[e_0, e_1]``."""
    x = np.asarray(values, dtype=np.float64)
    return edge_bands(x, quantile_edges(x, n_bands))


def quantile_edges(x: NDArray[np.float64], n_bands: int) -> NDArray[np.float64]:
    """The sorted unique edges of :func:`quantile_bands`."""
    return np.unique(np.quantile(x, np.linspace(0.0, 1.0, n_bands + 1)))


def band_codes(x: NDArray[np.float64], edges: NDArray[np.float64]) -> NDArray[np.int32]:
    """The band of each of ``x`` between sorted unique ``edges`` (:func:`edge_bands`'s
    codes, without the labels): row by row, so any range of rows gives its own codes."""
    if edges.size == 1:
        return np.zeros(x.size, np.int32)
    return np.searchsorted(edges[1:-1], x, side="left").astype(np.int32)


def edge_bands(x: NDArray[np.float64], edges: NDArray[np.float64]
               ) -> tuple[NDArray[np.int32], tuple[str, ...]]:
    """Codes and labels of the bands between sorted unique ``edges`` (as
    :func:`quantile_bands`)."""
    return band_codes(x, edges), band_labels(edges)


def band_labels(edges: NDArray[np.float64]) -> tuple[str, ...]:
    """The labels of the bands between sorted unique ``edges``: ``[e_0, e_1]``, then
    ``(e_b, e_{b+1}]``; one edge: ``[e_0, e_0]``."""
    if edges.size == 1:
        return (f"[{_fmt(edges[0])}, {_fmt(edges[0])}]",)
    return tuple(("[" if b == 0 else "(") + f"{_fmt(edges[b])}, {_fmt(edges[b + 1])}]"
                 for b in range(edges.size - 1))


def covariate_levels(cov: CovariateLike, n_bands: int,
                     weights: NDArray[np.float64] | None = None, frequency: bool = False
                     ) -> Levels:
    """Categories of a categorical covariate, quantile bands of a numeric one; with the
    rows' ``weights``, bands between the weighted quantiles
    (:func:`calaudit.numerics.binning.weighted_quantiles`; whole numbers: ``frequency``)."""
    if cov.kind == "categorical":
        return Levels(cov.name, np.asarray(cov.values, dtype=np.int32), tuple(cov.categories))
    x = np.asarray(cov.values, dtype=np.float64)
    edges = quantile_edges(x, n_bands) if weights is None else np.unique(weighted_quantiles(
        x, weights, np.linspace(0.0, 1.0, n_bands + 1), frequency))
    codes, labels = edge_bands(x, edges)
    return Levels(cov.name, codes, labels, edges)


def data_levels(data: Any, n_bands: int, weights: NDArray[np.float64] | None = None,
                frequency: bool = False) -> list[Levels]:
    """:func:`covariate_levels` of every covariate of ``data`` (of the law of the rows'
    ``weights``, held here); of rows read by their tasks (``data.rows``), the numeric ones'
    edges from exact order-statistics reductions (the bytes of ``np.quantile``), the codes
    made only when read (:class:`Levels`)."""
    rows = getattr(data, "rows", None)
    if weights is not None or not getattr(rows, "reads_own_rows", False):
        return [covariate_levels(c, n_bands, weights, frequency) for c in data.covariates]
    probabilities = np.linspace(0.0, 1.0, n_bands + 1)
    numeric = {rows.covariate_column(c.name): probabilities for c in data.covariates
               if c.kind != "categorical"}
    found = column_quantiles(rows, numeric) if numeric else {}
    levels = []
    for c in data.covariates:
        if c.kind == "categorical":
            levels.append(Levels(c.name, None, tuple(c.categories), None, c))
            continue
        edges = np.unique(found[rows.covariate_column(c.name)])
        levels.append(Levels(c.name, None, band_labels(edges), edges, c))
    return levels


def level_reads(data: Any, levels: Sequence[Levels]
                ) -> tuple[tuple[str, ...], tuple[NDArray[np.float64] | None, ...]]:
    """For a data object whose rows are read by their tasks: each covariate's column in
    its source and the band edges its level codes come from (None: the column holds the
    category codes), in the data's order."""
    covariates = tuple(data.covariates)
    return (tuple(data.rows.covariate_column(c.name) for c in covariates),
            tuple(None if c.kind == "categorical" else lv.edges
                  for c, lv in zip(covariates, levels, strict=True)))
