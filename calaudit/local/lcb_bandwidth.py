"""Bandwidths of the LCB estimate, chosen by leave-one-out cross-validation.

LCB (paper eq. 7) is the Nadaraya-Watson regression ``m(j) = sum_i K_ij r_i / sum_i K_ij``
of ``r = y - p`` with the product kernel ``K_ij = exp(-|p_i - p_j|^2 / (2 s_p^2) - sum_c
|x_ic - x_jc|^2 / (2 s_c^2))`` (one bandwidth per covariate ``c``). The KLCE test keeps its
median-heuristic bandwidths, which over-smooth the estimate across groups.

Least-squares cross-validation (Hardle & Marron 1985):
``m_{-j} = (sum_i K_ij r_i - K_jj r_j) / (sum_i K_ij - K_jj)`` (``K_jj = 1``) and
``CV = mean_j (r_j - m_{-j})^2``. Rows whose kernel mass without themselves is below
``1e-12`` are predicted by the mean residual of the other rows. Ties go to the smoother fit.
:func:`select_bandwidths` searches seeded subsamples: stage 1 on ``max_rows`` rows (a common
grid, then coordinate descent per covariate), stage 2 on ``REFINE_FACTOR * max_rows`` rows
among the best few combinations and the separated/pooled switch of each categorical
covariate not ``fixed`` by the audit stage.

Weighted rows (docs/weights.md): ``u_j = w_j / t_j`` (``t_j`` the row's units),
``m_{-j} = (sum_i K_ij w_i r_i - u_j r_j) / (sum_i K_ij w_i - u_j)`` and
``CV = sum_j w_j (r_j - m_{-j})^2 / sum_j w_j``.

Grids (``docs/local-calibration.md``) are absolute, the covariates being on unit scales:
:data:`COV_GRID`, :data:`CAT_GRID` (separated or pooled), :data:`PROB_GRID`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.local.kernel import GaussianProductGram, product_gram
from calaudit.numerics.pairwise import kernel_forms_and_matmul

#: Bandwidths ``s_p`` of the prediction kernel tried by the cross-validation.
PROB_GRID = (0.05, 0.1, 0.2, 0.4, 1.0)
#: Bandwidths ``s_x`` of a numeric covariate (z-scored).
COV_GRID = (0.15, 0.25, 0.4, 0.6, 1.0, 2.0)
#: Bandwidths of a categorical covariate (one-hot, categories at distance 1): separate the
#: categories (another category weighs 3e-4) or pool them (10: weight 0.995). Values in
#: between, which shrink groups towards the rest, are not offered.
CAT_GRID = (0.25, 10.0)
DEFAULT_MAX_ROWS = 2000
#: Stage 2 of the selection uses this many times more rows.
REFINE_FACTOR = 4
_TINY = 1e-12


def kernel_sums(prob_features: NDArray[np.float64], prob_bandwidth: float,
                cov_features: NDArray[np.float64], column_bandwidths: NDArray[np.float64],
                r: NDArray[np.float64], w: NDArray[np.float64] | None = None
                ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(K r, K 1)`` of the Gaussian product kernel with bandwidth ``s_p`` on the
    prediction and ``column_bandwidths[k]`` on encoded covariate column ``k``; with row
    weights ``w``, ``(K (w r), K w)``. ``K`` includes its diagonal (``K_jj = 1``)."""
    gram = estimation_gram(prob_features, prob_bandwidth, cov_features, column_bandwidths)
    _, out = kernel_forms_and_matmul(gram, np.zeros((r.shape[0], 0)),
                                     np.column_stack([r, np.ones_like(r)]) if w is None
                                     else np.column_stack([w * r, w]))
    return out[:, 0], out[:, 1]


def estimation_gram(prob_features: NDArray[np.float64], prob_bandwidth: float,
                    cov_features: NDArray[np.float64],
                    column_bandwidths: NDArray[np.float64]) -> GaussianProductGram:
    """``exp(-|p - p'|^2 / (2 s_p^2) - sum_k (x_k - x'_k)^2 / (2 s_k^2))``."""
    return product_gram(prob_features, 0.5 / prob_bandwidth ** 2,
                        cov_features / np.asarray(column_bandwidths)[None, :], 0.5)


@dataclass(frozen=True)
class EstimationRows:
    """:func:`estimation_gram`'s scaled rows, never stored whole: ``column(j)`` (all rows)
    or, for the columns ``which``, ``[rows]`` times ``factor``, the same bits as the
    Gram's; ``cov_features`` is an array or an :class:`calaudit.local.encoding.EncodedRows`."""

    prob_features: NDArray[np.float64]
    prob_bandwidth: float
    cov_features: Any
    column_bandwidths: NDArray[np.float64]
    which: tuple[int, ...] = ()
    factor: float | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return (self.prob_features.shape[0], len(self.which))

    @property
    def width(self) -> int:
        """Columns of the whole scaled rows."""
        return self._p.shape[1] + len(self.column_bandwidths)

    @property
    def _p(self) -> NDArray[np.float64]:
        p = self.prob_features
        return p[:, None] if p.ndim == 1 else p

    def select(self, which: Sequence[int]) -> EstimationRows:
        return replace(self, which=tuple(int(j) for j in which))

    def scaled(self, factor: float) -> EstimationRows:
        return replace(self, factor=factor)

    def _scale(self, j: int, p: NDArray[np.float64], x: Any) -> NDArray[np.float64]:
        if j < p.shape[1]:
            values = math.sqrt(0.5 / self.prob_bandwidth ** 2) * np.asarray(p[:, j], np.float64)
        else:
            k = j - p.shape[1]
            values = math.sqrt(0.5) * (np.asarray(x(k), dtype=np.float64)
                                       / np.asarray(self.column_bandwidths, np.float64)[k])
        return values if self.factor is None else self.factor * values

    def column(self, j: int) -> NDArray[np.float64]:
        cov = self.cov_features
        return self._scale(j, self._p, cov.column if hasattr(cov, "column")
                           else lambda k: cov[:, k])

    def __getitem__(self, rows: Any) -> NDArray[np.float64]:
        p, x = self._p[rows], np.asarray(self.cov_features[rows], dtype=np.float64)
        x = x[:, None] if x.ndim == 1 else x
        out = np.empty((p.shape[0], len(self.which)))
        for k, j in enumerate(self.which):
            out[:, k] = self._scale(j, p, lambda c: x[:, c])
        return out


def loo_fit(weighted: NDArray[np.float64], mass: NDArray[np.float64],
            r: NDArray[np.float64], w: NDArray[np.float64] | None = None,
            u: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """Leave-one-out Nadaraya-Watson fits ``(Kr_j - r_j) / (K1_j - 1)``; isolated rows get
    the mean residual of the other rows. Weighted (row weights ``w``, left-out unit
    weights ``u``): ``(K(wr)_j - u_j r_j) / (Kw_j - u_j)``, the weighted mean of the
    others."""
    if w is not None:
        num, den = weighted - u * r, mass - u
        rest = float(w.sum()) - u
        others = np.divide(float(np.dot(w, r)) - u * r, rest, out=np.zeros_like(r),
                           where=rest > _TINY)
    else:
        num, den = weighted - r, mass - 1.0
        others = (r.sum() - r) / max(r.size - 1, 1)
    ok = den > _TINY
    return np.where(ok, num / np.where(ok, den, 1.0), others)


@dataclass(frozen=True)
class BandwidthSelection:
    """The grid, the CV path and the chosen bandwidths (``local.lcb.bandwidth_selection``).

    ``cov_bandwidths`` maps each covariate to its bandwidth; ``path`` lists every
    evaluated combination with its CV score, in the order evaluated.
    """

    prob_bandwidth: float
    cov_bandwidths: dict[str, float]
    prob_grid: tuple[float, ...]
    cov_grid: tuple[float, ...]
    path: tuple[dict, ...]
    rows_used: int
    source: str = "loo_cv"
    refine_rows: int = 0

    def column_bandwidths(self, blocks: Sequence[slice], names: Sequence[str]
                          ) -> NDArray[np.float64]:
        return _columns(blocks, [self.cov_bandwidths[c] for c in names])

    def to_dict(self) -> dict:
        return {
            "method": ("leave-one-out cross-validation of the Nadaraya-Watson fit of r = y - p: "
                       "common grid, then coordinate descent per covariate"
                       if self.source == "loo_cv" else "given by the user"),
            "criterion": "mean_j (r_j - m_{-j})^2, m_{-j} = (sum_i K_ij r_i - r_j) / "
                         "(sum_i K_ij - 1)",
            "prob_bandwidth": self.prob_bandwidth, "cov_bandwidths": dict(self.cov_bandwidths),
            "prob_grid": list(self.prob_grid), "cov_grid": list(self.cov_grid),
            "cv_curve": list(self.path), "rows_used": self.rows_used,
            "refine_rows": self.refine_rows, "source": self.source}


def _columns(blocks: Sequence[slice], values: Sequence[float]) -> NDArray[np.float64]:
    """Per-column bandwidths from per-covariate ones."""
    width = max(b.stop for b in blocks)
    out = np.empty(width)
    for block, value in zip(blocks, values, strict=True):
        out[block] = value
    return out


class _Search:
    """CV scores of bandwidth combinations on the CV rows, memoised."""

    def __init__(self, prob, cov, r, blocks, names, stage: int = 1, weights=None):
        self.prob, self.cov, self.r, self.stage = prob, cov, r, stage
        self.w, self.u = (None, None) if weights is None else weights
        self.blocks, self.names = blocks, names
        self.scores: dict[tuple, float] = {}
        self.path: list[dict] = []

    def score(self, sp: float, sx: tuple[float, ...]) -> float:
        key = (sp, sx)
        if key not in self.scores:
            weighted, mass = kernel_sums(self.prob, sp, self.cov, _columns(self.blocks, sx),
                                         self.r, self.w)
            squares = (self.r - loo_fit(weighted, mass, self.r, self.w, self.u)) ** 2
            value = (float(np.mean(squares)) if self.w is None
                     else float(np.dot(self.w, squares) / self.w.sum()))
            self.scores[key] = value
            self.path.append({"prob_bandwidth": sp,
                              "cov_bandwidths": dict(zip(self.names, sx, strict=True)),
                              "score": value, "stage": self.stage})
        return self.scores[key]


def _better(a: tuple[float, float, tuple], b: tuple[float, float, tuple]) -> bool:
    """Lower score wins; a tie (within rounding) goes to the smoother (larger) bandwidths."""
    if a[0] < b[0] * (1.0 - 1e-12):
        return True
    return a[0] <= b[0] * (1.0 + 1e-12) and (sum(a[2]), a[1]) > (sum(b[2]), b[1])


def _snap(value: float, grid: Sequence[float]) -> float:
    """``value`` if it is in ``grid``, else the smallest grid value above it (or the
    largest)."""
    if value in grid:
        return value
    above = [g for g in grid if g > value]
    return min(above) if above else max(grid)


def _descend(search: _Search, best: tuple, prob_grid: Sequence[float],
             grids: Sequence[Sequence[float]], rounds: int) -> tuple:
    """Coordinate descent from ``best``: each covariate's bandwidth over its grid with the
    others fixed, then ``s_p``; at most ``rounds`` rounds, stopping when nothing changes."""
    for _ in range(rounds):
        start = best
        for c, grid in enumerate(grids):
            for value in grid:
                sx = best[2][:c] + (value,) + best[2][c + 1:]
                cand = (search.score(best[1], sx), best[1], sx)
                if _better(cand, best):
                    best = cand
        for sp in prob_grid:
            cand = (search.score(sp, best[2]), sp, best[2])
            if _better(cand, best):
                best = cand
        if best == start:
            break
    return best


def _toggles(best: tuple, kinds: Sequence[str]) -> list[tuple]:
    """The best pair with one categorical covariate switched between pooled and separated."""
    out = []
    for c, kind in enumerate(kinds):
        if kind == "categorical":
            value = CAT_GRID[0] if best[2][c] == CAT_GRID[-1] else CAT_GRID[-1]
            out.append((best[1], best[2][:c] + (value,) + best[2][c + 1:]))
    return out


def _rows(n: int, size: int, rng: np.random.Generator) -> NDArray[np.intp]:
    return np.arange(n) if n <= size else np.sort(rng.choice(n, size=size, replace=False))


def select_bandwidths(prob_features: NDArray[np.float64], cov_features: NDArray[np.float64],
                      r: NDArray[np.float64], rng: np.random.Generator,
                      blocks: Sequence[slice], names: Sequence[str],
                      kinds: Sequence[str] | None = None, *,
                      fixed: dict[str, float] | None = None,
                      max_rows: int = DEFAULT_MAX_ROWS,
                      prob_grid: tuple[float, ...] = PROB_GRID,
                      cov_grid: tuple[float, ...] = COV_GRID,
                      rounds: int = 2, refine_factor: int = REFINE_FACTOR,
                      weights: Any = None, take: Any = None) -> BandwidthSelection:
    """LOO-CV in two stages (see the module docstring).

    ``fixed`` maps covariates to a bandwidth decided elsewhere. Stage 1: the best
    ``(s_p, s_x)`` with one ``s_x`` for every covariate (snapped to each kind's grid) over
    ``prob_grid x cov_grid``, then ``rounds`` of coordinate descent. Stage 2 (skipped when
    stage 1 used all rows, or no categorical covariate is left to the CV): the 3 best
    combinations of stage 1, each also with every categorical covariate switched between
    pooled and separated, then one round of coordinate descent from the best.

    ``weights``: the rows' :class:`calaudit.local.weighted_lcb.LcbWeights` (the weighted
    CV of the module docstring; ``rows_used`` and ``refine_rows`` count units for
    frequency weights). ``take(rows)``: the three arrays' ``rows`` (sorted) when they
    are not held here (a dataset read by its tasks).
    """
    n, k = r.shape[0], len(names)
    kinds = list(kinds or ["numeric"] * k)
    fixed = fixed or {}
    grids = [(fixed[name],) if name in fixed
             else cov_grid if kind != "categorical" or len(cov_grid) == 1 else CAT_GRID
             for name, kind in zip(names, kinds, strict=True)]
    kinds = ["fixed" if name in fixed else kind for name, kind in zip(names, kinds,
                                                                        strict=True)]
    def part(rows: NDArray[np.intp]) -> Any:
        return None if weights is None else (weights.w[rows], weights.u[rows])

    def count(rows: NDArray[np.intp]) -> int:
        return int(rows.size) if weights is None else weights.count(rows)

    def picked(rows: NDArray[np.intp]) -> tuple[Any, ...]:
        return (prob_features[rows], cov_features[rows], r[rows]) if take is None \
            else take(rows)

    rows = _rows(n, max_rows, rng)
    search = _Search(*picked(rows), blocks, names, weights=part(rows))
    best = None
    for sp in prob_grid:
        for value in cov_grid:
            sx = tuple(_snap(value, grid) for grid in grids)
            cand = (search.score(sp, sx), sp, sx)
            if best is None or _better(cand, best):
                best = cand
    best = _descend(search, best, prob_grid, grids, rounds)
    used, stage2 = count(rows), 0
    if rows.size < n and refine_factor > 1 and "categorical" in kinds:
        ranked = sorted(search.scores.items(), key=lambda item: item[1])
        top = [(score, key[0], key[1]) for key, score in ranked[:3]]
        candidates = list(dict.fromkeys(
            [(sp, sx) for _, sp, sx in top]
            + ([t for c in top for t in _toggles(c, kinds)] if len(cov_grid) > 1 else [])))
        rows2 = _rows(n, refine_factor * max_rows, rng)
        refine = _Search(*picked(rows2), blocks, names, stage=2, weights=part(rows2))
        best = None
        for sp, sx in candidates:
            cand = (refine.score(sp, sx), sp, sx)
            if best is None or _better(cand, best):
                best = cand
        best = _descend(refine, best, prob_grid, grids, 1)
        search.path.extend(refine.path)
        used, stage2 = count(rows), count(rows2)
    return BandwidthSelection(float(best[1]), dict(zip(names, map(float, best[2]), strict=True)),
                              tuple(prob_grid), tuple(cov_grid), tuple(search.path),
                              used, refine_rows=stage2)
