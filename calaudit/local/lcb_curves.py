"""Smoothed per-group curves of the local calibration bias (:mod:`calaudit.local.lcb`).

The paper's Figure 6 smoothed per group against a numeric covariate: at grid points ``t``,
``c(t) = sum_{j in g} w_j(t) LCB_j`` (Gaussian Nadaraya-Watson, ``w`` normalised, bandwidth
by Silverman's rule). ``c(t) = sum_i a_i(t) r_i`` with ``a_i(t) = sum_{j in g} w_j(t) K_ij /
D_j`` (``D_j = sum_i K_ij``), so its HC0 standard error is ``sqrt(sum_i a_i(t)^2 r_i^2)`` and
the band ``c(t) -/+ z se(t)``; all ``a(t)`` come from one engine pass ``K @ V`` with
``V_jt = w_j(t) / D_j``. The weights are evaluated a block at a time (:class:`CurveDesign`,
:class:`CurveColumns`).

Weighted rows: a request's ``weight`` ``v_j`` gives ``w_j(t) = v_j g_j(t) / sum_g v g(t)``,
the grid and bandwidth are the weighted law's (:func:`curve_design`'s ``grid_of``), and
``se(t)^2 = sum_i m_i a_i(t)^2 r_i^2`` with the meat weights ``m``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.local.lcb import LocalBias
from calaudit.numerics.distributions import norm_ppf
from calaudit.scale import TASK_ROWS, ArrayRows, one_blas_thread, task_ranges


def silverman_bandwidth(x: NDArray[np.float64]) -> float:
    """``0.9 min(sd, IQR / 1.34) n^(-1/5)``; falls back to sd, then to 1."""
    sd = float(np.std(x, ddof=1)) if x.size > 1 else 0.0
    iqr = float(np.subtract(*np.percentile(x, [75, 25])))
    spread = min(sd, iqr / 1.34) if iqr > 0 else sd
    if spread <= 0:
        return 1.0
    return 0.9 * spread * x.size ** (-0.2)


@dataclass(frozen=True)
class CurveRequest:
    """One curve: the covariate values of the group's rows and their row indices."""

    covariate: str
    group_by: str | None
    group: str
    rows: NDArray[np.intp]
    x: NDArray[np.float64]
    #: the rows' weights (weighted audits), None: unweighted
    weight: NDArray[np.float64] | None = None

    def gaussian(self, grid: NDArray[np.float64], h: float, lo: int = 0,
                 hi: int | None = None) -> NDArray[np.float64]:
        """:func:`raw_weights` of the rows ``[lo, hi)`` of the request, times their
        weights."""
        w = raw_weights(grid, self.x[lo:hi], h)
        return w if self.weight is None else w * self.weight[lo:hi][None, :]


def curve_grid(x: NDArray[np.float64], points: int) -> tuple[NDArray[np.float64], float]:
    """Grid (``points`` values from the 2nd to the 98th percentile; one value when ``x`` is
    constant) and Silverman bandwidth of a curve."""
    low, high = np.percentile(x, [2, 98])
    if high <= low:
        low, high = float(x.min()), float(x.max())
    grid = np.linspace(low, high, points) if high > low else np.array([float(low)])
    return grid, silverman_bandwidth(x)


def raw_weights(grid: NDArray[np.float64], x: NDArray[np.float64], h: float
                ) -> NDArray[np.float64]:
    """Unnormalised Gaussian weights ``exp(-((t - x_j) / h)^2 / 2)``, shape
    ``(len(grid), len(x))`` (elementwise, so any rows or grid points give the same bits as
    the whole array)."""
    return np.exp(-0.5 * ((grid[:, None] - x[None, :]) / h) ** 2)


#: Grid points per chunk when a curve's weights are evaluated over all its rows (centres,
#: normalisers): (GRID_CHUNK, rows) floats at a time. A multiple of 4, so the chunked
#: matrix-vector products are the whole one's (OpenBLAS's dgemv_t works in groups of 4
#: columns; ``tests/test_lcb_columns.py`` checks the bytes).
GRID_CHUNK = 4


@dataclass(frozen=True)
class CurveDesign:
    """The grids, bandwidths and normalisers of a set of curve requests; the weights
    ``w_j(t)`` and the engine columns ``V_jt = w_j(t) / D_j`` are evaluated a block of rows
    (:meth:`block`) or of grid points (:meth:`centre`) at a time. ``columns``: ``V`` as an
    (n, points x requests) array when built ``dense``, else (n, 0)."""

    requests: tuple[CurveRequest, ...]
    grids: tuple[NDArray[np.float64], ...]
    bandwidths: tuple[float, ...]
    normalisers: tuple[NDArray[np.float64], ...]
    columns: NDArray[np.float64]

    @property
    def width(self) -> int:
        """Number of engine columns (grid points of every request)."""
        return sum(g.size for g in self.grids)

    def weights(self, k: int, lo: int = 0, hi: int | None = None, t0: int = 0,
                t1: int | None = None) -> NDArray[np.float64]:
        """``w_j(t)`` of request ``k`` at its rows ``req.rows[lo:hi]`` and grid points
        ``[t0, t1)``: ``exp(-((t - x_j) / h)^2 / 2)`` divided by its sum over the request's
        rows (the same bits as the slice of the whole (points, rows) array)."""
        req, grid = self.requests[k], self.grids[k]
        w = req.gaussian(grid[t0:t1], self.bandwidths[k], lo, hi)
        w /= self.normalisers[k][t0:t1, None]
        return w

    def centres(self, values: NDArray[np.float64]
                ) -> list[NDArray[np.float64]]:
        """:meth:`centre` of every request, as a reduction over the fixed row ranges
        (:func:`curve_sums`); ``values``: an array, or a row source of column ``lcb``."""
        n = values.size if isinstance(values, np.ndarray) else values.n
        sums = curve_sums(self.requests, self.grids, self.bandwidths, n,
                          normalisers=self.normalisers, values=values)
        return [sums[str(k)] for k in range(len(self.requests))]

    def centre(self, k: int, values: NDArray[np.float64]) -> NDArray[np.float64]:
        """``c(t) = sum_{j in g} w_j(t) values_j`` of request ``k`` (``values`` over all
        rows), :data:`GRID_CHUNK` grid points at a time."""
        here = values[self.requests[k].rows]
        size = self.grids[k].size
        return np.concatenate([self.weights(k, t0=t0, t1=min(size, t0 + GRID_CHUNK)) @ here
                               for t0 in range(0, size, GRID_CHUNK)])

    def block(self, lo: int, hi: int, weight_sums: NDArray[np.float64],
              dtype: type = np.float64) -> NDArray[np.float64]:
        """Rows ``[lo, hi)`` of ``V`` (zero off-group): each request's rows in the range,
        its weights divided by ``D_j``."""
        out = np.zeros((hi - lo, self.width), dtype=dtype)
        start = 0
        for k, req in enumerate(self.requests):
            a, b = np.searchsorted(req.rows, [lo, hi])
            if b > a:
                rows = req.rows[a:b]
                out[rows - lo, start:start + self.grids[k].size] = (
                    self.weights(k, a, b) / weight_sums[rows][None, :]).T
            start += self.grids[k].size
        return out


@dataclass(frozen=True)
class CurveColumns:
    """``V`` (n, points x requests) of a :class:`CurveDesign` as a read-only array-like:
    ``columns[lo:hi]`` builds those rows (:meth:`CurveDesign.block`), so a pass over row
    blocks never holds more than a block of them. On Dask it is placed as row blocks
    (:meth:`row_block`)."""

    design: CurveDesign
    weight_sums: NDArray[np.float64]
    dtype: type = np.float32

    @property
    def shape(self) -> tuple[int, int]:
        return (self.weight_sums.size, self.design.width)

    @property
    def nbytes(self) -> int:
        """Bytes of the per-row arrays held (``D_j``, the requests' rows and values)."""
        return self.weight_sums.nbytes + _requests_nbytes(self.design.requests)

    def __getitem__(self, rows: slice) -> NDArray[np.float64]:
        if not isinstance(rows, slice) or rows.step not in (None, 1):
            raise TypeError("curve columns are read by contiguous row ranges")
        lo, hi, _ = rows.indices(self.weight_sums.size)
        return self.design.block(lo, max(lo, hi), self.weight_sums, self.dtype)

    def row_block(self, lo: int, hi: int) -> CurveColumns:
        """Rows ``[lo, hi)`` as columns of ``hi - lo`` rows (read with rows counted from
        ``lo``; the same bits as ``self[lo:hi]``)."""
        design = self.design
        requests = tuple(_within(req, lo, hi, shift=lo) for req in design.requests)
        return CurveColumns(replace(design, requests=requests,
                                    columns=design.columns[lo:hi]),
                            self.weight_sums[lo:hi], self.dtype)


def _within(req: CurveRequest, lo: int, hi: int, shift: int = 0) -> CurveRequest:
    """The request's rows in ``[lo, hi)`` (numbered from ``shift``) and their values."""
    a, b = np.searchsorted(req.rows, [lo, hi])
    return replace(req, rows=req.rows[a:b] - shift if shift else req.rows[a:b],
                   x=req.x[a:b], weight=None if req.weight is None else req.weight[a:b])


def _requests_nbytes(requests: Sequence[CurveRequest]) -> int:
    return sum(req.rows.nbytes + req.x.nbytes
               + (0 if req.weight is None else req.weight.nbytes) for req in requests)


#: Rows per task of the curves' sums (a constant: the ranges depend on n only).
CURVE_ROWS = TASK_ROWS


def curve_sums(requests: Sequence[CurveRequest], grids: Sequence[NDArray[np.float64]],
               bandwidths: Sequence[float], n: int, *,
               normalisers: Sequence[NDArray[np.float64]] | None = None,
               values: NDArray[np.float64] | None = None) -> dict[str, NDArray[np.float64]]:
    """Per request ``k`` (key ``str(k)``), summed over its rows: without ``normalisers``
    the unnormalised weights ``sum_j exp(-((t - x_j) / h)^2 / 2)`` at each grid point
    (the normalisers), with them the centres ``sum_j w_j(t) values_j``. A reduction
    (:func:`curve_sums_partial` over the fixed ranges of ``n`` rows, added in range order)
    run through :mod:`calaudit.scale`, the requests placed once."""
    shared = {"grids": tuple(grids), "bandwidths": tuple(bandwidths),
              "normalisers": None if normalisers is None else tuple(normalisers),
              "values": ArrayRows({"lcb": values}) if isinstance(values, np.ndarray)
              else values}
    with scale.resident(CurveRows(tuple(requests), int(n))) as placed:
        return scale.map_sum(
            curve_sums_partial, task_ranges(n, CURVE_ROWS), {**shared, "requests": placed})


@dataclass(frozen=True)
class CurveRows:
    """The requests' rows and covariate values (``n``: the rows of the reduction) as one
    value to place on the executor; on Dask as row blocks (:meth:`row_block`,
    :meth:`joined`)."""

    requests: tuple[CurveRequest, ...]
    n: int

    @property
    def nbytes(self) -> int:
        return _requests_nbytes(self.requests)

    def row_block(self, lo: int, hi: int) -> CurveRows:
        """Each request's rows in ``[lo, hi)`` (global row numbers) and their values."""
        return CurveRows(tuple(_within(req, lo, hi) for req in self.requests), self.n)

    @staticmethod
    def joined(n: int, blocks: Sequence[Sequence[Any]]) -> CurveRows:
        """The requests' rows of consecutive blocks ``[[lo, hi, CurveRows], ...]``."""
        parts = [block[2].requests for block in blocks]
        if len(parts) == 1:
            return blocks[0][2]
        return CurveRows(tuple(
            replace(pieces[0], rows=np.concatenate([p.rows for p in pieces]),
                    x=np.concatenate([p.x for p in pieces]),
                    weight=None if pieces[0].weight is None
                    else np.concatenate([p.weight for p in pieces]))
            for pieces in zip(*parts)), n)


def curve_sums_partial(start: int, stop: int, *, requests: CurveRows,
                       grids: Sequence[NDArray[np.float64]], bandwidths: Sequence[float],
                       normalisers: Sequence[NDArray[np.float64]] | None,
                       values: Any) -> dict[str, NDArray[np.float64]]:
    """:func:`curve_sums` over the requests' rows in ``[start, stop)``: the weights of the
    range's rows summed along the rows, or divided by the normalisers and multiplied by
    the rows' values (a row source, column ``lcb``) :data:`GRID_CHUNK` grid points at a
    time, on one BLAS thread."""
    out = {}
    here = None if values is None else values.read(start, stop, ["lcb"])["lcb"]
    with one_blas_thread():
        for k, (req, grid, h) in enumerate(zip(requests.requests, grids, bandwidths,
                                                 strict=True)):
            a, b = np.searchsorted(req.rows, [start, stop])
            w = req.gaussian(grid, h, a, b)
            if normalisers is None:
                out[str(k)] = w.sum(axis=1)
                continue
            w /= normalisers[k][:, None]
            mine = here[req.rows[a:b] - start]
            out[str(k)] = np.concatenate([w[t0:t0 + GRID_CHUNK] @ mine
                                          for t0 in range(0, grid.size, GRID_CHUNK)])
    return out


def curve_design(requests: list[CurveRequest], weight_sums: NDArray[np.float64] | int,
                 points: int, dense: bool = True, dtype: type = np.float64,
                 grid_of: Any = None) -> CurveDesign:
    """Grids, bandwidths and normalisers of every request; with ``dense`` also ``V_jt =
    w_j(t) / D_j`` (zero off-group) as an (n, points x requests) array of ``dtype``
    (``dense=False`` leaves ``columns`` empty, (n, 0): callers read ``V`` through
    :class:`CurveColumns` or use the per-request weights). ``grid_of(request, points)``:
    the grid and bandwidth of a request (default :func:`curve_grid` of its values).
    Without ``dense``, ``weight_sums`` may be the number of rows only."""
    n = weight_sums if isinstance(weight_sums, int) else weight_sums.size
    grids, bandwidths = [], []
    for req in requests:
        grid, h = curve_grid(req.x, points) if grid_of is None else grid_of(req, points)
        grids.append(grid)
        bandwidths.append(h)
    sums = curve_sums(requests, grids, bandwidths, n) if requests else {}
    norms = [np.maximum(sums[str(k)], np.finfo(float).tiny) for k in range(len(requests))]
    design = CurveDesign(tuple(requests), tuple(grids), tuple(bandwidths), tuple(norms),
                         np.zeros((n, 0), dtype=dtype))
    if dense and requests:
        design = replace(design, columns=design.block(0, n, weight_sums, dtype))
    return design


def curves_from_products(design: CurveDesign, products: NDArray[np.float64] | None,
                         bias: LocalBias, r: NDArray[np.float64], level: float,
                         scale: float = 1.0,
                         se_all: NDArray[np.float64] | None = None,
                         meat: NDArray[np.float64] | None = None,
                         size_of: Any = None) -> list[dict]:
    """``local.lcb.curves`` from ``A = K @ V`` (see module docstring): one entry per
    ``(covariate, group_by)`` with the groups' grid, curve, standard error and band
    (``se_all``: the standard errors ``sqrt(sum_i A_it^2 r_i^2)`` when already computed,
    in which case ``products`` is not used).

    ``products`` and ``r`` may be restricted to a uniform random subsample ``S`` of the
    rows ``i``, with ``scale = n / |S|``: ``se(t)^2 = scale * sum_{i in S} a_i(t)^2 r_i^2``
    is then an unbiased estimate of the full sum. Weighted rows: ``meat`` (the meat
    weights of the rows of ``r``) and ``size_of(request)``, a curve's ``n``."""
    if se_all is None:
        r2 = r * r if meat is None else meat * r * r
        se_all = np.sqrt(scale * ((products * products).T @ r2))
    z = float(norm_ppf(0.5 + level / 2.0))
    curves: dict[tuple[str, str | None], dict] = {}
    start = 0
    kept = getattr(bias, "rows", None)  # the values where they were computed
    centres = design.centres(bias.values if kept is None else kept) \
        if design.requests else []
    for k, (req, grid, h) in enumerate(zip(design.requests, design.grids,
                                           design.bandwidths, strict=True)):
        centre = centres[k]
        se = se_all[start:start + grid.size]
        start += grid.size
        entry = curves.setdefault((req.covariate, req.group_by), {
            "covariate": req.covariate, "group_by": req.group_by, "groups": []})
        entry["groups"].append({
            "group": req.group, "n": int(req.rows.size) if size_of is None else size_of(req),
            "bandwidth": h,
            "x": grid, "lcb": centre, "se": se,
            "low": centre - z * se, "high": centre + z * se})
    return list(curves.values())
