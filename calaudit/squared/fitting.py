"""A calibration estimation function fitted on a training fold for its whole grid: the
risk (eq. 20) of every grid value and the estimate (eq. 21) at one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from calaudit.squared.targets import Problem


@dataclass(frozen=True)
class EvalSet:
    """An evaluation set (a validation fold or the test split); ``key`` names it for
    caches."""

    key: str
    problem: Problem


@dataclass(frozen=True)
class Settings:
    """Settings not searched over: ``kernel_gamma`` of KKR's and UKKR's Gaussian kernel
    ``exp(-gamma ||x - x'||^2)`` (the paper's 1/2); ``a`` in ``lambda = n^a s``
    (:mod:`calaudit.squared.grids`); ``spectrum``, ``rank_tolerance``, ``max_rank`` of
    :func:`calaudit.numerics.spectral.kernel_spectrum`."""

    kernel_gamma: float = 0.5
    kkr_lambda_exponent: float = -0.5
    ukkr_lambda_exponent: float = -0.25
    spectrum: str = "low_rank"
    rank_tolerance: float = 1e-10
    max_rank: int = 4000


class FittedPath(Protocol):
    """One estimator fitted on one training fold, for every value of its grid."""

    grid: tuple[float, ...]

    def risks(self, evalset: EvalSet) -> NDArray[np.float64]:
        """Eq. 20 on ``evalset`` for every grid value."""
        ...

    def estimate(self, evalset: EvalSet, index: int) -> float:
        """``mean_i h(x_i, x_i)`` on ``evalset`` at grid value ``index`` (eq. 21)."""
        ...


#: Target size, in float64 entries, of one evaluation-by-training block.
BLOCK_ENTRIES = 4_000_000


def row_tiles(n_rows: int, n_cols: int, block_entries: int = BLOCK_ENTRIES):
    """Slices of ``n_rows`` so that one ``tile x n_cols`` block holds about
    ``block_entries`` values."""
    step = int(max(1, min(n_rows, block_entries // max(n_cols, 1))))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))
