"""Local calibration through random Fourier features (large n).

The KLCE product kernel is one Gaussian ``exp(-|z_i - z_j|^2)`` on the scaled rows
``z = [sqrt(gamma_p) p, sqrt(gamma_x) x]`` (:mod:`calaudit.local.kernel`), so its features
are those of the Gaussian with ``gamma = 1``: frequencies ``w ~ N(0, 2 I)``. With them

* ``KLCE^2_D = (|Phi^T R|^2 - sum_i |r_i|^2) / (n (n - 1))`` (the U-statistic of the
  feature kernel; its consistency test is :func:`calaudit.inference.feature_tests.
  feature_consistency_test`);
* the smoother sums ``K r`` and ``K 1`` of the local calibration bias (eq. 7) become
  ``Phi (Phi^T r)`` and ``Phi (Phi^T 1)``, O(n D) (:mod:`calaudit.local.lcb_features`).

The feature kernel approximates ``K`` with a per-pair error of order ``1 / sqrt(D)``; a
weight sum ``sum_j K_ij`` over many neighbours has a much smaller relative error, but a
row with almost no neighbours can get a small or negative approximate denominator, so
the denominator is floored at :data:`MIN_WEIGHT` (a tenth of one row's own weight).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.inference.feature_passes import label_partial, statistics
from calaudit.inference.feature_tests import (
    FeatureTestResult,
    feature_bootstrap_test,
    label_inputs,
    reduce_rows,
)
from calaudit.numerics.features import FourierFeatures
from calaudit.numerics.resampling import monte_carlo_pvalue
from calaudit.scale import TASK_ROWS, ArrayRows, stream_seed

#: Smallest approximate kernel weight sum for which the LCB is reported.
MIN_WEIGHT = 0.1


def product_features(z: NDArray[np.float64], n_features: int, seed: int) -> FourierFeatures:
    """Features of ``exp(-|z_i - z_j|^2)`` on the rows of ``z`` (a product Gram's
    ``features``)."""
    return FourierFeatures.draw("sqeuclidean", 1.0, z.shape[1], n_features, seed)


@dataclass(frozen=True)
class LocalFeaturePass:
    """``KLCE^2_D`` and the resampling test that rode along in its pass (or ``None``)."""

    statistic: float
    test: FeatureTestResult | None


def feature_local_pass(features: FourierFeatures, z: NDArray[np.float64],
                       klce_residuals: NDArray[np.float64], proba: NDArray[np.float64],
                       test: str | None, rng: np.random.Generator | None, n_resamples: int,
                       task_rows: int = TASK_ROWS) -> LocalFeaturePass:
    """``KLCE^2_D`` and one resampling test.

    The pass is the exact reduction of :func:`calaudit.inference.feature_passes.
    label_partial` over the fixed row blocks: ``KLCE^2_D`` of the label residuals
    ``klce_residuals`` (labels of ``proba``), with the ``klce_consistency`` redraws riding
    along when ``test`` is that test (stream ``klce_consistency``); ``klce_bootstrap`` runs
    its own pass (:func:`calaudit.inference.feature_tests.feature_bootstrap_test`).
    """
    n = z.shape[0]
    consistency = test == "klce_consistency" and rng is not None
    seed = stream_seed(rng) if consistency else 0
    columns, shared = label_inputs(features, z, klce_residuals, proba, 1.0, seed,
                                   "klce_consistency", n_resamples if consistency else 0)
    # the rows go to the workers once for the stage's passes (this one and the bootstrap)
    with scale.resident(ArrayRows(columns)) as rows:
        total = reduce_rows(label_partial, n, task_rows, rows, shared)
        values = statistics(total, n, 1.0)
        statistic = float(values[0])
        result = None
        if consistency:
            result = FeatureTestResult(statistic, values[1:],
                                       monte_carlo_pvalue(statistic, values[1:]),
                                       features.n_features)
        elif test == "klce_bootstrap" and rng is not None:
            result = feature_bootstrap_test(features, z, klce_residuals, rng, n_resamples,
                                            stream="klce_bootstrap",
                                            task_rows=task_rows, rows=rows)
    return LocalFeaturePass(statistic, result)
