"""Consistency resampling tests (Broecker & Smith 2007; Widmann et al. 2019, sec. 7.2).

Under calibration ``y_i ~ Cat(p_i)`` given the prediction: redrawing ``y*_i ~ Cat(p_i)``
with the predictions fixed gives the exact conditional null of any statistic, Monte-Carlo
p-value ``(1 + #{T* >= T}) / (1 + B)`` (CalibrationTests.jl ``ConsistencyTest`` also
resamples the predictions; calaudit does not).

* SKCE: ``SKCE_uq* = sum_{i != j} K_ij <Z_i, Z_j> / (n (n-1))``, ``Z_i = e_{y*_i} - p_i``,
  batches of redraws as columns of ``Z`` in the pairwise engine (two classes: ``sqrt(2)
  (y* - p_1)``).
* binned ECE: bins fixed, outcomes Bernoulli(``p_i``) (binary) or Bernoulli(``max_k
  p_ik``) (top-label); the events per bin are drawn from their Poisson-binomial law
  (:mod:`calaudit.metrics.row_laws`).
* canonical ECE: grid cells fixed, per-cell class counts of the redrawn labels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit import progress, registry
from calaudit.data.weights import SampleWeights
from calaudit.inference import applicability as rules
from calaudit.inference.weighted_tests import null_sums
from calaudit.metrics.binned import BinSums, ece_from_sums
from calaudit.metrics.ece import default_notion, notion_outcomes
from calaudit.metrics.ece_variants import CanonicalBins
from calaudit.metrics.row_laws import cell_laws, draw_events
from calaudit.metrics.row_summary import Binning, binned_summary
from calaudit.numerics.binning import Strategy
from calaudit.numerics.kernels import Gram
from calaudit.numerics.pairwise import kernel_forms_and_matmul
from calaudit.numerics.resampling import (
    BATCH_ENTRIES,
    PILOT_SEED,
    batch_sizes,
    categorical_draws,
    form_error_bound,
    form_error_factor,
    monte_carlo_pvalue,
    one_hot_residuals,
    pass_dtype,
    refine_near,
)
from calaudit.results import TestResult
from calaudit.scale import ArrayRows

#: Precision of the products ``K Z`` of the SKCE consistency test (as the bootstrap's, see
#: :data:`calaudit.inference.skce_tests.BOOTSTRAP_GEMM_DTYPE`): the resampled statistics
#: move by about 1e-7 of their spread; the observed statistic stays float64.
CONSISTENCY_GEMM_DTYPE = np.float32


@dataclass(frozen=True)
class ResamplingTest:
    """Observed statistic, its resampled null distribution and the p-value."""

    statistic: float
    null_distribution: NDArray[np.float64]
    p_value: float


def _run(observed: float, batch_null: Callable[[int], NDArray[np.float64]], n_rows: int,
         n_resamples: int, max_entries: int, atol: float = 0.0,
         name: str = "label redraws") -> ResamplingTest:
    """The null distribution batch by batch (progress task ``name``) and the p-value."""
    batches = []
    with progress.task(name, total=n_resamples) as advance:
        for q in batch_sizes(n_resamples, n_rows, max_entries):
            batches.append(batch_null(q))
            advance(q)
    null = np.concatenate(batches)
    return ResamplingTest(observed, null, monte_carlo_pvalue(observed, null, atol=atol))


def skce_consistency_test(kernel_gram: Gram, y_proba: NDArray[np.float64], observed: float,
                          rng: np.random.Generator, n_resamples: int,
                          max_entries: int | None = None,
                          dtype: type = CONSISTENCY_GEMM_DTYPE) -> ResamplingTest:
    """Consistency test of ``SKCE_uq`` (``observed``) with kernel matrix ``kernel_gram``.
    The products ``K Z`` run in ``dtype``; replicates within its rounding bound of
    ``observed`` are recomputed in float64 (:func:`refine_near`) and those within twice the
    float64 bound below count as ties, so the p-value does not depend on ``dtype``."""
    n, m = y_proba.shape
    plan = SkceRedraws(n, m, observed, n_resamples, max_entries)
    dtype = plan.precision(kernel_gram, dtype, y_proba)

    def batch(q: int) -> NDArray[np.float64]:
        z = redraw_columns(y_proba, rng, q)
        forms, _ = kernel_forms_and_matmul(kernel_gram, z, dtype=dtype)
        if dtype != np.float64:
            refine_near(forms, z, observed / plan.scale, plan.factor(dtype),
                        plan.tie / plan.scale,
                        lambda near: kernel_forms_and_matmul(kernel_gram, near)[0])
        return forms * plan.scale

    return plan.run(batch)


def redraw_columns(y_proba: NDArray[np.float64], draw: np.random.Generator, q: int
                   ) -> NDArray[np.float64]:
    """``q`` columns of residuals of labels redrawn from ``y_proba`` (n, m) with ``draw``:
    ``sqrt(2) (y* - p_1)`` for two classes (``<e_y - p, e_y' - p'> = 2 (y - p_1)(y' -
    p'_1)``), else the one-hot residuals (n, m, q)."""
    labels = categorical_draws(draw, y_proba, q)
    if y_proba.shape[1] == 2:
        return np.sqrt(2.0) * (labels - y_proba[:, 1, None])
    return one_hot_residuals(labels, y_proba)


@dataclass(frozen=True)
class SkceRedraws:
    """The SKCE consistency test's constants at ``n`` rows of ``m`` classes: the scale
    ``1 / (n (n - 1))``, the tie band, the batches (:meth:`run`) and the precision of the
    passes (:meth:`precision`)."""

    n: int
    m: int
    observed: float
    n_resamples: int
    max_entries: int | None = None  # None: BATCH_ENTRIES

    @property
    def scale(self) -> float:
        return 1.0 / (self.n * (self.n - 1))

    @property
    def tie(self) -> float:
        return 2.0 * form_error_bound(self.n, np.float64)

    @property
    def rows(self) -> int:
        return self.n * (1 if self.m == 2 else self.m)

    def factor(self, dtype: type) -> float:
        return form_error_factor(self.n, dtype)

    def precision(self, kernel_gram: Gram, dtype: type, y_proba: NDArray[np.float64]) -> type:
        """:func:`pass_dtype` of the passes (a pilot of redraws from its own seed)."""
        width = min(self.n_resamples, max(1, self.entries // self.rows))

        def pilot(q: int) -> NDArray[np.float64]:
            return redraw_columns(y_proba, np.random.default_rng(PILOT_SEED), q)

        return pass_dtype(kernel_gram, dtype, width, pilot, self.observed / self.scale,
                          self.factor(dtype), self.tie / self.scale)

    @property
    def entries(self) -> int:
        """Entries of one batch of redraws."""
        return self.max_entries or BATCH_ENTRIES

    def sizes(self) -> list[int]:
        return list(batch_sizes(self.n_resamples, self.rows, self.entries))

    def run(self, batch: Callable[[int], NDArray[np.float64]]) -> ResamplingTest:
        return _run(self.observed, batch, self.rows, self.n_resamples, self.entries,
                    atol=self.tie, name="label redraws (SKCE)")


def ece_consistency(y_true: NDArray[np.int64], y_proba: NDArray[np.float64], *,
                    weights: SampleWeights | None = None, n_bins: int = 15,
                    strategy: Strategy = "uniform", n_resamples: int = 1000,
                    alpha: float = 0.05, rng: np.random.Generator) -> TestResult:
    """Consistency resampling test of the binned ECE (binary notion for two classes,
    top-label otherwise): outcomes redrawn as Bernoulli(score), bins fixed; ``weights``:
    :func:`ece_consistency_of_rows`."""
    return ece_consistency_of_rows(ArrayRows({"y": y_true, "proba": y_proba}),
                                   weights=weights, n_bins=n_bins, strategy=strategy,
                                   n_resamples=n_resamples, alpha=alpha, rng=rng)


def ece_consistency_of_rows(rows: Any, *, weights: SampleWeights | None = None,
                            n_bins: int = 15, strategy: Strategy = "uniform",
                            n_resamples: int = 1000, alpha: float = 0.05,
                            rng: np.random.Generator) -> TestResult:
    """:func:`ece_consistency` of a row source (``y``, ``proba``). Unweighted: per-bin sums
    and laws of events from two reductions, then ``rng.random((bins, B))`` in bin order.
    ``weights`` (rows in memory; docs/weights.md): the weighted ECE against labels redrawn
    from their law in the sample, the weights following the redrawn label
    (:func:`calaudit.inference.weighted_tests.null_sums`)."""
    reason = (rules.too_few_rows(rows.n)
              or rules.resampling_cannot_reject(n_resamples, alpha))
    resamples = 0 if reason else n_resamples
    if weights is None:
        m, observed, null = _redrawn_ece(rows, n_bins, strategy, resamples, rng)
        method, extra = "consistency resampling: outcomes redrawn from the predictions", {}
    else:
        columns = rows.read(0, rows.n, ["y", "proba"])
        m = columns["proba"].shape[1]
        binned = notion_outcomes(columns["y"], columns["proba"], n_bins=n_bins,
                                 strategy=strategy)
        seen, drawn = null_sums(binned, weights, m == 2, resamples, rng)
        observed = float(ece_from_sums(seen)[0])
        null = None if drawn is None else ece_from_sums(drawn)
        method = ("consistency resampling, weighted: outcomes redrawn from their law in the "
                  "sample" + (" for every unit of a frequency weight"
                              if weights.kind == "frequency" else "")
                  + ", statistics weighted")
        extra = {"weights": weights.kind, "label_dependent": weights.label_dependent}
    notion = default_notion(m)
    params = {"n_bins": n_bins, "binning": strategy, "notion": notion, "distance": "L1",
              **extra}
    return rules.monte_carlo_result("ece_consistency", observed, null, reason, method, params,
                                    registry.title("ece_consistency", notion))


def _redrawn_ece(rows: Any, n_bins: int, strategy: Strategy, n_resamples: int,
                 rng: np.random.Generator) -> tuple[int, float, NDArray | None]:
    """The classes, the unweighted ECE of ``rows`` and of ``n_resamples`` redraws (None
    for 0): per-bin sums and laws of events from two reductions."""
    binning = Binning.build(rows, n_bins, strategy)
    summary = binned_summary(rows, binning)
    sums = summary.sums(0)
    null = None
    if n_resamples:
        cells = binning.cells(0)
        laws = cell_laws(rows, binning, (0,))[0][:cells]
        events = draw_events(laws, rng.random((cells, n_resamples)))
        null = ece_from_sums(BinSums(sums.count[:, None], sums.score[:, None],
                                     events.astype(np.float64)))
    return summary.m, float(ece_from_sums(sums)), null


def canonical_ece_consistency_test(bins: CanonicalBins, observed: float,
                                   rng: np.random.Generator, n_resamples: int,
                                   distance: str = "tv", max_entries: int = BATCH_ENTRIES
                                   ) -> ResamplingTest:
    """Consistency test of the canonical ECE (labels redrawn, grid cells fixed)."""
    n, m = bins.y_proba.shape

    def batch(q: int) -> NDArray[np.float64]:
        return bins.ece_for_labels(categorical_draws(rng, bins.y_proba, q), distance)

    return _run(observed, batch, n * m, n_resamples, max_entries,
                name="label redraws (canonical ECE)")
