"""KLCE^2 on weighted rows and its consistency test (docs/weights.md; binary models here,
multi-class in :class:`VectorUnits`).

Row ``i`` holds ``t_i`` units: ``t_i = d_i`` units of weight ``f_i = 1`` for frequency
weights, one unit of weight ``f_i = d_i`` for design weights. ``K_i`` of its units are
positive; a positive unit weighs ``f_i``, a negative ``f_i / r_i`` (``r_i``: the kept rate
of negatives of label-dependent sampling, 1 without it). With the residual ``y - p_i``:

* ``R_i = f_i (K_i (1 - p_i) - (t_i - K_i) p_i / r_i)``, the weighted residual sum of row ``i``;
* ``A = sum_i f_i (K_i + (t_i - K_i) / r_i)`` (total weight),
  ``S2 = sum_i f_i^2 (K_i + (t_i - K_i) / r_i^2)`` (sum of squared unit weights),
  ``U = sum_i k_ii f_i^2 (K_i (1 - p_i)^2 + (t_i - K_i) p_i^2 / r_i^2)`` (units with themselves);
* ``KLCE^2_w = (sum_{i != j} k_ij R_i R_j + sum_i k_ii R_i^2 - U) / (A^2 - S2)``,

the weighted U-statistic of Vashistha & Farahi's eq. 4 over pairs of distinct units.

Null: ``K_i ~ Binomial(t_i, q_i)`` with ``q_i = p_i``, or ``q_i = p_i / (p_i + r_i (1 - p_i))``
under label-dependent sampling; each redraw's ``R``, ``A``, ``S2`` and ``U`` are recomputed,
so the Monte-Carlo p-value ``(1 + #{T* >= T}) / (1 + B)`` is exact.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calaudit.numerics.kernels import Gram
from calaudit.numerics.pairwise import kernel_forms_and_matmul
from calaudit.numerics.resampling import form_error_factor

#: Rows of one chunk of redraws (bounded temporaries).
DRAW_ENTRIES = 4_000_000


@dataclass(frozen=True)
class WeightedUnits:
    """The per-row quantities of the module docstring: ``p`` (positive-class
    probability), ``q`` (null law of a sampled positive), ``t`` (units), ``f`` (unit
    weight factor), ``r`` (kept rate of negatives) and whether ``t`` may exceed 1."""

    p: NDArray[np.float64]
    q: NDArray[np.float64]
    t: NDArray[np.float64]
    f: NDArray[np.float64]
    r: NDArray[np.float64]
    frequency: bool

    @classmethod
    def of(cls, weights, p: NDArray[np.float64]) -> WeightedUnits:
        """From :class:`calaudit.data.weights.SampleWeights` and ``p_1``."""
        p = np.asarray(p, dtype=np.float64)
        rate = weights.negative_rate
        return cls(p, np.asarray(weights.null_positive_rate(p), dtype=np.float64),
                   *weights.unit_split(),
                   np.ones(p.size) if rate is None else np.asarray(rate, np.float64),
                   weights.kind == "frequency")

    def observed_events(self, y: NDArray[np.integer]) -> NDArray[np.float64]:
        """``K`` of the observed labels (n, 1): every unit of a row shares its label."""
        return (self.t * (np.asarray(y) == 1))[:, None]

    def residuals(self, events: NDArray[np.float64]) -> NDArray[np.float64]:
        """``R`` (n, B) of event counts ``K`` (n, B)."""
        p, r = self.p[:, None], self.r[:, None]
        return self.f[:, None] * (events * (1.0 - p) - (self.t[:, None] - events) * p / r)

    def sums(self, events: NDArray[np.float64], residual: NDArray[np.float64],
             diagonal: NDArray[np.float64]) -> NDArray[np.float64]:
        """``(A, S2, sum_i k_ii R_i^2 - U)`` of every column, (3, B)."""
        f, t, p, r = (x[:, None] for x in (self.f, self.t, self.p, self.r))
        negative = t - events
        total = (f * (events + negative / r)).sum(axis=0)
        squares = (f * f * (events + negative / (r * r))).sum(axis=0)
        own = f * f * (events * (1.0 - p) ** 2 + negative * p * p / (r * r))
        inner = (diagonal[:, None] * (residual * residual - own)).sum(axis=0)
        return np.vstack([total, squares, inner])

    def draw(self, rng: np.random.Generator, count: int) -> NDArray[np.float64]:
        """``K`` (n, count) redrawn from the null: uniforms row chunk by row chunk
        (Bernoulli, one unit per row), else binomial counts of the units."""
        if self.frequency and (self.t != 1).any():
            return rng.binomial(self.t.astype(np.int64)[:, None], self.q[:, None],
                                size=(self.t.size, count)).astype(np.float64)
        out = np.empty((self.t.size, count))
        step = max(1, DRAW_ENTRIES // max(count, 1))
        for start in range(0, self.t.size, step):
            stop = min(self.t.size, start + step)
            out[start:stop] = rng.random((stop - start, count)) < self.q[start:stop, None]
        return out

    def mass(self) -> float:
        """A bound on ``sum_i |R_i|`` over every redraw (the rounding bound's scale)."""
        return float((self.f * self.t * np.maximum(1.0, 1.0 / self.r)).sum())


def klce2_value(forms: NDArray[np.float64], sums: NDArray[np.float64]) -> NDArray[np.float64]:
    """``KLCE^2_w`` of every column from its off-diagonal forms and :meth:`~WeightedUnits.sums`
    (NaN where fewer than two units carry weight)."""
    total, squares, inner = sums
    denominator = total * total - squares
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, (forms + inner) / denominator, np.nan)


def unit_sampler(units: WeightedUnits | VectorUnits, diagonal: NDArray[np.float64],
                 found: list[NDArray[np.float64]]) -> Callable:
    """A sampler for :func:`calaudit.local.resampling.batched_forms`: fills the columns
    with redrawn ``R`` and appends each batch's :meth:`~WeightedUnits.sums` to ``found``."""
    def draw(rng: np.random.Generator, out: NDArray[np.float64]) -> None:
        events = units.draw(rng, out.shape[-1])
        out[:] = units.residuals(events)
        found.append(units.sums(events, out, diagonal))
    return draw


def tie_tolerance(units: WeightedUnits | VectorUnits, n: int, denominator: float) -> float:
    """Replicates this close below the observed statistic count as ties: twice the
    float64 rounding bound of a form (:func:`calaudit.numerics.resampling.form_error_factor`
    times ``(sum |R|)^2``) over the observed denominator."""
    if not denominator > 0:
        return 0.0
    return 2.0 * form_error_factor(n, np.float64) * units.mass() ** 2 / denominator


def weighted_klce2(gram: Gram, y: NDArray[np.integer],
                   units: WeightedUnits | VectorUnits) -> float:
    """``KLCE^2_w`` of the observed labels (module docstring), one engine pass."""
    events = units.observed_events(y)
    residual = units.residuals(events)
    forms = kernel_forms_and_matmul(gram, residual)[0]
    return float(klce2_value(forms, units.sums(events, residual, gram.diagonal()))[0])


@dataclass(frozen=True)
class VectorUnits:
    """Multi-class rows with label-independent weights (module docstring with vector
    residuals ``e_y - p_i`` and ``r = 1``): ``C_ik`` of the ``t_i`` units of row ``i``
    have label ``k``; ``R_i = f_i (C_i - t_i p_i)``, ``A = sum f t``, ``S2 = sum f^2 t`` and
    ``U = sum_i k_ii f_i^2 sum_k C_ik |e_k - p_i|^2``. Null: ``C_i ~ Multinomial(t_i,
    p_i)``."""

    proba: NDArray[np.float64]
    t: NDArray[np.float64]
    f: NDArray[np.float64]
    frequency: bool

    @classmethod
    def of(cls, weights, proba: NDArray[np.float64]) -> VectorUnits:
        proba = np.asarray(proba, dtype=np.float64)
        return cls(proba, *weights.unit_split(), weights.kind == "frequency")

    def observed_events(self, y: NDArray[np.integer]) -> NDArray[np.float64]:
        """``C`` (n, m, 1) of the observed labels."""
        counts = np.zeros(self.proba.shape + (1,))
        counts[np.arange(self.t.size), np.asarray(y), 0] = self.t
        return counts

    def residuals(self, counts: NDArray[np.float64]) -> NDArray[np.float64]:
        """``R`` (n, m, B) of counts ``C`` (n, m, B)."""
        return self.f[:, None, None] * (counts - self.t[:, None, None] * self.proba[:, :, None])

    def sums(self, counts: NDArray[np.float64], residual: NDArray[np.float64],
             diagonal: NDArray[np.float64]) -> NDArray[np.float64]:
        """``(A, S2, sum_i k_ii |R_i|^2 - U)`` of every column, (3, B)."""
        b = counts.shape[2]
        norms = 1.0 - 2.0 * self.proba + (self.proba ** 2).sum(axis=1, keepdims=True)
        own = (self.f ** 2)[:, None] * np.einsum("imb,im->ib", counts, norms)
        inner = (diagonal[:, None] * ((residual * residual).sum(axis=1) - own)).sum(axis=0)
        return np.vstack([np.full(b, float((self.f * self.t).sum())),
                          np.full(b, float((self.f * self.f * self.t).sum())), inner])

    def draw(self, rng: np.random.Generator, count: int) -> NDArray[np.float64]:
        """``C`` (n, m, count): multinomial counts by sequential binomials (class ``k`` of
        the units left, with probability ``p_k / (1 - sum_{j<k} p_j)``)."""
        n, m = self.proba.shape
        out = np.zeros((n, m, count))
        left = np.repeat(self.t.astype(np.int64)[:, None], count, axis=1)
        mass = np.ones(n)
        for k in range(m - 1):
            share = np.clip(self.proba[:, k] / np.where(mass > 0, mass, 1.0), 0.0, 1.0)
            drawn = rng.binomial(left, share[:, None])
            out[:, k] = drawn
            left = left - drawn
            mass = mass - self.proba[:, k]
        out[:, m - 1] = left
        return out

    def mass(self) -> float:
        return float((self.f * self.t).sum()) * math.sqrt(2.0)
