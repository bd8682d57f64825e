"""The three local calibration tests, every resample batched through the pairwise engine.

Each test's resampled residual vectors are the columns of ``Z``; all their quadratic forms
``sum_{i != j} K_ij <Z_i, Z_j>`` come from one tiled kernel pass
(:func:`kernel_forms_and_matmul`), split into batches when ``n * m * B`` would exceed
:data:`MAX_ENTRIES`.

* :func:`consistency_test` (``klce_consistency``, the default): labels redrawn
  ``y*_i ~ Cat(p_i)``, the exact conditional null under local calibration (consistency
  resampling, Broecker & Smith 2007 / Widmann et al. 2019).
* :func:`bootstrap_test` (``klce_bootstrap``): the paper's Algorithm 1 -- residuals drawn
  with replacement, kernel matrix at the original rows.
* :func:`permutation_test` (``klce_permutation``): KiTE ``ELCE2`` -- residuals permuted,
  null centred at its mean (or not), statistic normalised by ``(n - 1) / n * sum K``,
  ``p = max(1 / B, #{T*_b > T} / B)``.

Monte-Carlo p-values of the first two are ``(1 + #{T*_b >= T}) / (1 + B)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from calaudit import progress
from calaudit.local.klce import kite_normaliser
from calaudit.numerics.kernels import Gram
from calaudit.numerics.pairwise import as_columns, kernel_forms_and_matmul
from calaudit.numerics.resampling import (
    PILOT_SEED,
    form_error_bound,
    form_error_factor,
    labels_from_uniforms,
    monte_carlo_pvalue,
    one_hot_residuals,
    pass_dtype,
    refine_near,
)

#: Largest number of float64 entries of one batch of resampled columns (about 256 MB).
MAX_ENTRIES = 32_000_000

#: ``sampler(rng, out)`` fills ``out`` ((n, B) or (n, m, B)) with B resampled columns.
Sampler = Callable[[np.random.Generator, NDArray[np.float64]], None]


@dataclass(frozen=True)
class NullResult:
    """Observed statistic, its resampling null distribution and the p-value."""

    statistic: float
    null_distribution: NDArray[np.float64]
    p_value: float
    extra: dict = field(default_factory=dict)


def batched_forms(gram: Gram, sampler: Sampler, n_resamples: int, rng: np.random.Generator,
                  lead: NDArray[np.float64] | None, *,
                  max_entries: int = MAX_ENTRIES, dtype: type = np.float64,
                  refine: tuple[float | None, float] | None = None,
                  observe: Callable[[NDArray[np.float64]], None] | None = None
                  ) -> tuple[NDArray[np.float64] | None, NDArray[np.float64]]:
    """Quadratic forms of the ``lead`` columns and of ``n_resamples`` sampled columns.

    ``lead`` has shape (n, k) or (n, m, k) (``k`` may be 0; ``None`` means (n, 0)); the
    sampler fills the resample columns, (n, B) or (n, m, B), in float64 (the GEMMs run in
    ``dtype``). The observed (lead) columns go into the first batch. Returns
    ``(lead_forms, resample_forms)``.

    ``refine = (F, tie)`` (unnormalised, like the forms): resampled forms that rounding in
    ``dtype`` could move across ``F - tie`` (:func:`refine_near`) are recomputed in double
    precision, so ``T* >= T`` is decided as in float64; when most would be, the whole pass
    runs in double precision (:func:`pass_dtype`). ``F = None``: the observed form is that
    of the first column (``k = 1``), computed in the double-precision pass (this one, or a
    pass of its own before the single-precision one).

    ``observe`` receives every batch of sampled columns (float64, in order).
    """
    n = gram.n
    layout = (n,) if lead is None or lead.ndim == 2 else (n, lead.shape[1])
    batch = max(1, max_entries // int(np.prod(layout)))
    k = 0 if lead is None else lead.shape[-1]
    if refine is not None and dtype != np.float64:
        def pilot(q: int) -> NDArray[np.float64]:
            columns = np.empty(layout + (q,))
            sampler(np.random.default_rng(PILOT_SEED), columns)
            return columns
        dtype = pass_dtype(gram, dtype, min(batch, n_resamples + k), pilot, refine[0],
                           form_error_factor(n, dtype), refine[1], lead)
    lead_forms: NDArray[np.float64] | None = None
    if refine is not None and refine[0] is None and dtype != np.float64:
        lead_forms, _ = kernel_forms_and_matmul(gram, lead)
        refine, lead, k = (float(lead_forms[0]), refine[1]), lead[..., :0], 0
    forms: list[NDArray[np.float64]] = []
    done, first = 0, True
    with progress.task("local resamples", total=n_resamples) as advance:
        while first or done < n_resamples:
            count = min(max(1, batch - (k if first else 0)), n_resamples - done)
            offset = k if first else 0
            # columns are drawn in float64 (the GEMMs round them to ``dtype``), so the
            # replicates refined below are recomputed from the exact columns
            block = np.empty(layout + (offset + count,), dtype=np.float64)
            if first and k:
                block[..., :k] = lead
            sampler(rng, block[..., offset:])
            if observe is not None:
                observe(block[..., offset:])
            values, _ = kernel_forms_and_matmul(gram, block, dtype=dtype)
            if first:
                lead_forms = values[:k] if k else lead_forms
                values = values[k:]
            if refine is not None and dtype != np.float64:
                refine_near(values, block[..., offset:], refine[0],
                            form_error_factor(n, dtype), refine[1],
                            lambda z: kernel_forms_and_matmul(gram, z)[0])
            forms.append(values)
            done += count
            advance(count)
            first = False
            del block
    return lead_forms, np.concatenate(forms)


#: Random draws are made in row chunks of about this many entries (bounded temporaries).
DRAW_ENTRIES = 4_000_000


def _row_chunks(rows: int, columns: int):
    step = max(1, DRAW_ENTRIES // max(columns, 1))
    for start in range(0, rows, step):
        yield start, min(rows, start + step)


def label_sampler(proba: NDArray[np.float64]) -> Sampler:
    """Columns ``e_{y*} - p`` with ``y*_i ~ Cat(p_i)`` (binary: ``y* - p_1``, ``p_1 = proba``),
    from uniforms drawn in C order row chunk by row chunk (the stream of one
    ``rng.random((n, B))``)."""
    if proba.ndim == 1:
        def draw_binary(rng: np.random.Generator, out: NDArray[np.float64]) -> None:
            for start, stop in _row_chunks(*out.shape):
                u = rng.random((stop - start, out.shape[1]))
                p = proba[start:stop, None]
                np.subtract(u < p, p, out=out[start:stop])
        return draw_binary

    cumulative = np.cumsum(proba, axis=1)[:, :-1]

    def draw_classes(rng: np.random.Generator, out: NDArray[np.float64]) -> None:
        count = out.shape[2]
        for start, stop in _row_chunks(out.shape[0], count):
            labels = labels_from_uniforms(rng.random((stop - start, count)),
                                          cumulative[start:stop])
            one_hot_residuals(labels, proba[start:stop], out=out[start:stop])
    return draw_classes


def _rows_into(out: NDArray[np.float64], r: NDArray[np.float64],
               index: NDArray[np.intp]) -> None:
    """``out[i, ..., b] = r[index[i, b]]`` for (rows, B) or (rows, m, B) ``out``."""
    out[:] = r[index] if r.ndim == 1 else np.moveaxis(r[index], 1, 2)


def bootstrap_sampler(r: NDArray[np.float64]) -> Sampler:
    """Columns of residuals drawn with replacement (Algorithm 1, line 9)."""
    def draw(rng: np.random.Generator, out: NDArray[np.float64]) -> None:
        for start, stop in _row_chunks(out.shape[0], out.shape[-1]):
            index = rng.integers(0, r.shape[0], size=(stop - start, out.shape[-1]))
            _rows_into(out[start:stop], r, index)
    return draw


def permutation_sampler(r: NDArray[np.float64]) -> Sampler:
    """Columns of permuted residuals (KiTE ``ELCE2_null_estimator``)."""
    def draw(rng: np.random.Generator, out: NDArray[np.float64]) -> None:
        order = np.broadcast_to(np.arange(r.shape[0])[:, None], (r.shape[0], out.shape[-1]))
        _rows_into(out, r, rng.permuted(order, axis=0))
    return draw


def _observed_and_null(gram: Gram, sampler: Sampler, r: NDArray[np.float64],
                       rng: np.random.Generator, n_resamples: int, statistic: float | None,
                       dtype: type,
                       observe: Callable[[NDArray[np.float64]], None] | None = None
                       ) -> tuple[float, NDArray[np.float64]]:
    """KLCE^2 (given, or from a double-precision lead column) and the null statistics."""
    lead = as_columns(r) if statistic is None else as_columns(r)[..., :0]
    scale = 1.0 / (gram.n * (gram.n - 1))
    observed_form = None if statistic is None else float(statistic) / scale
    refine = (observed_form, tie_tolerance(gram.n) / scale)
    lead_forms, null = batched_forms(gram, sampler, n_resamples, rng, lead, dtype=dtype,
                                     refine=refine, observe=observe)
    observed = float(lead_forms[0]) * scale if statistic is None else float(statistic)
    return observed, null * scale


def tie_tolerance(n: int) -> float:
    """Replicates this close below the observed KLCE^2 count as ties: twice the float64
    rounding bound of a form (the observed and the resampled statistic are each computed
    to within it), so replicates equal to ``T`` in exact arithmetic always count."""
    return 2.0 * form_error_bound(n, np.float64)


def consistency_test(gram: Gram, r: NDArray[np.float64], proba: NDArray[np.float64],
                     rng: np.random.Generator, n_resamples: int, *,
                     statistic: float | None = None,
                     dtype: type = np.float64,
                     observe: Callable[[NDArray[np.float64]], None] | None = None
                     ) -> NullResult:
    """``klce_consistency``: KLCE^2 and its null under labels drawn from the predictions.

    ``statistic``: the observed KLCE^2 when already computed (in double precision);
    otherwise from the observed (lead) column. ``dtype=np.float32`` lets the pass run in
    single precision where that is cheaper (ties still decided in double precision);
    ``observe``: as :func:`batched_forms`."""
    observed, null = _observed_and_null(gram, label_sampler(proba), r, rng, n_resamples,
                                        statistic, dtype, observe)
    return NullResult(observed, null, monte_carlo_pvalue(observed, null,
                                                         atol=tie_tolerance(gram.n)))


def bootstrap_test(gram: Gram, r: NDArray[np.float64], rng: np.random.Generator,
                   n_resamples: int, *, statistic: float | None = None,
                   dtype: type = np.float64) -> NullResult:
    """``klce_bootstrap``: Algorithm 1 (residual bootstrap); arguments as
    :func:`consistency_test`. ``extra["p_value_paper"]`` is the paper's ``#{T*_b > T} / B``
    (line 13)."""
    observed, null = _observed_and_null(gram, bootstrap_sampler(r), r, rng, n_resamples,
                                        statistic, dtype)
    paper = float(np.count_nonzero(null > observed) / null.size)
    return NullResult(observed, null, monte_carlo_pvalue(observed, null,
                                                         atol=tie_tolerance(gram.n)),
                      {"p_value_paper": paper})


def _ones_column(r: NDArray[np.float64]) -> NDArray[np.float64]:
    """A column whose quadratic form is ``sum_{i != j} K_ij`` (one class slot set)."""
    ones = np.zeros(as_columns(r).shape)
    if r.ndim == 1:
        ones[:, 0] = 1.0
    else:
        ones[:, 0, 0] = 1.0
    return ones


def permutation_test(gram: Gram, r: NDArray[np.float64], rng: np.random.Generator,
                     n_resamples: int, centred: bool = True) -> NullResult:
    """``klce_permutation``: KiTE ``ELCE2`` statistic, permutation null and p-value.

    ``S = sum_{i != j} K_ij <r_i, r_j>``, ``N = (n - 1) / n * sum_{i, j} K_ij``; null
    ``S*_b`` from permuted residuals, centred ``S*_b - mean(S*)`` unless ``centred`` is
    false; ``p = max(1 / B, #{S*_b > S} / B)`` (strict, against the uncentred ``S``).
    Returns ``S / N`` and the null divided by ``N``.
    """
    lead = np.concatenate([as_columns(r), _ones_column(r)], axis=-1)
    (s, off_diagonal), null = batched_forms(gram, permutation_sampler(r), n_resamples, rng,
                                            lead)
    n = gram.n
    normaliser = kite_normaliser(float(off_diagonal) + float(gram.diagonal().sum()), n)
    if centred:
        null = null - null.mean()
    p_value = max(1.0 / null.size, float(np.count_nonzero(null > s)) / null.size)
    return NullResult(float(s) / normaliser, null / normaliser, p_value,
                      {"kernel_sum": float(off_diagonal) + float(gram.diagonal().sum()),
                       "normaliser": normaliser, "unnormalised_statistic": float(s)})
