"""Poisson-binomial laws per cell: exact pmf in O(n log^2 n) and draws of cell counts.

Under consistency resampling the outcome of row ``i`` is ``o*_i ~ Bernoulli(p_i)``
independently, so the number of events in a cell (a bin of a reliability diagram or of an
ECE) is Poisson-binomial with the cell's ``p_i``. A binned statistic depends on the
outcomes only through these counts, so drawing the counts directly is the same
resampling as redrawing every row, at O(cells x B) instead of O(n x B) per test.

pmf (:func:`pmf`): the coefficients of ``prod_i (1 - p_i + p_i t)``. Rows are taken in
groups of :data:`GROUP` and each group's polynomial is built by the exact recursion
``P_j(k) = P_{j-1}(k) (1 - p_j) + P_{j-1}(k - 1) p_j`` (vectorised over groups); the groups'
polynomials are then multiplied pairwise, level by level, by batched real FFTs. Each FFT
product is exact up to a rounding error of about ``1e-16`` times the largest coefficient;
negative rounding residue is set to 0 and the pmf renormalised, so every probability is
within about ``1e-15`` (absolute) of the exact one -- below the resolution of the float64
uniforms that drive the inverse-CDF draws (``2^-53``). Checked against the exact
recursion and ``scipy.stats.binom`` in the tests.

Draws (:func:`cell_counts`): ``B`` inverse-CDF draws per cell from the pmf.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import fft

from calaudit.numerics import scratch

#: Rows per group of the exact recursion before the FFT products.
GROUP = 32


def _group_polynomials(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """(k, GROUP + 1) coefficients of each group's ``prod (1 - p + p t)`` (groups padded
    with ``p = 0``, the factor 1)."""
    pad = (-p.size) % GROUP
    groups = np.concatenate([p, np.zeros(pad)]).reshape(-1, GROUP)
    poly = np.zeros((groups.shape[0], GROUP + 1))
    poly[:, 0] = 1.0
    for j in range(GROUP):
        q = groups[:, j:j + 1]
        poly[:, 1:j + 2] = poly[:, 1:j + 2] * (1.0 - q) + poly[:, :j + 1] * q
        poly[:, :1] *= 1.0 - q
    return poly


def pmf(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """``P(S = k)``, ``k = 0..n``, for ``S`` a sum of independent Bernoulli(``p_i``)."""
    p = np.clip(np.asarray(p, dtype=np.float64).ravel(), 0.0, 1.0)
    if p.size == 0:
        return np.ones(1)
    poly = _group_polynomials(p)
    while poly.shape[0] > 1:
        if poly.shape[0] % 2:
            identity = np.zeros((1, poly.shape[1]))
            identity[0, 0] = 1.0
            poly = np.vstack([poly, identity])
        length = 2 * poly.shape[1] - 1
        size = fft.next_fast_len(length, real=True)
        spectra = fft.rfft(poly, size, axis=1)
        poly = fft.irfft(spectra[0::2] * spectra[1::2], size, axis=1)[:, :length]
        np.maximum(poly, 0.0, out=poly)
    out = poly[0, :p.size + 1]
    return out / out.sum()


def sample(distribution: NDArray[np.float64], u: NDArray[np.float64]) -> NDArray[np.int64]:
    """Inverse-CDF draws ``k`` with ``F(k - 1) <= u F(n) < F(k)`` for uniforms ``u``."""
    cdf = np.cumsum(distribution)
    k = np.searchsorted(cdf, u * cdf[-1], side="right")
    return np.minimum(k, distribution.size - 1).astype(np.int64)


def cell_counts(p: NDArray[np.float64], cells: NDArray[np.intp], n_cells: int,
                n_resamples: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """(n_cells, B) event counts ``sum_{i in c} o*_i`` with ``o*_i ~ Bernoulli(p_i)``,
    drawn exactly from each cell's Poisson-binomial law (empty cells: 0). The uniforms
    are one ``rng.random((n_cells, B))`` in cell order. Each cell's ``p_i`` are taken in
    row order (:func:`cell_members`), so a pmf does not depend on how rows are read."""
    members = cell_members(p, cells, n_cells)
    u = rng.random((n_cells, n_resamples))
    out = np.zeros((n_cells, n_resamples), dtype=np.int64)
    for c in range(n_cells):
        if members[c].size:
            out[c] = sample(pmf(members[c]), u[c])
    return out


#: Rows per block when sorting rows into their cells.
MEMBER_ROWS = 65_536


def cell_members(p: NDArray[np.float64], cells: NDArray[np.intp], n_cells: int
                 ) -> list[NDArray[np.float64]]:
    """The ``p_i`` of every cell in row order: the values of
    ``p[np.argsort(cells, kind="stable")]`` cut at the cell boundaries, sorted a block of
    rows at a time into one working array (:mod:`calaudit.numerics.scratch`; 8 bytes a
    row, no n-row permutation), one view per cell."""
    counts = np.zeros(n_cells, dtype=np.int64)
    for start in range(0, cells.shape[0], MEMBER_ROWS):
        counts += np.bincount(cells[start:start + MEMBER_ROWS], minlength=n_cells)
    ends = np.cumsum(counts)
    at = ends - counts
    first = at.copy()
    out = scratch.empty(cells.shape[0], np.float64)
    for start in range(0, cells.shape[0], MEMBER_ROWS):
        block = cells[start:start + MEMBER_ROWS]
        order = np.argsort(block, kind="stable")
        values = np.asarray(p[start:start + MEMBER_ROWS], dtype=np.float64)[order]
        bounds = np.concatenate([[0], np.cumsum(np.bincount(block, minlength=n_cells))])
        for c in np.flatnonzero(np.diff(bounds)):
            size = bounds[c + 1] - bounds[c]
            out[at[c]:at[c] + size] = values[bounds[c]:bounds[c + 1]]
            at[c] += size
    return [out[first[c]:ends[c]] for c in range(n_cells)]
