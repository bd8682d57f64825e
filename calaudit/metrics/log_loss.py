"""Log loss: ``-(1/n) sum_i log p_{i, y_i}``, the true class's probability clipped to ``[eps,
1]`` (``eps`` the float64 machine epsilon, as scikit-learn's ``eps="auto"``); the clipped
rows are reported.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calaudit.metrics.binned import finish
from calaudit.metrics.inputs import accepts_1d

EPS = float(np.finfo(np.float64).eps)


def true_class_proba(y_true: NDArray[np.int64], y_proba: NDArray[np.float64]
                     ) -> NDArray[np.float64]:
    """``p_{i, y_i}`` for every row."""
    return y_proba[np.arange(y_true.size), y_true]


@accepts_1d
def log_loss(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *, eps: float = EPS,
             weights: NDArray[np.float64] | None = None) -> float | NDArray[np.float64]:
    """Mean negative log probability of the true class (clipped at ``eps``).

    >>> import numpy as np
    >>> round(log_loss(np.array([1, 0]), np.array([[0.2, 0.8], [0.6, 0.4]])), 6)
    0.366985
    """
    losses = -np.log(np.clip(true_class_proba(y_true, y_proba), eps, 1.0))
    if weights is None:
        return finish(losses.mean(), None)
    return finish(losses @ weights / weights.sum(axis=0), weights)


def clipped_rows(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], eps: float = EPS
                 ) -> int:
    """Rows whose true-class probability is below ``eps``."""
    return int(np.count_nonzero(true_class_proba(y_true, y_proba) < eps))
