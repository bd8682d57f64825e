"""Local calibration through random Fourier features (large n).

The KLCE product kernel is one Gaussian ``exp(-|z_i - z_j|^2)`` on the scaled rows ``z``
(:mod:`calaudit.local.kernel`), so its features have frequencies ``w ~ N(0, 2 I)``:

* ``KLCE^2_D = (|Phi^T R|^2 - sum_i |r_i|^2) / (n (n - 1))``;
* the LCB sums ``K r`` and ``K 1`` become ``Phi (Phi^T r)`` and ``Phi (Phi^T 1)``.

A row with almost no neighbours can get a small or negative approximate denominator, so it
is floored at :data:`MIN_WEIGHT` (a tenth of one row's own weight).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import scale
from calaudit.inference.feature_passes import label_partial, shared_labels, statistics
from calaudit.inference.feature_tests import (
    FeatureTestResult,
    feature_bootstrap_test,
    label_inputs,
    reduce_rows,
)
from calaudit.local.encoding import EncodedRows
from calaudit.local.kernel import ScaledRows
from calaudit.numerics.features import FourierFeatures
from calaudit.numerics.resampling import monte_carlo_pvalue
from calaudit.scale import TASK_ROWS, ArrayRows, DerivedRows, stream_seed

#: Smallest approximate kernel weight sum for which the LCB is reported.
MIN_WEIGHT = 0.1


def product_features(z: NDArray[np.float64], n_features: int, seed: int) -> FourierFeatures:
    """Features of ``exp(-|z_i - z_j|^2)`` on the rows of ``z`` (a product Gram's
    ``features``)."""
    return FourierFeatures.draw("sqeuclidean", 1.0, z.shape[1], n_features, seed)


@dataclass(frozen=True)
class KernelRows(DerivedRows):
    """The KLCE feature pass's columns of a source whose tasks read their own rows
    (``y``, ``proba`` and the covariates' ``columns``: a dataset audited where it is),
    built per range for one view of the model: ``x`` (the scaled rows ``z``: the view's
    probabilities times ``sqrt(prob_gamma)`` and the encoded covariates times
    ``sqrt(cov_gamma)``, :class:`~calaudit.local.kernel.ScaledRows` of
    :class:`~calaudit.local.encoding.EncodedRows` with the stage's ``encoding``),
    ``proba`` and ``observed`` (uint8 label indicators): the bits of the columns
    :func:`~calaudit.inference.feature_tests.label_inputs` builds in memory. ``view``
    ``None``: binary ``p_1`` and ``y == 1`` ((n, 1)), or a multi-class model's (n, m) rows
    and one-hot labels; a class ``c``: its one-vs-rest ``p_c`` and ``y == c`` ((n, 1));
    ``classes``: the model's number of classes."""

    source: Any
    columns: tuple[str, ...]
    #: Each covariate's ``(name, kind, categories)``, in the encoding's order.
    covariates: tuple[tuple[str, str, tuple[str, ...]], ...]
    encoding: dict[str, Any]
    blocks: tuple[slice, ...]
    prob_gamma: float
    cov_gamma: float
    view: int | None = None
    classes: int = 2

    @property
    def labels(self) -> int:
        """Label indicator matrices per draw of :func:`label_partial` (1: one column)."""
        return self.classes if self.view is None and self.classes > 2 else 1

    def read(self, start: int, stop: int, names: Any) -> dict[str, NDArray]:
        part = self.source.read(start, stop, ["y", "proba", *self.columns])
        y, proba = part["y"], part["proba"]
        if self.labels > 1:
            p = proba
            observed = (y[:, None] == np.arange(p.shape[1])).astype(np.uint8)
        else:
            c = 1 if self.view is None else self.view
            p = proba[:, c].copy().reshape(-1, 1)
            observed = (y == c).astype(np.uint8)[:, None]
        z = ScaledRows(p, self.prob_gamma,
                       encoded_range(part, self.covariates, self.columns, self.encoding,
                                     self.blocks), self.cov_gamma)
        columns = {"x": lambda: z[:], "proba": lambda: p, "observed": lambda: observed}
        return {name: columns[name]() for name in names}


@dataclass(frozen=True)
class _Values:
    """A covariate's values of one range (the duck type :mod:`calaudit.local.encoding`
    reads)."""

    name: str
    kind: str
    values: NDArray
    categories: tuple[str, ...]


def covariate_reads(data: Any) -> tuple[tuple[str, ...], tuple[tuple[str, str, tuple], ...]]:
    """For a data object whose ``rows`` read their own rows: each covariate's column in the
    source and its ``(name, kind, categories)``, in the data's order (what
    :func:`encoded_range` takes)."""
    covariates = tuple(data.covariates)
    return (tuple(data.rows.covariate_column(c.name) for c in covariates),
            tuple((c.name, c.kind, c.categories) for c in covariates))


def encoded_range(part: dict[str, NDArray], covariates: tuple[tuple[str, str, tuple], ...],
                  columns: tuple[str, ...], encoding: dict[str, Any],
                  blocks: tuple[slice, ...]) -> EncodedRows:
    """The encoded covariates of a range read from a row source (``part``: the
    covariates' ``columns``; ``covariates``: each one's ``(name, kind, categories)``),
    with the stage's ``encoding``: entry by entry the stage's own values."""
    return EncodedRows(tuple(_Values(name, kind, part[column], categories)
                             for (name, kind, categories), column in zip(
                                 covariates, columns, strict=True)), encoding, blocks)


@dataclass(frozen=True)
class LocalFeaturePass:
    """``KLCE^2_D`` and the resampling test that rode along in its pass (or ``None``)."""

    statistic: float
    test: FeatureTestResult | None


def feature_local_pass(features: FourierFeatures, z: NDArray[np.float64],
                       klce_residuals: NDArray[np.float64], proba: NDArray[np.float64],
                       test: str | None, rng: np.random.Generator | None, n_resamples: int,
                       task_rows: int = TASK_ROWS, source: KernelRows | None = None
                       ) -> LocalFeaturePass:
    """``KLCE^2_D`` and one resampling test, from one reduction of
    :func:`calaudit.inference.feature_passes.label_partial`: the ``klce_consistency``
    redraws ride along when ``test`` is that test; ``klce_bootstrap`` runs its own pass.
    ``source``: the same columns read by the tasks (:class:`KernelRows`)."""
    n = z.shape[0]
    consistency = test == "klce_consistency" and rng is not None
    seed = stream_seed(rng) if consistency else 0
    resamples = n_resamples if consistency else 0
    if source is None:
        columns, shared = label_inputs(features, z, klce_residuals, proba, 1.0, seed,
                                       "klce_consistency", resamples)
        source = ArrayRows(columns)
    else:
        shared = shared_labels(features, source.labels, seed, "klce_consistency", resamples)
    with scale.resident(source) as rows:
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


def rows_consistency_test(features: FourierFeatures, source: KernelRows,
                          rng: np.random.Generator, n_resamples: int, stream: str,
                          task_rows: int = TASK_ROWS) -> FeatureTestResult:
    """:func:`~calaudit.inference.feature_tests.feature_consistency_test` of the view of
    ``source`` (its rows read by the tasks): the same reduction of
    :func:`~calaudit.inference.feature_passes.label_partial` with the same seed drawn
    from ``rng``, on the columns each task builds."""
    shared = shared_labels(features, source.labels, stream_seed(rng), stream, n_resamples)
    total = reduce_rows(label_partial, source.n, task_rows, source, shared)
    return FeatureTestResult.of(statistics(total, source.n, 1.0), features.n_features)
