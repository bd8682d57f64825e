"""Brier score (Brier 1950): ``brier = (1/n) sum_i ||p_i - e_{y_i}||^2`` summed over classes
(CalibrationErrors.jl), twice scikit-learn's ``brier_score_loss`` for two classes, which is
``brier_binary = (1/n) sum_i (p_i - y_i)^2`` (``p_i`` the positive-class probability).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calaudit.metrics.inputs import accepts_1d


@accepts_1d
def brier_score(y_true: NDArray[np.int64], y_proba: NDArray[np.float64]) -> float:
    """``(1/n) sum_i sum_k (p_ik - 1{y_i = k})^2``.

    >>> import numpy as np
    >>> brier_score(np.array([1, 0]), np.array([[0.2, 0.8], [0.6, 0.4]]))
    0.2
    """
    residual = np.array(y_proba, dtype=np.float64)
    residual[np.arange(y_true.size), y_true] -= 1.0
    return float(np.einsum("ij,ij->", residual, residual) / y_true.size)


@accepts_1d
def brier_score_binary(y_true: NDArray[np.int64], y_proba: NDArray[np.float64]) -> float:
    """scikit-learn's binary Brier score ``(1/n) sum_i (p_i - y_i)^2`` (two classes only)."""
    diff = y_proba[:, 1] - (y_true == 1)
    return float(np.dot(diff, diff) / y_true.size)
