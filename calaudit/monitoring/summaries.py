"""Per-window summaries in one O(n) pass: counts, calibration-in-the-large, slope, ECE, bias.

* ``citl`` and ``slope`` with Wald intervals (:mod:`calaudit.monitoring.fits`);
* ``ece``: top-label ``sum_b (n_b / n) |ybar_b - pbar_b|`` over ``n_bins`` equal-width bins
  (bin ``min(floor(B p), B - 1)``; Guo et al. 2017, eq. 3), its percentile interval from the
  Poisson bootstrap (Hanley & MacGibbon 2006; a bin of at least :data:`LARGE_BIN` rows draws
  its sums from the normal law of the same mean and covariance), seeded by
  ``(seed, window number)``;
* per group: ``n``, events, mean prediction, observed rate and the bias ``mean(y - p)`` with
  the Wald interval ``bias +- z sd(y - p) / sqrt(n)``.

Multi-class predictions are summarised top-label (:func:`top_label`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calaudit.monitoring.fits import Estimate, citl_fit, slope_fit
from calaudit.numerics.binning import uniform_bin_index
from calaudit.numerics.distributions import norm_ppf

#: Bootstrap replicates of a window's ECE interval, rows per bootstrap chunk.
N_BOOT = 200
_CHUNK = 65_536
#: Bins with at least this many rows draw their bootstrap sums from the normal law with
#: the Poisson bootstrap's mean and covariance (:func:`_normal_bin_sums`).
LARGE_BIN = 2_000


@dataclass(frozen=True)
class GroupSummary:
    """One group in one window (``bias`` = observed rate - mean prediction)."""

    covariate: str
    level: str
    n: int
    events: float
    mean_prediction: float
    bias: Estimate


@dataclass(frozen=True)
class WindowSummary:
    """One window's summaries (module docstring); ``number`` is 1-based over the whole
    monitoring run."""

    number: int
    key: int | str
    label: str
    start: str | None
    end: str | None
    n: int
    events: float
    mean_prediction: float
    citl: Estimate
    slope: Estimate
    ece: Estimate
    groups: tuple[GroupSummary, ...] = ()
    #: per bin of the ECE: row count, sum of predictions, sum of outcomes (the
    #: reliability diagram)
    bins: tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]] = ((), (), ())

    @property
    def observed_rate(self) -> float:
        return self.events / self.n


def top_label(probs: NDArray[np.float64], labels: NDArray[np.int64]
              ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Binary ``(p, y)`` of predictions: the positive-class probability and label for one
    column, else the top-label confidence ``max_k p_k`` and ``1{argmax_k p_k = label}``
    (ties: the first class)."""
    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(labels)
    if probs.ndim == 1:
        return probs, labels.astype(np.float64)
    top = np.argmax(probs, axis=1)
    return probs[np.arange(probs.shape[0]), top], (top == labels).astype(np.float64)


def summarize_window(p: NDArray[np.float64], y: NDArray[np.float64], *, number: int,
                     key: int | str, label: str, start: str | None = None,
                     end: str | None = None,
                     groups: Sequence[tuple[str, Sequence[str], NDArray[np.int64]]] = (),
                     n_bins: int = 15, level: float = 0.95, seed: int = 0,
                     n_boot: int = N_BOOT) -> WindowSummary:
    """The :class:`WindowSummary` of one window's rows. ``groups``: per covariate its
    name, level names and each row's level code (-1: no level)."""
    index = uniform_bin_index(p, n_bins)  # the audit's bins: the audit's ECE of the rows
    sums = tuple(tuple(float(x) for x in np.bincount(index, w, minlength=n_bins))
                 for w in (None, p, y))
    return WindowSummary(
        number=number, key=key, label=label, start=start, end=end, n=int(p.size),
        events=float(np.sum(y)), mean_prediction=float(np.mean(p)),
        citl=citl_fit(p, y).estimate(0, level), slope=slope_fit(p, y).estimate(1, level),
        ece=ece_estimate(p, y, n_bins, level, np.random.default_rng([seed, number]),
                         n_boot),
        groups=tuple(g for name, levels, codes in groups
                     for g in group_summaries(p, y, name, levels, codes, level)),
        bins=sums)


def ece_from_bins(count: NDArray[np.float64], sum_p: NDArray[np.float64],
                  sum_y: NDArray[np.float64]) -> NDArray[np.float64]:
    """``sum_b |sum_y_b - sum_p_b| / n`` over bins on the last axis (= the weighted mean
    of ``|ybar_b - pbar_b|``)."""
    return np.sum(np.abs(sum_y - sum_p), axis=-1) / np.sum(count, axis=-1)


def ece_estimate(p: NDArray[np.float64], y: NDArray[np.float64], n_bins: int, level: float,
                 rng: np.random.Generator, n_boot: int = N_BOOT) -> Estimate:
    """Binned ECE with its Poisson-bootstrap percentile interval (module docstring)."""
    bins = uniform_bin_index(p, n_bins)
    totals = np.stack([np.bincount(bins, w, minlength=n_bins) for w in (None, p, y)])
    value = float(ece_from_bins(*totals))
    large = totals[0] >= LARGE_BIN
    sums = np.zeros((3, n_boot, n_bins))
    if large.any():
        sums[:, :, large] = _normal_bin_sums(p, y, bins, large, totals, n_boot, rng)
    small_rows = np.flatnonzero(~large[bins])
    for start in range(0, small_rows.size, _CHUNK):
        rows = small_rows[start:start + _CHUNK]
        counts = rng.poisson(1.0, size=(n_boot, rows.size)).astype(np.float64)
        slot = (bins[rows] + n_bins * np.arange(n_boot)[:, None]).ravel()
        for row, weight in enumerate((counts, counts * p[rows], counts * y[rows])):
            sums[row] += np.bincount(slot, weight.ravel(),
                                     minlength=n_boot * n_bins).reshape(n_boot, n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = ece_from_bins(sums[0], sums[1], sums[2])
    replicates = replicates[np.isfinite(replicates)]
    if replicates.size < 2:
        return Estimate(value, float("nan"), float("nan"))
    low, high = np.quantile(replicates, [0.5 - level / 2.0, 0.5 + level / 2.0])
    return Estimate(value, float(low), float(high))


def _normal_bin_sums(p: NDArray[np.float64], y: NDArray[np.float64],
                     bins: NDArray[np.int64], large: NDArray[np.bool_],
                     totals: NDArray[np.float64], n_boot: int,
                     rng: np.random.Generator) -> NDArray[np.float64]:
    """Bootstrap sums ``(count, sum p, sum y)`` of the bins ``large`` (3 x n_boot x bins):
    under the Poisson bootstrap a bin's sums are ``sum_i c_i (1, p_i, y_i)`` with
    independent ``c_i ~ Poisson(1)``, of mean ``(n_b, sum p, sum y)`` and covariance
    ``sum_i (1, p_i, y_i)^T (1, p_i, y_i)``; with at least :data:`LARGE_BIN` terms the
    normal law with these two moments stands in for it (central limit theorem), at
    O(1) cost per bin and replicate instead of O(n_b)."""
    n_bins = totals.shape[1]
    second = {(a, b): np.bincount(bins, wa * wb, minlength=n_bins)
              for (a, wa), (b, wb) in ((("p", p), ("p", p)), (("p", p), ("y", y)),
                                       (("y", y), ("y", y)))}
    out = []
    for b in np.flatnonzero(large):
        n, sp, sy = totals[:, b]
        cov = np.array([[n, sp, sy], [sp, second["p", "p"][b], second["p", "y"][b]],
                        [sy, second["p", "y"][b], second["y", "y"][b]]])
        values, vectors = np.linalg.eigh(cov)
        root = vectors * np.sqrt(np.clip(values, 0.0, None))
        out.append(totals[:, b] + rng.standard_normal((n_boot, 3)) @ root.T)
    return np.stack(out, axis=-1).transpose(1, 0, 2)


def group_summaries(p: NDArray[np.float64], y: NDArray[np.float64], covariate: str,
                    levels: Sequence[str], codes: NDArray[np.int64],
                    level: float) -> list[GroupSummary]:
    """One :class:`GroupSummary` per level of ``covariate``."""
    z = float(norm_ppf(0.5 + level / 2.0))
    out = []
    for code, name in enumerate(levels):
        mask = codes == code
        n = int(np.count_nonzero(mask))
        if n == 0:
            out.append(GroupSummary(covariate, name, 0, 0.0, float("nan"),
                                    Estimate.missing()))
            continue
        residual = y[mask] - p[mask]
        bias = float(np.mean(residual))
        half = z * float(np.std(residual, ddof=1)) / np.sqrt(n) if n > 1 else float("nan")
        out.append(GroupSummary(covariate, name, n, float(np.sum(y[mask])),
                                float(np.mean(p[mask])),
                                Estimate(bias, bias - half, bias + half)))
    return out


def window_frame(summaries: Sequence[WindowSummary]) -> pd.DataFrame:
    """One row per window: number, label, start, end, n, events, mean prediction,
    observed rate, and ``citl``, ``slope``, ``ece`` with ``_low``/``_high`` columns."""
    rows = []
    for s in summaries:
        row = {"window": s.number, "label": s.label, "start": s.start, "end": s.end,
               "n": s.n, "events": s.events, "mean_prediction": s.mean_prediction,
               "observed_rate": s.observed_rate}
        for name in ("citl", "slope", "ece"):
            est = getattr(s, name)
            row.update({name: est.value, f"{name}_low": est.low, f"{name}_high": est.high})
        rows.append(row)
    return pd.DataFrame(rows)


def group_frame(summaries: Sequence[WindowSummary]) -> pd.DataFrame:
    """One row per window and group: window, label, covariate, level, n, events, mean
    prediction, bias with ``bias_low``/``bias_high``."""
    rows = [{"window": s.number, "label": s.label, "covariate": g.covariate,
             "level": g.level, "n": g.n, "events": g.events,
             "mean_prediction": g.mean_prediction, "bias": g.bias.value,
             "bias_low": g.bias.low, "bias_high": g.bias.high}
            for s in summaries for g in s.groups]
    return pd.DataFrame(rows, columns=["window", "label", "covariate", "level", "n",
                                       "events", "mean_prediction", "bias", "bias_low",
                                       "bias_high"])
