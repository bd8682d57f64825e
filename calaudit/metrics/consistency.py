"""Consistency bands of a reliability diagram (Bröcker & Smith 2007).

Under the hypothesis that the model is calibrated, the outcome of row ``i`` is
``o*_i ~ Bernoulli(s_i)`` where ``s_i`` is its score (binary: the positive-class
probability; top-label: the confidence; one-vs-rest: the class probability). This is the
same law as redrawing the label ``y*_i ~ Cat(p_i)`` from the predicted probability vector
and recomputing the outcome (Widmann, Lindsten & Zachariah 2019, sec. 4, "consistency
resampling"). For every non-empty bin ``b`` the resampled observed rate is
``acc*_b = n_b^{-1} sum_{i in b} o*_i``; the band is its central ``level`` interval over
``B`` resamples. An observed rate outside the band is unusual for a calibrated model
(pointwise, per bin: no correction for looking at many bins). The events per bin are
drawn from their exact Poisson-binomial law (:mod:`calaudit.numerics.poisson_binomial`;
above 65,536 rows a bin's law is built in chunks on a window leaving out at most 2^-80 of
mass per side, so its memory does not grow with the bin's rows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit.metrics.row_laws import draw_events
from calaudit.numerics.binning import Strategy, bin_index
from calaudit.numerics.poisson_binomial import cell_counts


@dataclass(frozen=True)
class ConsistencyBand:
    """Per-bin central interval of the observed rate of a calibrated model.

    Bins are the non-empty bins of :func:`calaudit.metrics.reliability.reliability_bins`
    with the same ``n_bins`` and ``strategy``, in the same (increasing) order.
    """

    level: float
    n_resamples: int
    low: NDArray[np.float64]
    high: NDArray[np.float64]

    def to_dict(self) -> dict[str, object]:
        return {"level": self.level, "n_resamples": self.n_resamples,
                "low": self.low.tolist(), "high": self.high.tolist()}


def resampled_bin_rates(
    scores: NDArray[np.float64],
    bin_index: NDArray[np.intp],
    n_resamples: int,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Observed rates of every non-empty bin under ``B`` label redraws, shape (bins, B).

    The events of a bin are a sum of independent Bernoulli(``s_i``) over its rows, so
    they are drawn directly from that Poisson-binomial law
    (:func:`calaudit.numerics.poisson_binomial.cell_counts`): the same resampling as
    redrawing every outcome, in O(bins x B) after one pmf per bin.
    """
    # np.unique(bin_index, return_inverse=True, return_counts=True) by counting (bins are
    # small non-negative integers): no sorted copies of the n indices
    every = np.bincount(bin_index)
    present = np.flatnonzero(every)
    rank = np.cumsum(every > 0) - 1
    counts = every[present]
    cells = bin_index if present.size == every.size else rank[bin_index]
    events = cell_counts(scores, cells, present.size, n_resamples, rng)
    return events / counts[:, None].astype(np.float64)


def consistency_band(
    scores: NDArray[np.float64],
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    n_resamples: int = 1000,
    level: float = 0.95,
    rng: np.random.Generator,
) -> ConsistencyBand:
    """The ``level`` consistency band of each non-empty bin.

    ``low_b`` and ``high_b`` are the ``(1 - level) / 2`` and ``(1 + level) / 2``
    quantiles (``np.quantile``, linear interpolation) of ``acc*_b`` over ``n_resamples``
    redraws of the outcomes from the scores.

    Examples
    --------
    >>> import numpy as np
    >>> band = consistency_band(np.full(200, 0.3), n_bins=5, n_resamples=500,
    ...                         rng=np.random.default_rng(0))
    >>> bool(band.low[0] < 0.3 < band.high[0])
    True
    """
    index, _ = bin_index(scores, n_bins, strategy)  # the reliability bins' own binning
    rates = resampled_bin_rates(scores, index, n_resamples, rng)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(rates, [tail, 1.0 - tail], axis=1)
    return ConsistencyBand(level=level, n_resamples=n_resamples, low=low, high=high)


def band_from_laws(laws: list, counts: NDArray[np.float64], n_resamples: int, level: float,
                   rng: np.random.Generator) -> ConsistencyBand:
    """:func:`consistency_band` from each bin's law of events (``(offset, pmf)``, ``None``
    for an empty bin; :func:`calaudit.metrics.row_laws.cell_laws`) and row counts: the
    uniforms ``rng.random((non-empty bins, B))`` in bin order, as
    :func:`resampled_bin_rates` draws them."""
    present = np.flatnonzero(counts > 0)
    events = draw_events([laws[c] for c in present], rng.random((present.size, n_resamples)))
    rates = events / counts[present][:, None]
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(rates, [tail, 1.0 - tail], axis=1)
    return ConsistencyBand(level=level, n_resamples=n_resamples, low=low, high=high)
