"""Consistency bands of a reliability diagram (Bröcker & Smith 2007).

Under calibration the outcome of row ``i`` is ``o*_i ~ Bernoulli(s_i)``, ``s_i`` its score
(the law of redrawing ``y*_i ~ Cat(p_i)``; Widmann, Lindsten & Zachariah 2019, sec. 4).
For every non-empty bin the resampled rate is ``acc*_b = n_b^{-1} sum_{i in b} o*_i``; the
band is its central ``level`` interval over ``B`` resamples (pointwise, per bin). The
events per bin are drawn from their exact Poisson-binomial law
(:mod:`calaudit.numerics.poisson_binomial`).
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
    """Per-bin central interval of the observed rate of a calibrated model (the non-empty
    bins of :func:`calaudit.metrics.reliability.reliability_bins`, in order)."""

    level: float
    n_resamples: int
    low: NDArray[np.float64]
    high: NDArray[np.float64]

    def to_dict(self) -> dict[str, object]:
        return {"level": self.level, "n_resamples": self.n_resamples,
                "low": self.low.tolist(), "high": self.high.tolist()}


def resampled_bin_rates(scores: NDArray[np.float64], bin_index: NDArray[np.intp], n_resamples: int,
                        rng: np.random.Generator) -> NDArray[np.float64]:
    """Observed rates (bins, B) of every non-empty bin under ``B`` label redraws."""
    # np.unique(bin_index, return_inverse=True, return_counts=True) by counting (bins are
    # small non-negative integers): no sorted copies of the n indices
    every = np.bincount(bin_index)
    present = np.flatnonzero(every)
    rank = np.cumsum(every > 0) - 1
    counts = every[present]
    cells = bin_index if present.size == every.size else rank[bin_index]
    events = cell_counts(scores, cells, present.size, n_resamples, rng)
    return events / counts[:, None].astype(np.float64)


def consistency_band(scores: NDArray[np.float64], *, n_bins: int = 15,
                     strategy: Strategy = "uniform", n_resamples: int = 1000, level: float = 0.95,
                     rng: np.random.Generator) -> ConsistencyBand:
    """The ``level`` consistency band of each non-empty bin: the ``(1 - level) / 2`` and
    ``(1 + level) / 2`` quantiles of ``acc*_b`` over ``n_resamples`` outcome redraws.

    >>> import numpy as np
    >>> band = consistency_band(np.full(200, 0.3), n_bins=5, n_resamples=500,
    ...                         rng=np.random.default_rng(0))
    >>> bool(band.low[0] < 0.3 < band.high[0])
    True
    """
    index, _ = bin_index(scores, n_bins, strategy)  # the reliability bins' own binning
    rates = resampled_bin_rates(scores, index, n_resamples, rng)
    return band_of_rates(rates, n_resamples, level)


def band_of_rates(rates: NDArray[np.float64], n_resamples: int, level: float
                  ) -> ConsistencyBand:
    """The central ``level`` interval of each bin's resampled rates (bins, B)."""
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(rates, [tail, 1.0 - tail], axis=1)
    return ConsistencyBand(level=level, n_resamples=n_resamples, low=low, high=high)


def band_from_laws(laws: list, counts: NDArray[np.float64], n_resamples: int, level: float,
                   rng: np.random.Generator) -> ConsistencyBand:
    """:func:`consistency_band` from each bin's law of events (``(offset, pmf)``, ``None``
    when empty; :func:`calaudit.metrics.row_laws.cell_laws`) and row counts."""
    present = np.flatnonzero(counts > 0)
    events = draw_events([laws[c] for c in present], rng.random((present.size, n_resamples)))
    return band_of_rates(events / counts[present][:, None], n_resamples, level)
