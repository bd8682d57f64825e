"""Per-row random draws of one row block from that block's generator, so a row's draws
depend only on ``(seed, stream, block)``.

* Labels ``y* ~ Cat(p)``: ``u`` uniform 32-bit integers, ``T_ik = min(round(2^32 F_ik),
  2^32 - 1)`` (``F`` the cumulative probabilities); class ``k`` iff ``T_i,k-1 <= u <
  T_ik`` (each probability rounded to a multiple of ``2^-32``).
* Bootstrap counts, the multinomial ``(n; 1/n, ..., 1/n)`` factorised over the blocks:
  block totals ``~ Multinomial(n; s_1/n, ..., s_K/n)`` from one stream
  (:func:`block_totals`), then each block spreads its total uniformly over its rows
  (:func:`block_counts`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.special import bdtrc  # P(X > k) of Binomial(t, q)

from calaudit.scale import ROW_BLOCK, BlockTable, block_rng, n_blocks

#: Largest 32-bit threshold (thresholds saturate here; see the module docstring).
_TOP = 2**32 - 1


def label_thresholds(proba: NDArray[np.float64]) -> NDArray[np.uint32]:
    """``T = min(round(2^32 F), 2^32 - 1)`` (n, m - 1) of the cumulative probabilities
    ``F`` of ``proba`` ((n,) positive-class probabilities: (n, 1))."""
    p = np.asarray(proba, dtype=np.float64)
    cumulative = p[:, None] if p.ndim == 1 else np.cumsum(p, axis=1)[:, :-1]
    return _thresholds(cumulative)


def _thresholds(probabilities: NDArray[np.float64]) -> NDArray[np.uint32]:
    return np.minimum(np.rint(np.clip(probabilities, 0.0, 1.0) * 2.0**32), _TOP
                      ).astype(np.uint32)


def uniform_words(rng: np.random.Generator, rows: int, columns: int) -> NDArray[np.uint32]:
    """(rows, columns) uniform 32-bit integers (two per raw 64-bit output)."""
    size = rows * columns
    raw = rng.bit_generator.random_raw((size + 1) // 2)
    return raw.view(np.uint32)[:size].reshape(rows, columns)


def label_indicators(rng: np.random.Generator, thresholds: NDArray[np.uint32],
                     columns: int, classes: int) -> list[NDArray[np.bool_]]:
    """Indicators ``1{y*_ib = k}`` (rows, columns) of the classes ``k`` listed by
    ``classes`` semantics: ``classes == 1`` gives ``[1{y* = 1}]`` of a binary label
    (``thresholds`` (rows, 1)); else one matrix per class ``0..m-1``."""
    u = uniform_words(rng, thresholds.shape[0], columns)
    if classes == 1:
        return [u < thresholds[:, :1]]
    out, below = [], None
    for k in range(classes):
        upper = u < thresholds[:, k:k + 1] if k < classes - 1 else None
        if below is None:
            out.append(upper)
        elif upper is None:
            out.append(~below)
        else:
            out.append(upper & ~below)
        below = upper
    return out


#: Rows of uniform words drawn at a time by :func:`binary_labels_into` (even, so every
#: piece but the last is a whole number of 64-bit outputs).
LABEL_ROWS = 512


def binary_labels_into(rng: np.random.Generator, thresholds: NDArray[np.uint32],
                       out: NDArray[np.float32]) -> None:
    """``out[i, b] = 1{u_ib < T_i}`` ((rows, columns), e.g. float32): the binary labels of
    :func:`label_indicators` from the same words, :data:`LABEL_ROWS` rows at a time,
    written straight into ``out``."""
    rows, columns = out.shape
    for lo in range(0, rows, LABEL_ROWS):
        hi = min(rows, lo + LABEL_ROWS)
        np.less(uniform_words(rng, hi - lo, columns), thresholds[lo:hi, :1], out=out[lo:hi])


def block_totals(seed: int, name: str, n: int, n_resamples: int) -> NDArray[np.int64]:
    """(blocks, B) draws falling in each row block per resample: one multinomial of ``n``
    draws over the blocks (probabilities ``s_k / n``) per resample, from the stream
    ``(seed, name + ":totals", 0)``."""
    k = n_blocks(n)
    sizes = np.full(k, ROW_BLOCK, dtype=np.float64)
    sizes[-1] = n - ROW_BLOCK * (k - 1)
    rng = block_rng(seed, name + ":totals", 0)
    return rng.multinomial(n, sizes / n, size=n_resamples).T.astype(np.int64)


def totals_table(seed: int, name: str, n: int, n_resamples: int) -> BlockTable:
    """:func:`block_totals` as a table of row blocks (entry ``k``: block ``k``'s totals)."""
    return BlockTable(block_totals(seed, name, n, n_resamples), ROW_BLOCK, n)


def block_counts(rng: np.random.Generator, rows: int, totals: NDArray[np.int64]
                 ) -> NDArray[np.float32]:
    """(B, rows) counts (``.T`` for (rows, B)): resample ``b`` spreads ``totals[b]`` draws
    uniformly over the block's rows (multinomial ``(totals[b]; 1/rows, ...)``), the
    resamples' draws following each other in the block's stream."""
    b = totals.size
    total = int(totals.sum())
    if rows == ROW_BLOCK:  # 12 uniform bits per draw (ROW_BLOCK = 2^12)
        words = rng.bit_generator.random_raw((total + 3) // 4).view(np.uint16)[:total]
        cells = np.bitwise_and(words, ROW_BLOCK - 1)
    else:
        cells = rng.integers(0, rows, size=total, dtype=np.int64)
    out = np.empty((b, rows), dtype=np.float32)
    start = 0
    for j, stop in enumerate(np.cumsum(totals).tolist()):
        out[j] = np.bincount(cells[start:stop], minlength=rows)
        start = stop
    return out


#: Units per row up to which :func:`binomial_counts_into` draws a count from one word;
#: rows with more units take numpy's binomial draws.
THRESHOLD_UNITS = 64


def binomial_counts_into(rng: np.random.Generator, units: NDArray[np.int64],
                         q: NDArray[np.float64], out: NDArray[np.float32]) -> None:
    """``out[i, b] ~ Binomial(t_i, q_i)`` (``t = units``): from one word ``u_ib`` per entry,
    ``#{k < t_i : u_ib < S_ik}`` with ``S_ik = min(round(2^32 P(X_i > k)), 2^32 - 1)``
    (``t_i = 1``: :func:`binary_labels_into`'s draws), in runs of equal ``t``; a run above
    :data:`THRESHOLD_UNITS` units takes ``rng.binomial``."""
    rows, columns = out.shape
    edges = [0, *(np.flatnonzero(np.diff(units)) + 1).tolist(), rows]
    for first, last in zip(edges[:-1], edges[1:]):
        t = int(units[first]) if last > first else 0
        if t > THRESHOLD_UNITS:
            out[first:last] = rng.binomial(t, q[first:last, None], size=(last - first, columns))
            continue
        if t == 0:
            out[first:last] = 0.0
            continue
        tail = bdtrc(np.arange(t)[None, :], t, q[first:last, None])
        thresholds = _thresholds(tail)
        for lo in range(first, last, LABEL_ROWS):
            hi = min(last, lo + LABEL_ROWS)
            words = uniform_words(rng, hi - lo, columns)
            cut = thresholds[lo - first:hi - first]
            np.less(words, cut[:, :1], out=out[lo:hi])
            for k in range(1, t):
                out[lo:hi] += np.less(words, cut[:, k:k + 1])


def categorical_counts(rng: np.random.Generator, units: NDArray[np.int64],
                       law: NDArray[np.float64], columns: int):
    """``(C_i0, ..., C_i,m-1) ~ Multinomial(t_i, law_i)`` (``t = units``), one (rows, columns)
    array per class in turn: :func:`label_indicators` when ``t = 1``, else the chain
    ``C_ik ~ Binomial(t_i - sum_{l<k} C_il, law_ik / sum_{l>=k} law_il)``."""
    if np.all(units == 1):
        yield from label_indicators(rng, label_thresholds(law), columns, law.shape[1])
        return
    remaining = np.repeat(units.astype(np.int64)[:, None], columns, axis=1)
    tail = np.cumsum(law[:, ::-1], axis=1)[:, ::-1]  # sum_{l >= k} law_il
    for k in range(law.shape[1] - 1):
        share = np.divide(law[:, k], tail[:, k], out=np.zeros(law.shape[0]),
                          where=tail[:, k] > 0)
        drawn = rng.binomial(remaining, np.clip(share, 0.0, 1.0)[:, None])
        remaining -= drawn
        yield drawn
    yield remaining
