"""The KLCE^2 statistic (Vashistha & Farahi, eq. 4) and its Hoeffding region.

``KLCE^2 = 1 / (n (n - 1)) * sum_{i != j} k(p_i, p_j) l(x_i, x_j) <r_i, r_j>``

* binary: ``r_i = y_i - p_i`` and ``k`` on the positive-class probability (the paper's eq. 4,
  KiTE's ``ELCE2``); the two-class vector form is exactly **twice** this value;
* multi-class: ``r_i = e_{y_i} - p_i`` and ``k`` on the probability vector (the kernel
  ``k * l * I_m`` of Widmann et al. 2019 with a covariate factor).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from calaudit.numerics.kernels import Gram
from calaudit.numerics.pairwise import as_columns, kernel_forms_and_matmul


def residuals(y_true: NDArray[np.int64], y_proba: NDArray[np.float64]) -> NDArray[np.float64]:
    """``y - p`` (n,) for two classes (column 1 is positive), else ``e_y - p`` (n, m)."""
    y = np.asarray(y_true, dtype=np.int64)
    p = np.asarray(y_proba, dtype=np.float64)
    if p.shape[1] == 2:
        return (y == 1).astype(np.float64) - p[:, 1]
    out = -p
    out[np.arange(y.shape[0]), y] += 1.0
    return out


def prediction_features(y_proba: NDArray[np.float64]) -> NDArray[np.float64]:
    """What the prediction kernel sees: ``p_1`` (n, 1) for binary, the vector otherwise."""
    p = np.asarray(y_proba, dtype=np.float64)
    return np.array(p[:, 1:2] if p.shape[1] == 2 else p)


def klce2_sum(gram: Gram, r: NDArray[np.float64]) -> float:
    """``S = sum_{i != j} K_ij <r_i, r_j>`` (un-normalised), by the fused engine's row tiles
    (:func:`kernel_forms_and_matmul`): the same summation as the observed statistic's lead
    column in a double-precision resampling pass."""
    return float(kernel_forms_and_matmul(gram, as_columns(r))[0][0])


def klce2(gram: Gram, r: NDArray[np.float64]) -> float:
    """The unbiased estimate ``S / (n (n - 1))`` (paper eq. 4)."""
    n = gram.n
    return klce2_sum(gram, r) / (n * (n - 1))


def kite_normaliser(kernel_sum: float, n: int) -> float:
    """KiTE ``ELCE2``'s denominator ``(n - 1) / n * sum_{i, j} K_ij`` (diagonal included)."""
    return (n - 1) / n * kernel_sum


def residual_bound(n_classes: int) -> float:
    """``B = sup |k l <r, r'>|`` for kernels bounded by 1: 1 for the scalar binary residual
    (``|y - p| <= 1``), 2 for vector residuals (``|e_y - p|_2^2 <= 2``)."""
    return 1.0 if n_classes == 2 else 2.0


def hoeffding_region(statistic: float, n: int, alpha: float, bound: float) -> dict:
    """The acceptance region of Corollary 3.7 and the U-statistic version of Hoeffding.

    Paper (eq. 5): accept ``KLCE^2 < B / sqrt(n) * sqrt(ln alpha^-2)``, from
    ``P(|KLCE^2_hat - KLCE^2| >= eps) <= 2 exp(-eps^2 n / (2 B^2))`` (Theorem 3.6).
    Hoeffding's (1963) inequality for a U-statistic of order 2 uses ``floor(n / 2)``
    independent pairs: ``B sqrt(2 ln(1 / alpha) / floor(n / 2))`` (Widmann et al.'s
    distribution-free SKCE bound). Both are reported; the second decides ``reject``.
    """
    log_term = math.log(1.0 / alpha)
    paper = bound / math.sqrt(n) * math.sqrt(2.0 * log_term)
    pairs = n // 2
    guaranteed = bound * math.sqrt(2.0 * log_term / pairs) if pairs else math.inf
    p_value = (math.exp(-pairs * (statistic / bound) ** 2 / 2.0)
               if statistic > 0 and pairs else 1.0)
    return {
        "alpha": alpha,
        "bound": bound,
        "threshold": guaranteed,
        "reject": bool(statistic >= guaranteed),
        "p_value": p_value,
        "threshold_paper": paper,
        "reject_paper": bool(statistic >= paper),
        "formula": "threshold = B sqrt(2 ln(1/alpha) / floor(n/2)); "
                   "threshold_paper = B / sqrt(n) sqrt(ln alpha^-2) (Corollary 3.7)",
    }
