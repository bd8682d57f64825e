"""Binned expected and maximum calibration error.

``ECE = sum_b (n_b / n) |acc_b - conf_b|`` and ``MCE = max_b |acc_b - conf_b|`` over the
non-empty bins (Naeini et al. 2015; Guo et al. 2017, sec. 2). Bins are right-closed with 0
in the first bin (:mod:`calaudit.numerics.binning`); 15 equal-width bins by default.

Notions of "score" and "outcome":

* ``binary``: the positive-class probability ``p_i`` against ``y_i`` in {0, 1};
* ``top-label``: the confidence ``max_k p_ik`` against ``1{argmax_k p_ik = y_i}``
  (ties in the argmax go to the first class, as ``numpy.argmax``).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import NDArray

from calaudit.metrics.binned import BinnedOutcomes, ece_from_sums, mce_from_sums
from calaudit.metrics.inputs import accepts_1d
from calaudit.metrics.reliability import ReliabilityBins, bins_table
from calaudit.numerics.binning import Strategy

Notion = Literal["binary", "top-label"]


def scores_and_outcomes(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], notion: Notion
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The score and 0/1 outcome of each row under a calibration ``notion``.

    ``y_proba`` is (n, m) with class ``k`` in column ``k``; ``y_true`` holds class indices.
    """
    if notion == "binary":
        if y_proba.shape[1] != 2:
            raise ValueError("the binary notion needs exactly two classes")
        return y_proba[:, 1], indicator(y_true, 1)
    if notion == "top-label":
        predicted = np.argmax(y_proba, axis=1)
        confidence = y_proba[np.arange(y_proba.shape[0]), predicted]
        return confidence, (predicted == y_true).astype(np.float64)
    raise ValueError(f"unknown calibration notion {notion!r}")


def indicator(y_true: NDArray[np.int64], k: int) -> NDArray[np.float64]:
    """``1{y_i = k}`` as float64."""
    return (np.asarray(y_true) == k).astype(np.float64)


def default_notion(n_classes: int) -> Notion:
    """``binary`` for two classes, ``top-label`` otherwise."""
    return "binary" if n_classes == 2 else "top-label"


def notion_outcomes(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *,
                    n_bins: int = 15, strategy: Strategy = "uniform",
                    notion: Notion | None = None) -> BinnedOutcomes:
    """Binned scores and outcomes of the binary (two classes) or top-label notion."""
    scores, outcomes = scores_and_outcomes(y_true, y_proba,
                                           notion or default_notion(y_proba.shape[1]))
    return BinnedOutcomes.build(scores, outcomes, n_bins=n_bins, strategy=strategy)


@accepts_1d
def binned_calibration(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *, n_bins: int = 15,
                       strategy: Strategy = "uniform", notion: Notion | None = None
                      ) -> ReliabilityBins:
    """The reliability bins that ECE and MCE summarise."""
    return bins_table(notion_outcomes(y_true, y_proba, n_bins=n_bins, strategy=strategy,
                                      notion=notion))


@accepts_1d
def expected_calibration_error(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *,
                               n_bins: int = 15, strategy: Strategy = "uniform",
                               notion: Notion | None = None) -> float:
    """Binned ECE (L1 distance, count-weighted, empty bins dropped).

    Parameters
    ----------
    y_true : (n,) class indices in ``0 .. m-1``
    y_proba : (n, m) predicted probabilities, rows on the simplex
    n_bins : number of bins, default 15
    strategy : ``"uniform"`` (equal width, default) or ``"quantile"`` (equal mass)
    notion : ``"binary"`` (default for m = 2) or ``"top-label"`` (default otherwise)

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([[0.8, 0.2], [0.3, 0.7], [0.4, 0.6], [0.9, 0.1]])
    >>> round(expected_calibration_error(np.array([0, 1, 0, 0]), p, n_bins=2), 6)
    0.15
    """
    binned = notion_outcomes(y_true, y_proba, n_bins=n_bins, strategy=strategy, notion=notion)
    return float(ece_from_sums(binned.sums()))


@accepts_1d
def max_calibration_error(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *,
                          n_bins: int = 15, strategy: Strategy = "uniform",
                          notion: Notion | None = None) -> float:
    """Binned MCE: the largest ``|acc_b - conf_b|`` over non-empty bins."""
    binned = notion_outcomes(y_true, y_proba, n_bins=n_bins, strategy=strategy, notion=notion)
    return float(mce_from_sums(binned.sums()))
