"""Poisson-binomial laws per cell: exact pmf in O(n log^2 n) and draws of cell counts.

Under consistency resampling a cell's event count is Poisson-binomial with its rows'
``p_i``; drawing the counts is the same resampling as redrawing every row, in O(cells x B).

pmf (:func:`pmf`): the coefficients of ``prod_i (1 - p_i + p_i t)``, groups of
:data:`GROUP` rows by the recursion ``P_j(k) = P_{j-1}(k) (1 - p_j) + P_{j-1}(k - 1) p_j``,
then multiplied pairwise by batched real FFTs; negative residue set to 0 and renormalised
(every probability within about 1e-15 of the exact one).

Cells of more than :data:`WINDOW_ROWS` rows (:func:`law`): chunks of :data:`CHUNK_ROWS`
rows, each chunk's pmf and the running product cut to their Bernstein windows
(:func:`window`, at most :data:`TAIL` = 2^-80 of mass outside per side), so memory is a
chunk and a window. Draws (:func:`cell_counts`): ``B`` inverse-CDF draws per cell.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import fft

from calaudit import scale
from calaudit.numerics.tabulate import distinct
from calaudit.scale import ArrayRows

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


#: Cells of more rows than this take the windowed law (:func:`windowed_pmf`).
WINDOW_ROWS = 1 << 16
#: Largest support a convolution power is computed on in one FFT (:func:`convolution_power`).
DIRECT_SUPPORT = 1 << 22
#: Rows per chunk of the windowed law.
CHUNK_ROWS = 1 << 14
#: Mass a window may leave out on each side (Bernstein's bound, :func:`window`).
TAIL = 2.0 ** -80


def window(mean: float, variance: float, rows: int) -> tuple[int, int]:
    """``[lo, hi]`` with ``P(S < lo), P(S > hi) <= TAIL`` for a sum ``S`` of ``rows``
    Bernoulli with ``sum p = mean``, ``sum p (1 - p) = variance``: Bernstein's inequality
    gives ``TAIL`` at ``t = L / 3 + sqrt(L^2 / 9 + 2 L variance)``, ``L = -log TAIL``."""
    level = -math.log(TAIL)
    t = level / 3.0 + math.sqrt(level * level / 9.0 + 2.0 * level * max(variance, 0.0))
    return max(0, math.floor(mean - t) - 1), min(rows, math.ceil(mean + t) + 1)


def _product(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """Coefficients of the product of two polynomials (one real FFT product, rounding
    residue below 0 set to 0)."""
    length = a.size + b.size - 1
    size = fft.next_fast_len(length, real=True)
    out = fft.irfft(fft.rfft(a, size) * fft.rfft(b, size), size)[:length]
    return np.maximum(out, 0.0, out=out)


class RunningLaw:
    """The law of a Poisson-binomial sum multiplied piece by piece (each piece the law of
    some of its rows, :func:`piece`), cut after each product to the Bernstein window of
    the rows so far (:func:`window`): memory of a window, not of the rows."""

    def __init__(self) -> None:
        self.offset, self.law, self.mean, self.variance, self.rows = 0, np.ones(1), 0.0, 0.0, 0

    def times(self, offset: int, law: NDArray[np.float64], mean: float, variance: float,
              rows: int) -> None:
        """Multiply by the piece ``law`` (of ``offset + k``; ``rows`` rows with ``sum p =
        mean`` and ``sum p (1 - p) = variance``)."""
        self.mean, self.variance = self.mean + mean, self.variance + variance
        self.rows += rows
        self.offset, self.law = _cut(self.offset + offset, _product(self.law, law), 1,
                                     self.mean, self.variance, self.rows)

    def result(self) -> tuple[int, NDArray[np.float64]]:
        """``(offset, P(S = offset + k))`` normalised to sum 1."""
        return self.offset, self.law / self.law.sum()


def piece(q: NDArray[np.float64]) -> tuple[int, NDArray[np.float64], float, float, int]:
    """The law of the rows ``q`` (:func:`pmf`) cut to its Bernstein window, as the
    arguments of :meth:`RunningLaw.times`."""
    q = np.clip(np.asarray(q, dtype=np.float64), 0.0, 1.0)
    mean, variance = float(q.sum()), float((q * (1.0 - q)).sum())
    lo, hi = window(mean, variance, q.size)
    return lo, pmf(q)[lo:hi + 1], mean, variance, q.size


def windowed_pmf(p: NDArray[np.float64]) -> tuple[int, NDArray[np.float64]]:
    """``(offset, w)`` with ``w[k] = P(S = offset + k)`` on the window of
    :func:`window` (normalised to sum 1), in memory of :data:`CHUNK_ROWS` rows and a
    window; ``p`` is read a chunk at a time (a view of spilled rows stays on disk)."""
    running = RunningLaw()
    for start in range(0, p.shape[0], CHUNK_ROWS):
        running.times(*piece(p[start:start + CHUNK_ROWS]))
    return running.result()


def law(p: NDArray[np.float64]) -> tuple[int, NDArray[np.float64]]:
    """``(offset, P(S = offset + k))``: :func:`pmf` (offset 0) up to :data:`WINDOW_ROWS`
    rows, :func:`windowed_pmf` above."""
    if p.shape[0] <= WINDOW_ROWS:
        return 0, pmf(p)
    return windowed_pmf(p)


def sample(distribution: NDArray[np.float64], u: NDArray[np.float64], offset: int = 0
           ) -> NDArray[np.int64]:
    """Inverse-CDF draws ``k`` with ``F(k - 1) <= u F(n) < F(k)`` for uniforms ``u``
    (``distribution[k]`` is the probability of ``offset + k``)."""
    cdf = np.cumsum(distribution)
    k = np.searchsorted(cdf, u * cdf[-1], side="right")
    return np.minimum(k, distribution.size - 1).astype(np.int64) + offset


def cell_counts(p: NDArray[np.float64], cells: NDArray[np.intp], n_cells: int,
                n_resamples: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """(n_cells, B) event counts ``sum_{i in c} o*_i``, ``o*_i ~ Bernoulli(p_i)``, from each
    cell's law (:func:`law` of its ``p_i`` in row order; empty cells 0) and the uniforms
    ``rng.random((n_cells, B))`` in cell order."""
    members = cell_members(p, cells, n_cells)
    u = rng.random((n_cells, n_resamples))
    out = np.zeros((n_cells, n_resamples), dtype=np.int64)
    for c in range(n_cells):
        if members[c].size:
            offset, distribution = law(members[c])
            out[c] = sample(distribution, u[c], offset)
    return out


#: Rows per block when sorting rows into their cells.
MEMBER_ROWS = 65_536


def cell_members(p: NDArray[np.float64], cells: NDArray[np.intp], n_cells: int
                 ) -> list[NDArray[np.float64]]:
    """The ``p_i`` of every cell in row order, one view per cell of
    ``p[np.argsort(cells, kind="stable")]`` (``p`` (n,) or (n, k)), sorted block by block."""
    counts = np.zeros(n_cells, dtype=np.int64)
    for start in range(0, cells.shape[0], MEMBER_ROWS):
        counts += np.bincount(cells[start:start + MEMBER_ROWS], minlength=n_cells)
    ends = np.cumsum(counts)
    at = ends - counts
    first = at.copy()
    out = np.empty(cells.shape[:1] + np.shape(p)[1:], np.float64)
    for start in range(0, cells.shape[0], MEMBER_ROWS):
        block = cells[start:start + MEMBER_ROWS]
        order = np.argsort(block.astype(np.int16) if n_cells <= 2**15 else block,
                           kind="stable")  # 16-bit keys: a radix sort, the same order
        values = np.asarray(p[start:start + MEMBER_ROWS], dtype=np.float64)[order]
        bounds = np.concatenate([[0], np.cumsum(np.bincount(block, minlength=n_cells))])
        for c in np.flatnonzero(np.diff(bounds)):
            size = bounds[c + 1] - bounds[c]
            out[at[c]:at[c] + size] = values[bounds[c]:bounds[c + 1]]
            at[c] += size
    return [out[first[c]:ends[c]] for c in range(n_cells)]


def convolution_power(offset: int, distribution: NDArray[np.float64], power: int,
                      mean: float, variance: float, rows: int
                      ) -> tuple[int, NDArray[np.float64]]:
    """The law of the sum of ``power`` copies of ``offset + K`` (``K`` Poisson-binomial of
    ``rows`` rows, ``sum p = mean``, ``sum p (1 - p) = variance``), cut to the Bernstein
    window of the ``power x rows`` units: the spectrum's ``power``-th power up to
    :data:`DIRECT_SUPPORT` points, above by repeated squaring, each product cut to its
    window."""
    if power == 1:
        return offset, distribution
    length = power * (distribution.size - 1) + 1
    if length > DIRECT_SUPPORT:
        return _power_by_squaring(offset, distribution, power, mean, variance, rows)
    size = fft.next_fast_len(length, real=True)
    out = fft.irfft(fft.rfft(distribution, size) ** power, size)[:length]
    np.maximum(out, 0.0, out=out)
    return _cut(power * offset, out, power, mean, variance, rows)


def _cut(start: int, law: NDArray[np.float64], copies: int, mean: float, variance: float,
         rows: int) -> tuple[int, NDArray[np.float64]]:
    """``law`` (of ``start + k``) cut to the Bernstein window of ``copies`` copies."""
    lo, hi = window(copies * mean, copies * variance, copies * rows)
    lo, hi = max(lo, start), min(hi, start + law.size - 1)
    return lo, law[lo - start:hi - start + 1]


def _power_by_squaring(offset: int, distribution: NDArray[np.float64], power: int,
                       mean: float, variance: float, rows: int
                       ) -> tuple[int, NDArray[np.float64]]:
    """:func:`convolution_power` by binary exponentiation: squares of the law for 1, 2, 4,
    ... copies and the product of those the binary digits of ``power`` select, each cut to
    its window (mass left out: at most ``2 TAIL`` per cut, about ``4 log2(power)`` cuts)."""
    result: tuple[int, NDArray[np.float64]] | None = None
    result_copies, base, base_copies, left = 0, (offset, distribution), 1, power
    while left:
        if left & 1:
            if result is None:
                result, result_copies = base, base_copies
            else:
                result_copies += base_copies
                result = _cut(result[0] + base[0], _product(result[1], base[1]),
                              result_copies, mean, variance, rows)
        left >>= 1
        if left:
            base_copies *= 2
            base = _cut(2 * base[0], _product(base[1], base[1]), base_copies, mean,
                        variance, rows)
    law = result[1]
    return result[0], law / law.sum()


def unit_law(p: NDArray[np.float64], units: NDArray[np.float64]
             ) -> tuple[int, NDArray[np.float64]]:
    """``(offset, P(S = offset + k))`` for ``S = sum_i Binomial(units_i, p_i)``: the rows
    sharing a unit count ``d`` give ``d`` copies of their Poisson-binomial sum
    (:func:`convolution_power`), the counts' laws multiplied and cut to the running
    window; the repeated rows' law in O(rows)."""
    running = RunningLaw()
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    for count in distinct(units[units > 0]):
        q = p[units == count]
        d = int(count)
        q_mean, q_variance = float(q.sum()), float((q * (1.0 - q)).sum())
        single = windowed_pmf(q) if q.size > CHUNK_ROWS else (0, pmf(q))
        lo, part = convolution_power(*single, d, q_mean, q_variance, q.size)
        running.times(lo, part, d * q_mean, d * q_variance, d * q.size)
    return running.result()


def unit_cell_counts(p: NDArray[np.float64], units: NDArray[np.float64],
                     cells: NDArray[np.intp], n_cells: int, n_resamples: int,
                     rng: np.random.Generator) -> NDArray[np.int64]:
    """(n_cells, B) event counts of the units: :func:`cell_counts` of the rows repeated
    ``units_i`` times, each cell's :func:`unit_law` one task of :mod:`calaudit.scale`."""
    members = cell_members(np.column_stack([p, units]), cells, n_cells)
    u = rng.random((n_cells, n_resamples))
    out = np.zeros((n_cells, n_resamples), dtype=np.int64)
    sizes = np.array([m.shape[0] for m in members], dtype=np.int64)
    ends = np.cumsum(sizes)
    used = [c for c in range(n_cells) if members[c][:, 1].sum() > 0]
    if not used:
        return out
    ordered = np.concatenate(members)
    source = ArrayRows({"p": ordered[:, 0], "units": ordered[:, 1]})
    with scale.resident(source) as rows:
        laws = scale.map_combine(unit_law_partial, [(int(ends[c] - sizes[c]), int(ends[c]))
                                                    for c in used], {"rows": rows}, list)
    for c, law in zip(used, laws, strict=True):
        out[c] = sample(law["law"], u[c], int(law["offset"][0]))
    return out


def unit_law_partial(start: int, stop: int, *, rows: Any) -> dict[str, NDArray]:
    """:func:`unit_law` of the rows ``[start, stop)`` (``p``, ``units``): ``offset`` (1,)
    and ``law``."""
    part = rows.read(start, stop, ["p", "units"])
    offset, law = unit_law(part["p"], part["units"])
    return {"offset": np.array([offset]), "law": law}
