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

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.inference.feature_passes import label_partial, lead_bounds_of, statistics
from calaudit.inference.feature_tests import (
    FeatureTestResult,
    feature_bootstrap_test,
    label_inputs,
    reduce_rows,
)
from calaudit.local.lcb import LocalBias
from calaudit.numerics.features import (
    FourierFeatures,
    feature_matmul,
    row_chunks,
)
from calaudit.numerics.resampling import monte_carlo_pvalue
from calaudit.scale import TASK_ROWS, ArrayRows, stream_seed

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


@dataclass(frozen=True)
class LocalFeaturePass:
    """Everything the local stage needs from the feature kernel, in three passes."""

    bias: LocalBias
    statistic: float
    test: FeatureTestResult | None
    curve_se: NDArray[np.float64] | None


def feature_local_pass(features: FourierFeatures, z: NDArray[np.float64],
                       r: NDArray[np.float64], klce_residuals: NDArray[np.float64],
                       proba: NDArray[np.float64], test: str | None,
                       rng: np.random.Generator | None, n_resamples: int, design=None,
                           task_rows: int = TASK_ROWS, bias: bool = True
                       ) -> LocalFeaturePass:
    """LCB, ``KLCE^2_D``, one resampling test and the LCB curves' standard errors.

    Pass 1 is the exact reduction of :func:`calaudit.inference.feature_passes.
    label_partial` over the fixed row blocks: ``Phi^T [r, 1]`` (the LCB's lead columns)
    and ``KLCE^2_D`` of the label residuals ``klce_residuals`` (labels of ``proba``), with
    the ``klce_consistency`` redraws riding along when ``test`` is that test (stream
    ``klce_consistency``); ``klce_bootstrap`` runs its own pass
    (:func:`calaudit.inference.feature_tests.feature_bootstrap_test`). Pass 2 gives the
    LCB ``Phi (Phi^T r) / Phi (Phi^T 1)`` chunk by chunk and accumulates ``Phi^T V`` of the
    curves (``V_jt = w_j(t) / D_j``, :mod:`calaudit.local.lcb_curves`); pass 3 gives
    ``se_t^2 = sum_i (Phi (Phi^T V))_it^2 r_i^2``. ``design``: a
    :class:`calaudit.local.lcb_curves.CurveDesign` (its requests' rows sorted) or ``None``.
    ``bias=False`` skips passes 2 and 3 (``bias`` and ``curve_se`` are then ``None``).
    """
    n = z.shape[0]
    consistency = test == "klce_consistency" and rng is not None
    seed = stream_seed(rng) if consistency else 0
    columns, shared = label_inputs(features, z, klce_residuals, proba, 1.0, seed,
                                   "klce_consistency", n_resamples if consistency else 0)
    if bias:  # Phi^T [r, 1], the LCB's lead columns (not needed without the LCB passes)
        columns["lead"] = np.column_stack([r, np.ones(n)])
        shared["lead_bounds"] = lead_bounds_of(columns["lead"])
    # the rows go to the workers once for the stage's passes (pass 1 and the bootstrap)
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
    if not bias:
        return LocalFeaturePass(None, statistic, result, None)
    lead = total["lead"].sum(axis=2).T
    bias, curve_products = _bias_pass(features, z, lead, design)
    se = None
    if design is not None and design.requests:
        total_se = np.zeros(curve_products.shape[1])
        for start, stop in row_chunks(n, features.n_features + total_se.size):
            a = features.quantised(z[start:stop]) @ curve_products
            total_se += (a * a).T @ (r[start:stop] ** 2)
        se = np.sqrt(total_se)
    return LocalFeaturePass(bias, statistic, result, se)


def _bias_pass(features: FourierFeatures, z: NDArray[np.float64], lead: NDArray[np.float64],
               design) -> tuple[LocalBias, NDArray[np.float64]]:
    """LCB and weight sums chunk by chunk, and ``Phi^T V`` of the curves (pass 2)."""
    n = z.shape[0]
    values, weights = np.empty(n), np.empty(n)
    requests = design.requests if design is not None else ()
    blocks = [np.zeros((features.n_features, req_grid.size))
              for req_grid in (design.grids if design is not None else ())]
    for start, stop in row_chunks(n, features.n_features + 2):
        phi = features.quantised(z[start:stop])
        sums = phi @ lead
        weight = np.maximum(sums[:, 1], MIN_WEIGHT)
        values[start:stop], weights[start:stop] = sums[:, 0] / weight, weight
        for k, (req, block) in enumerate(zip(requests, blocks, strict=True)):
            lo, hi = np.searchsorted(req.rows, [start, stop])
            if hi > lo:
                local = req.rows[lo:hi] - start
                block += phi[local].T @ (design.weights(k, lo, hi) / weight[local][None, :]).T
    stacked = np.hstack(blocks) if blocks else np.zeros((features.n_features, 0))
    return LocalBias(values, weights), stacked
