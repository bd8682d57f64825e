"""The row passes of the feature tests as reductions over fixed row blocks.

For residuals ``r_i = c (e_{y_i} - p_i)`` (binary: ``c (y_i - p_i1)``; ``c = sqrt(2)`` for
the SKCE) one pass gives (:mod:`calaudit.inference.feature_tests` assembles them):

* ``G_k = Phi^T [Y_k | Y*_k]`` (D x (1 + B)): observed and redrawn label indicators;
* ``v_k = Phi^T p_k``, so that ``Phi^T r = c (G_k - v_k)``;
* the diagonal ``sum_i |phi_i|^2 |r_i|^2 = c^2 (sum_i |phi_i|^2 sum_k p_ik^2 +
  sum_k sum_i Y_ik |phi_i|^2 (1 - 2 p_ik))``;
* optionally ``Phi^T L`` of lead columns ``L``, and the Arcones-Gine bootstrap forms
  ``Psi^T [1 | C]`` (``psi_i = phi_i r_i``, counts ``C``), ``C . h``, ``(C o C) . h``,
  ``sum C^2`` with ``h_i = |psi_i|^2``.

Every block product is an exact float32 GEMM (``Phi``, ``Psi`` on grids of at most 11-bit
integers; labels and counts small integers; real weights as exact parts), so each
resample's statistic is the same function of its labels as the observed one. Labels come
from the stream ``(seed, stream, block)``, counts from ``(boot_seed, boot_stream, block)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.numerics.block_draws import (
    binary_labels_into,
    block_counts,
    label_indicators,
    label_thresholds,
)
from calaudit.numerics.features import (
    EXACT_WEIGHT,
    FourierFeatures,
    exact_parts,
    exact_products,
    grid_exponent,
    to_grid,
)
from calaudit.scale import block_rng, blocks

#: Parts of each real-valued weight (:func:`exact_parts`): 47 bits below its bound.
PARTS = 4


def _bound_of_norm(features: FourierFeatures) -> float:
    """A bound on ``|phi_i|^2`` of the quantised map (1 up to rounding)."""
    step = 2.0 ** -(features.grid + 1)
    return (1.0 + math.sqrt(features.n_features) * step) ** 2 * (1 + 1e-9)


def psi_exponent(features: FourierFeatures, residuals: NDArray[np.float64]) -> int:
    """Grid of ``psi_i = phi_i r_ik`` (entries at most ``max|phi| max|r|``)."""
    top = math.sqrt(1.0 / features.frequencies.shape[1]) + 2.0 ** -(features.grid + 1)
    return grid_exponent(top * max(float(np.max(np.abs(residuals))), 1e-12) * (1 + 1e-9))


def _zeros(n_features: int, classes: int, columns: int, lead: int, boot: int
           ) -> dict[str, NDArray[np.float64]]:
    out = {"G": np.zeros((classes, n_features, columns)),
           "v": np.zeros((classes, n_features, PARTS)),
           "wy": np.zeros((PARTS, columns)), "c0": np.zeros(PARTS)}
    if lead:
        out["lead"] = np.zeros((lead, n_features, PARTS))
    if boot:
        out.update(P=np.zeros((classes, n_features, boot + 1)),
                   bd=np.zeros((PARTS, boot + 1)), bsq=np.zeros((PARTS, boot)),
                   ties=np.zeros(boot))
    return out


def label_partial(start: int, stop: int, *, features: FourierFeatures, rows: Any,
                  labels: int, seed: int, stream: str, n_resamples: int,
                  lead_bounds: NDArray[np.float64] | None = None,
                  boot_totals: NDArray[np.int64] | None = None, boot_seed: int = 0,
                  boot_stream: str = "", psi_grid: int = 0, h_bound: float = 1.0
                  ) -> dict[str, NDArray]:
    """The exact partial sums of the rows ``[start, stop)`` of the row source ``rows``
    (:func:`label_rows`: ``x``, ``proba`` and ``observed`` (n, k), binary ``p_1`` and ``y``;
    ``lead`` (n, q) with ``lead_bounds``; ``residuals`` (n, k) with the bootstrap).
    ``labels``: indicator matrices per draw (1 binary, else ``m``)."""
    names = ["x", "proba", "observed"] + (["lead"] if lead_bounds is not None else []) + (
        ["residuals"] if boot_totals is not None else [])
    read = rows.read(start, stop, names)
    x, proba, observed = read["x"], read["proba"], read["observed"]
    lead, residuals = read.get("lead"), read.get("residuals")
    thresholds = None
    if n_resamples:
        thresholds = label_thresholds(proba[:, 0] if labels == 1 else proba)
    classes, d = proba.shape[1], features.n_features
    columns = 1 + n_resamples
    boot = 0 if boot_totals is None else boot_totals.shape[1]
    out = _zeros(d, classes, columns, 0 if lead is None else lead.shape[1], boot)
    w_bound = _bound_of_norm(features)
    for block, lo, hi in blocks(start, stop):
        count, lo, hi = hi - lo, lo - start, hi - start  # rows of the block, in the range
        phi = features.quantised(x[lo:hi])
        phi64 = phi.astype(np.float64)
        norm = np.einsum("ij,ij->i", phi64, phi64)
        p = proba[lo:hi]
        y = np.empty((count, columns), dtype=np.float32)
        drawn = None
        if n_resamples and labels == 1:  # binary: the redrawn labels straight into y
            binary_labels_into(block_rng(seed, stream, block), thresholds[lo:hi], y[:, 1:])
        elif n_resamples:
            drawn = label_indicators(block_rng(seed, stream, block), thresholds[lo:hi],
                                     n_resamples, labels)
        for k in range(classes):
            y[:, 0] = observed[lo:hi, k]
            if drawn is not None:
                y[:, 1:] = drawn[k]
            weights = exact_parts(norm * (1.0 - 2.0 * p[:, k]), w_bound, PARTS)
            # one float32 GEMM: [Phi | weight parts]^T Y (exact)
            product = exact_products(np.hstack([phi, weights.T]), y, count)
            out["G"][k] += product[:d]
            out["wy"] += product[d:]
            out["v"][k] += phi64.T @ exact_parts(p[:, k], 1.0, PARTS).T.astype(np.float64)
        del y, drawn  # the bootstrap's counts take their place
        squares = exact_parts(norm * np.einsum("ik,ik->i", p, p), w_bound * classes, PARTS)
        out["c0"] += squares.astype(np.float64).sum(axis=1)
        if lead is not None:
            for j in range(lead.shape[1]):
                parts = exact_parts(lead[lo:hi, j], float(lead_bounds[j]), PARTS)
                out["lead"][j] += phi64.T @ parts.T.astype(np.float64)
        if boot:
            _bootstrap_block(out, phi64, residuals[lo:hi], psi_grid, h_bound,
                             boot_totals[block], block_rng(boot_seed, boot_stream, block))
    return out


def _bootstrap_block(out: dict, phi64: NDArray[np.float64], r: NDArray[np.float64],
                     psi_grid: int, h_bound: float, totals: NDArray[np.int64],
                     rng: np.random.Generator) -> None:
    """Add one block's bootstrap sums (module docstring) to ``out``."""
    rows, d = phi64.shape
    counts = block_counts(rng, rows, totals).T  # (rows, B), a transposed view
    column_total = float(totals.max())
    psi = [to_grid(phi64 * r[:, k:k + 1], psi_grid) for k in range(r.shape[1])]
    h = np.zeros(rows)
    for part in psi:
        part64 = part.astype(np.float64)
        h += np.einsum("ij,ij->i", part64, part64)
    parts = exact_parts(h, h_bound, PARTS)
    out["bd"][:, 0] += parts.astype(np.float64).sum(axis=1)
    for k, part in enumerate(psi):
        out["P"][k][:, 0] += part.astype(np.float64).sum(axis=0)
        if k < len(psi) - 1:
            out["P"][k][:, 1:] += exact_products(part, counts, column_total)
        else:  # the diagonal's parts ride along: [Psi_k | h parts]^T C
            product = exact_products(np.hstack([part, parts.T]), counts, column_total)
            out["P"][k][:, 1:] += product[:d]
            out["bd"][:, 1:] += product[d:]
    squared = np.multiply(counts, counts, out=counts)  # counts are not used again
    ties = squared.sum(axis=0, dtype=np.float64)
    out["ties"] += ties
    # sum_i c_i^2 is about 2 rows: parts on grids with twice the budget
    weight = 2 * EXACT_WEIGHT
    parts = exact_parts(h, h_bound, PARTS, weight)
    out["bsq"] += exact_products(parts.T, squared, float(ties.max()), weight)


def h_bound_of(features: FourierFeatures, residuals: NDArray[np.float64], psi_grid: int
               ) -> float:
    """A bound on ``h_i = sum_k |psi_ik|^2`` of the rounded ``psi``."""
    slack = math.sqrt(features.n_features) * 2.0 ** -(psi_grid + 1)
    root = math.sqrt(_bound_of_norm(features)) * np.abs(residuals) + slack
    return float(np.max(np.sum(root * root, axis=1))) * (1 + 1e-9) + 1e-300


def statistics(total: dict[str, NDArray], n: int, scale: float) -> NDArray[np.float64]:
    """``T = (|Phi^T r|^2 - sum_i |phi_i|^2 |r_i|^2) / (n (n - 1))`` of every column
    (0: observed, then the redraws), from the summed partials."""
    a = scale * (total["G"] - total["v"].sum(axis=2)[:, :, None])
    diagonal = scale * scale * (total["wy"].sum(axis=0) + total["c0"].sum())
    return (np.einsum("kdb,kdb->b", a, a) - diagonal) / (n * (n - 1))


def label_rows(x: NDArray[np.float64], proba: NDArray[np.float64],
               observed: NDArray[np.uint8]) -> dict[str, NDArray]:
    """The per-row columns :func:`label_partial` reads from its row source."""
    return {"x": x, "proba": proba, "observed": observed}


def shared_labels(features: FourierFeatures, labels: int, seed: int, stream: str,
                  n_resamples: int) -> dict[str, Any]:
    """The ``shared`` dict of :func:`label_partial` (no rows, lead or bootstrap)."""
    return {"features": features, "labels": labels, "seed": int(seed), "stream": stream,
            "n_resamples": int(n_resamples)}


def bootstrap_shared(features: FourierFeatures, residuals: NDArray[np.float64],
                     totals: NDArray[np.int64], seed: int, stream: str) -> dict[str, Any]:
    """The bootstrap entries of :func:`label_partial`'s ``shared``."""
    grid = psi_exponent(features, residuals)
    return {"boot_totals": totals, "boot_seed": int(seed), "boot_stream": stream,
            "psi_grid": grid, "h_bound": h_bound_of(features, residuals, grid)}


def resample_partial(start: int, stop: int, *, features: FourierFeatures, rows: Any,
                     r: NDArray[np.float64], seed: int, stream: str, n_resamples: int
                     ) -> dict[str, NDArray]:
    """Residual bootstrap (KLCE Algorithm 1): ``Phi^T R*`` (k, D, 1 + B), column 0 the
    observed ``r`` (n, k, all rows), ``R*_ib = r_{J_ib}`` (uniform ``J`` from the block
    streams), and ``sum_i |phi_i|^2 |R*_i|^2``; ``x`` from the row source ``rows``."""
    n, classes = r.shape
    x = rows.read(start, stop, ["x"])["x"]
    out = {"A": np.zeros((classes, features.n_features, 1 + n_resamples)),
           "diag": np.zeros(1 + n_resamples)}
    for block, lo, hi in blocks(start, stop):
        phi64 = features.quantised(x[lo - start:hi - start]).astype(np.float64)
        norm = np.einsum("ij,ij->i", phi64, phi64)
        index = block_rng(seed, stream, block).integers(0, n, size=(hi - lo, n_resamples))
        for k in range(classes):
            z = np.empty((hi - lo, 1 + n_resamples))
            z[:, 0] = r[lo:hi, k]
            z[:, 1:] = r[index, k]
            out["A"][k] += phi64.T @ z
            out["diag"] += norm @ (z * z)
    return out


def resample_statistics(total: dict[str, NDArray], n: int) -> NDArray[np.float64]:
    """``T`` of every column of :func:`resample_partial`'s sums."""
    a = total["A"]
    return (np.einsum("kdb,kdb->b", a, a) - total["diag"]) / (n * (n - 1))
