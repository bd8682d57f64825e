"""Resampling draws, vectorised over resamples (one column per resample).

* bootstrap counts: ``C[i, b]`` = times row ``i`` is drawn in resample ``b`` (n draws with
  replacement); a statistic of the resample is then a count-weighted statistic of the data;
* consistency draws: labels ``y*_i ~ Cat(p_i)`` with the predictions kept fixed (Broecker &
  Smith 2007; under "the model is calibrated" this is the exact conditional null).

Every function takes the caller's ``numpy.random.Generator``; nothing here seeds itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtr

from calaudit.numerics.grams import DenseGram
from calaudit.numerics.kernels import Gram

#: Default size, in entries, of one batch of resampled columns (about 160 MB of float64).
BATCH_ENTRIES = 20_000_000


def batch_sizes(total: int, rows: int, max_entries: int = BATCH_ENTRIES) -> Iterator[int]:
    """Split ``total`` resamples into batches of at most ``max_entries / rows`` columns."""
    width = max(1, min(total, max_entries // max(rows, 1)))
    done = 0
    while done < total:
        size = min(width, total - done)
        yield size
        done += size


def bootstrap_counts(rng: np.random.Generator, n: int, size: int) -> NDArray[np.float64]:
    """(n, size) bootstrap counts: column ``b`` counts how often each of the ``n`` rows is
    drawn when ``n`` rows are drawn uniformly with replacement (a multinomial(n, 1/n))."""
    draws = rng.integers(0, n, size=(size, n))
    draws += (np.arange(size) * n)[:, None]
    counts = np.bincount(draws.ravel(), minlength=size * n).reshape(size, n)
    return counts.T.astype(np.float64)


def categorical_draws(rng: np.random.Generator, probs: NDArray[np.float64], size: int
                      ) -> NDArray[np.intp]:
    """(n, size) labels with ``y[i, b] ~ Cat(probs[i])``, by inversion of the cumulative
    probabilities (the last class takes any rounding remainder of a row's sum)."""
    return labels_from_uniforms(rng.random((probs.shape[0], size)),
                                np.cumsum(probs, axis=1)[:, :-1])


def labels_from_uniforms(u: NDArray[np.float64], cumulative: NDArray[np.float64]
                         ) -> NDArray[np.intp]:
    """Inversion: ``y[i, b] = #{k < m - 1 : u[i, b] >= F_ik}`` for uniforms ``u`` (n, size)
    and cumulative probabilities ``F`` (n, m - 1) without the last column."""
    labels = np.zeros(u.shape, dtype=np.intp)
    for k in range(cumulative.shape[1]):
        labels += u >= cumulative[:, k, None]
    return labels


def one_hot_residuals(labels: NDArray[np.intp], probs: NDArray[np.float64],
                      out: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """(n, m, size) residuals ``e_{y[i, b]} - p_i`` for labels of shape (n, size), written
    into ``out`` when given."""
    n, m = probs.shape
    if out is None:
        out = np.empty((n, m, labels.shape[1]))
    out[:] = -probs[:, :, None]
    rows = np.arange(n)[:, None]
    cols = np.arange(labels.shape[1])[None, :]
    out[rows, labels, cols] += 1.0
    return out


def monte_carlo_pvalue(observed: float, null: NDArray[np.float64], rtol: float = 1e-12,
                       atol: float = 0.0) -> float:
    """``(1 + #{T* >= T}) / (1 + B)``; replicates within ``max(rtol |T|, atol)`` below ``T``
    count as ties (``atol``: the caller's bound on the rounding error of ``T* - T``, e.g.
    :func:`form_error_bound`). A NaN statistic has a NaN p-value."""
    if np.isnan(observed):
        return math.nan
    tolerance = max(rtol * max(abs(observed), np.finfo(np.float64).tiny), atol)
    extreme = int(np.count_nonzero(np.asarray(null) >= observed - tolerance))
    return (1.0 + extreme) / (1.0 + np.asarray(null).size)


def form_error_factor(n: int, dtype: type) -> float:
    """``c_n u`` of the rounding bound of a kernel quadratic form in ``dtype`` (Higham
    2002, sec. 3.1): for ``F = sum_{i != j} K_ij <z_i, z_j>``, ``|fl(F) - F| <= (2n + 64) u
    S`` with ``S = sum_{i != j} |K_ij| |z_i| |z_j| <= (sum_i |z_i|)^2`` (``0 <= K <= 1``)."""
    return (2.0 * n + 64.0) * float(np.finfo(dtype).eps) / 2.0


def form_error_bound(n: int, dtype: type, max_sq_norm: float = 2.0) -> float:
    """Bound on the rounding error of ``F / (n (n - 1))`` in ``dtype`` when every
    ``|z_i|^2 <= max_sq_norm``: :func:`form_error_factor` times ``n max_sq_norm / (n - 1)``."""
    return form_error_factor(n, dtype) * max_sq_norm * n / max(n - 1, 1)


def column_mass(z: NDArray) -> NDArray[np.float64]:
    """``sum_i |z_i|`` of every column of ``z`` ((n, B) or (n, m, B), norm over classes)."""
    if z.ndim == 2:
        return np.abs(z).sum(axis=0, dtype=np.float64)
    return np.sqrt(np.einsum("imb,imb->ib", z, z, dtype=np.float64)).sum(axis=0)


def refine_near(values: NDArray[np.float64], z: NDArray, observed: float, factor: float,
                tie: float, exact: Callable[[NDArray], NDArray[np.float64]]) -> None:
    """Recompute in place, with ``exact`` (float64), the unnormalised forms ``values`` whose
    comparison with ``observed`` rounding could flip: ``|F* - F| <= 2 (factor mass^2 +
    tie)`` with the columns' :func:`column_mass`."""
    near = near_columns(values, column_mass(z), observed, factor, tie)
    if near.size:
        values[near] = exact(np.take(z, near, axis=-1))


def near_columns(values: NDArray[np.float64], mass: NDArray[np.float64], observed: float,
                 factor: float, tie: float) -> NDArray[np.intp]:
    """The columns :func:`refine_near` recomputes, from their :func:`column_mass`."""
    band = 2.0 * (factor * mass ** 2 + tie)
    return np.flatnonzero(np.abs(values - observed) <= band)


#: ns per kernel entry of a pass of the pairwise engine: evaluating it (double or single
#: precision), copying it from a cached Gram, multiplying it with one column
#: (``benchmarks/exact_refine.py``; only the ratios matter).
PASS_COST_NS = {"kernel64": 13.0, "kernel32": 7.0, "copy": 1.0, "gemm64": 0.059,
                "gemm32": 0.032}

#: Pilot columns and evenly spaced rows of :func:`predicted_near_share`, and the seed of
#: the pilot's own stream (the test's stream is not touched).
PILOT_COLUMNS, PILOT_ROWS, PILOT_SEED = 64, 1024, 20261123


def _kernel_costs(gram: Gram) -> tuple[float, float]:
    """(double, single) precision cost of one kernel entry in a pass over ``gram``."""
    c = PASS_COST_NS
    if isinstance(gram, DenseGram):
        return c["copy"], c["copy"]
    native = getattr(gram, "supports_dtype", False)
    return c["kernel64"], c["kernel32"] if native else c["kernel64"] + c["copy"]


def single_precision_pays(gram: Gram, columns: int, near_share: float,
                          observed_pass: bool = False) -> bool:
    """Whether a single-precision pass over ``columns`` columns plus :func:`refine_near`'s
    double-precision pass over the share ``near_share`` of them is expected to cost less
    than one double-precision pass (the p-value is the same either way).
    ``observed_pass``: the single-precision way also needs a double pass for the observed
    form."""
    k64, k32 = _kernel_costs(gram)
    c = PASS_COST_NS
    refined = 1.0 - (1.0 - near_share) ** columns  # P(the refinement pass runs at all)
    single = k32 + columns * c["gemm32"] + refined * (k64 + near_share * columns * c["gemm64"])
    single += k64 if observed_pass else 0.0
    return single < k64 + columns * c["gemm64"]


def subsample_forms(gram: Gram, z: NDArray, rows: int = PILOT_ROWS) -> NDArray[np.float64]:
    """``(n / m) sum_{i != j in S} K_ij <z_i, z_j>`` of every column of ``z`` ((n, q) or
    (n, m, q)) over ``m`` (about ``rows``) evenly spaced rows ``S``."""
    n = gram.n
    sub = slice(0, n, max(1, n // rows))
    block = gram.block(sub, sub)
    np.fill_diagonal(block, 0.0)
    m = block.shape[0]
    z = z[sub].reshape(m, -1, z.shape[-1])
    return np.einsum("icq,icq->q", z, np.tensordot(block, z, axes=(1, 0))) * (n / m)


def predicted_near_share(gram: Gram, pilot: NDArray, observed: float, factor: float,
                         tie: float, rows: int = PILOT_ROWS) -> float:
    """Expected share ``P(|F* - F| <= band)`` of replicates :func:`refine_near` would
    recompute, from ``pilot`` columns drawn like the replicates: each ``F*`` estimated on
    ``rows`` evenly spaced rows (:func:`subsample_forms`, about the law over all ``n`` for a
    degenerate U-statistic, Serfling 1980, sec. 5.5.2), smoothed by a normal kernel
    (Silverman's bandwidth). Chooses a precision, never decides ``T* >= T``."""
    forms = subsample_forms(gram, pilot, rows)
    band = 2.0 * (factor * column_mass(pilot) ** 2 + tie)
    spread = min(forms.std(), np.subtract(*np.percentile(forms, [75, 25])) / 1.34)
    width = 0.9 * spread * forms.size ** -0.2
    gap = observed - forms
    if not width > 0:
        return float(np.mean(np.abs(gap) <= band))
    return float(np.mean(ndtr((gap + band) / width) - ndtr((gap - band) / width)))


def pass_dtype(gram: Gram, dtype: type, columns: int, pilot: Callable[[int], NDArray],
               observed: float | None, factor: float, tie: float,
               lead: NDArray | None = None) -> type:
    """The precision of a pass of ``columns`` resampled forms: ``dtype`` unless it is
    single precision and :func:`single_precision_pays` says no (with the share of
    ``pilot(q)`` columns, ``q <= min(PILOT_COLUMNS, columns)``). ``observed=None``:
    :func:`subsample_forms` of the observed column ``lead`` stands for the observed form."""
    if dtype == np.float64:
        return dtype
    unknown = observed is None
    if unknown:  # not computed yet: its subsample estimate, with the pilot's law
        observed = float(subsample_forms(gram, lead)[0])
    share = predicted_near_share(gram, pilot(max(1, min(PILOT_COLUMNS, columns))), observed,
                                 factor, tie)
    return dtype if single_precision_pays(gram, columns, share, unknown) else np.float64
