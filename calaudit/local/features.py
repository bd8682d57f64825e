"""Local calibration through random Fourier features (large n).

The KLCE product kernel is one Gaussian ``exp(-|z_i - z_j|^2)`` on the scaled rows
``z = [sqrt(gamma_p) p, sqrt(gamma_x) x]`` (:mod:`calaudit.local.kernel`), so its features
are those of the Gaussian with ``gamma = 1``: frequencies ``w ~ N(0, 2 I)``. With them

* ``KLCE^2_D = (|Phi^T R|^2 - sum_i |r_i|^2) / (n (n - 1))`` (the U-statistic of the
  feature kernel; its consistency test is :func:`calaudit.inference.feature_tests.
  feature_consistency_test`);
* the smoother sums ``K r`` and ``K 1`` of the local calibration bias (eq. 7) become
  ``Phi (Phi^T r)`` and ``Phi (Phi^T 1)`` (:func:`feature_smoother`), O(n D).

The feature kernel approximates ``K`` with a per-pair error of order ``1 / sqrt(D)``; a
weight sum ``sum_j K_ij`` over many neighbours has a much smaller relative error, but a
row with almost no neighbours can get a small or negative approximate denominator, so
the denominator is floored at :data:`MIN_WEIGHT` (a tenth of one row's own weight).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calaudit.local.lcb import LocalBias
from calaudit.numerics.features import (
    FourierFeatures,
    feature_matmul,
    feature_products,
    row_chunks,
    u_statistic_sums,
)

#: Smallest approximate kernel weight sum for which the LCB is reported.
MIN_WEIGHT = 0.1


def product_features(z: NDArray[np.float64], n_features: int, seed: int) -> FourierFeatures:
    """Features of ``exp(-|z_i - z_j|^2)`` on the rows of ``z`` (a product Gram's
    ``features``)."""
    return FourierFeatures.draw("sqeuclidean", 1.0, z.shape[1], n_features, seed)


def feature_smoother(features: FourierFeatures, z: NDArray[np.float64],
                     r: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(K r, K 1)`` with ``K`` the feature kernel: ``Phi (Phi^T r)``, ``Phi (Phi^T 1)``
    (``r`` may be (n,) or (n, q); the second item is always (n,))."""
    r = np.asarray(r, dtype=np.float64)
    columns = np.column_stack([r.reshape(r.shape[0], -1), np.ones(r.shape[0])])
    out = feature_matmul(features, z, columns)
    return out[:, :-1].reshape(r.shape), out[:, -1]


def feature_lcb_and_statistic(features: FourierFeatures, z: NDArray[np.float64],
                              r: NDArray[np.float64], klce_residuals: NDArray[np.float64]
                              ) -> tuple[LocalBias, float]:
    """LCB at every observation (feature kernel) and ``KLCE^2_D`` of ``klce_residuals``
    ((n,) or (n, m)), from one accumulation of ``Phi^T [r, 1, R]`` and one product pass."""
    n = z.shape[0]
    kr = np.asarray(klce_residuals, dtype=np.float64)
    classes = 1 if kr.ndim == 1 else kr.shape[1]
    stacked = np.column_stack([r, np.ones(n), kr.reshape(n, classes)])

    def fill(start: int, stop: int, out: NDArray[np.float64]) -> None:
        out[:] = stacked[start:stop]

    products, squares = feature_products(features, z, fill, stacked.shape[1])
    statistic = float(u_statistic_sums(products[:, 2:], squares[2:], classes)[0]) / (n * (n - 1))
    sums = np.empty((n, 2))
    for start, stop in row_chunks(n, features.n_features + 2):
        sums[start:stop] = features.transform(z[start:stop]) @ products[:, :2]
    weights = np.maximum(sums[:, 1], MIN_WEIGHT)
    return LocalBias(sums[:, 0] / weights, weights), statistic


def feature_curve_se(features: FourierFeatures, z: NDArray[np.float64], design,
                     weight_sums: NDArray[np.float64], r: NDArray[np.float64]
                     ) -> NDArray[np.float64]:
    """The LCB curves' standard errors ``sqrt(sum_i A_it^2 r_i^2)`` with ``A = K V``
    (:mod:`calaudit.local.lcb`) for the feature kernel, without the n x T matrices:
    ``Phi^T V`` is accumulated per request (``V`` is zero off the group's rows), then
    ``A = Phi (Phi^T V)`` is formed one row chunk at a time."""
    blocks = []
    for req, w in zip(design.requests, design.weights, strict=True):
        v = (w / weight_sums[req.rows][None, :]).T
        block = np.zeros((features.n_features, v.shape[1]))
        for start, stop in row_chunks(req.rows.size, features.n_features + v.shape[1]):
            block += features.transform(z[req.rows[start:stop]]).T @ v[start:stop]
        blocks.append(block)
    m = np.hstack(blocks) if blocks else np.zeros((features.n_features, 0))
    total = np.zeros(m.shape[1])
    rr = np.asarray(r, dtype=np.float64) ** 2
    for start, stop in row_chunks(z.shape[0], features.n_features + m.shape[1]):
        a = features.transform(z[start:stop]) @ m
        total += (a * a).T @ rr[start:stop]
    return np.sqrt(total)
