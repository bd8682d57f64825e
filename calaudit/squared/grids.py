"""Hyperparameter grids of Gruber & Bach, appendix B, and their thinning.

=========  ==========================================  ==================================
estimator  top-label / class-wise (score problems)      canonical (probability vectors)
=========  ==========================================  ==================================
``bin``    ``n_bins`` in {5 i : i = 1..20}               bins per dimension {1, ..., 10}
                                                        (calaudit's extension: the paper
                                                        has no canonical binning)
``kde``    bandwidth in logspace(-5, -1, 15) U {0.2, 0.4, ..., 1} (both)
``kkr``    lambda = n^a 10^(-2i+1), i = 1..9             lambda = n^a 10^(-i+9), i = 1..18
``ukkr``   lambda = n^a 10^(-i), i = 1..9                lambda = n^a 10^(-0.5i+4.5), i = 1..18
=========  ==========================================  ==================================

``n`` is the training fold's size. The paper prints ``a = 0.5``; its code
(``KRR_estimators.py``) uses ``a = -0.5`` for KKR and ``a = -0.25`` for UKKR, which
calaudit follows (:class:`calaudit.squared.fitting.Settings`; with ``a = 0.5`` the best
ridge on CIFAR-10 falls on the grid's edge). The grid stores the scale ``s = 10^e``
(:func:`regularisation` makes the ridge constant); a grid *size* ``k`` keeps ``k`` values
spread evenly (first and last included).
"""

from __future__ import annotations

import numpy as np

ESTIMATORS = ("bin", "kde", "kkr", "ukkr")
PARAMETER = {"bin": "n_bins", "kde": "bandwidth", "kkr": "lambda", "ukkr": "lambda"}

_BANDWIDTHS = tuple(sorted(np.concatenate((np.logspace(-5, -1, 15),
                                           np.linspace(0.2, 1.0, 5))).tolist()))
_SCALAR = {
    "bin": tuple(float(5 * i) for i in range(1, 21)),
    "kde": _BANDWIDTHS,
    "kkr": tuple(10.0 ** (-2 * i + 1) for i in range(1, 10)),
    "ukkr": tuple(10.0 ** (-i) for i in range(1, 10)),
}
_CANONICAL = {
    "bin": tuple(float(b) for b in range(1, 11)),
    "kde": _BANDWIDTHS,
    "kkr": tuple(10.0 ** (-i + 9) for i in range(1, 19)),
    "ukkr": tuple(10.0 ** (-0.5 * i + 4.5) for i in range(1, 19)),
}


def paper_grid(estimator: str, canonical: bool) -> tuple[float, ...]:
    """The full appendix-B grid (scales ``s`` for the ridge estimators)."""
    grids = _CANONICAL if canonical else _SCALAR
    if estimator not in grids:
        raise ValueError(f"unknown estimator {estimator!r}; choose from {', '.join(ESTIMATORS)}")
    return grids[estimator]


def thin(grid: tuple[float, ...], size: int | None) -> tuple[float, ...]:
    """``size`` values spread evenly over ``grid`` (all of it when ``size`` is None or
    at least its length)."""
    if size is None or size >= len(grid):
        return grid
    if size < 1:
        raise ValueError(f"grid size must be at least 1; got {size}")
    picks = np.unique(np.round(np.linspace(0, len(grid) - 1, size)).astype(int))
    return tuple(grid[i] for i in picks)


def regularisation(estimator: str, scale: float, n_train: float, exponent: float,
                   total: float | None = None) -> float:
    """The ridge constant: ``lambda n^2`` for KKR (eq. 28) and ``lambda n`` for UKKR (eq.
    32), ``lambda = n^exponent * scale`` (weighted: ``n`` in ``lambda`` the effective size,
    ``total`` the other ``n``)."""
    lam = scale * float(n_train) ** exponent
    return lam * float(n_train if total is None else total) ** (2 if estimator == "kkr" else 1)
