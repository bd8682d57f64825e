"""The sequential test of calibration: an e-process over windows, valid at every look.

**Null.** For every row ``t`` in time order, ``y_t ~ Bernoulli(p_t)`` given the past,
``p_t`` and the covariates (several classes: the top-label view). A nonnegative
supermartingale ``M`` with ``M_0 = 1`` alarms at ``M >= 1/alpha`` with false-alarm
probability at most ``alpha`` over any number of looks (Ville 1939; Arnold, Henzi & Ziegel,
Ann. Appl. Stat. 17 (2023), sec. 2-3).

**Bets.** A direction ``h_t in [-1, 1]`` is a function of ``p_t``, the covariates and the
past. With ``r_t = y_t - p_t``, ``v_t = p_t (1 - p_t)`` and a bet ``lambda``, Bennett's lemma
gives ``E[exp(lambda h_t r_t - psi(lambda) h_t^2 v_t) | past] <= 1`` with
``psi(l) = e^|l| - 1 - |l|``, so window ``w`` with ``S_w = sum h_t r_t`` and
``V_w = sum h_t^2 v_t`` contributes ``e_w(lambda) = exp(lambda S_w - psi(lambda) V_w)``
(Howard, Ramdas, McAuliffe & Sekhon, Probab. Surveys 17 (2020), sec. 2). Directions:
``citl`` (``h = 1``), ``slope`` (``h = tanh((logit p_t - m) / 2)``, ``m`` the mean logit of
the earlier windows, 0 at first) and ``group g`` (``h = 1{row in g}``).

**Mixture** (Robbins 1970; Howard et al., Ann. Statist. 49 (2021), sec. 3; Waudby-Smith &
Ramdas, JRSS-B 86 (2024), sec. 5): over the bets ``LAMBDAS`` (weights ``rho_k`` equal) and
the start window ``j`` (``pi_j = 1 / (j (j + 1))``), so a late drift is not diluted::

    M_W = sum_k rho_k sum_{j <= W} pi_j prod_{w=j..W} e_w(lambda_k)  +  sum_{j > W} pi_j.

``A_k(W) = (A_k(W-1) + pi_W) e_W(lambda_k)`` keeps ``K`` numbers per direction (as
logarithms). The group e-processes are averaged, then the families ``citl``, ``slope`` and
``groups``: an average of e-processes is an e-process."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import logsumexp

from calaudit.monitoring.fits import logit

#: Bet sizes ``|lambda|``: 1/128 ... 4 (factor 2), each with both signs, equal weights.
MAGNITUDES = 2.0 ** np.arange(-7, 3)
LAMBDAS = np.concatenate([MAGNITUDES, -MAGNITUDES])


def psi(lam: NDArray[np.float64]) -> NDArray[np.float64]:
    """Bennett's ``psi(lambda) = e^|lambda| - 1 - |lambda|``."""
    a = np.abs(lam)
    return np.expm1(a) - a


def log_start_weight(j: int) -> float:
    """``log pi_j = -log(j (j + 1))`` for the 1-based window number ``j``."""
    return -float(np.log(j) + np.log(j + 1.0))


def log_tail_weight(j: int) -> float:
    """``log sum_{i > j} pi_i = -log(j + 1)``: the starts not yet reached."""
    return -float(np.log(j + 1.0))


def slope_direction(p: NDArray[np.float64], center: float | NDArray[np.float64]
                    ) -> NDArray[np.float64]:
    """``tanh((logit p - center) / 2)`` (for ``center = 0`` this is ``2p - 1``); an array
    ``center`` holds one centre per stream (all axes of ``p`` but the last)."""
    return np.tanh((logit(p) - np.asarray(center)[..., None]) / 2.0)


def window_sums(p: NDArray[np.float64], y: NDArray[np.float64],
                codes: Sequence[NDArray[np.int64]], n_groups: int,
                center: float | NDArray[np.float64]
                ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``S`` and ``V`` (module docstring) of one window for the directions ``citl``,
    ``slope``, then one per group: arrays ``(..., 2 + n_groups)``. ``p``, ``y`` and each
    covariate's ``codes`` (a row's group number among all ``n_groups``, -1 for none) have
    the rows on the last axis; leading axes are independent streams."""
    p = np.asarray(p, dtype=np.float64)
    r = np.asarray(y, dtype=np.float64) - p
    v = p * (1.0 - p)
    h = slope_direction(p, center)
    s = [np.sum(r, axis=-1), np.sum(h * r, axis=-1)]
    big_v = [np.sum(v, axis=-1), np.sum(h * h * v, axis=-1)]
    if n_groups:
        s_g = v_g = 0.0
        for covariate_codes in codes:
            s_c, v_c = _group_sums(r, v, covariate_codes, n_groups)
            s_g, v_g = s_g + s_c, v_g + v_c
        return (np.concatenate([np.stack(s, axis=-1), s_g], axis=-1),
                np.concatenate([np.stack(big_v, axis=-1), v_g], axis=-1))
    return np.stack(s, axis=-1), np.stack(big_v, axis=-1)


def _group_sums(r: NDArray[np.float64], v: NDArray[np.float64], codes: NDArray[np.int64],
                n_groups: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-group sums of ``r`` and ``v`` by one bincount over all streams (rows in
    order, so a group's sum is the same left-to-right addition in every layout)."""
    lead = r.shape[:-1]
    streams = int(np.prod(lead)) if lead else 1
    flat_codes = np.asarray(codes, dtype=np.int64).reshape(streams, -1)
    keep = flat_codes >= 0
    slot = (flat_codes + n_groups * np.arange(streams)[:, None])[keep]
    size = streams * n_groups
    s_g = np.bincount(slot, r.reshape(streams, -1)[keep], minlength=size)
    v_g = np.bincount(slot, v.reshape(streams, -1)[keep], minlength=size)
    return s_g.reshape(*lead, n_groups), v_g.reshape(*lead, n_groups)


def update_log_wealth(log_a: NDArray[np.float64] | None, j: int, s: NDArray[np.float64],
                      v: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log A_k`` after window ``j`` (1-based): ``log A_k(j) = log(A_k(j-1) + pi_j) +
    lambda_k S_j - psi(lambda_k) V_j`` for every direction; ``log_a`` is ``(..., D, K)``
    (None before the first window), ``s`` and ``v`` are ``(..., D)``."""
    start = log_start_weight(j)
    base = np.full(s.shape + (LAMBDAS.size,), start) if log_a is None else \
        np.logaddexp(log_a, start)
    return base + LAMBDAS * s[..., None] - psi(LAMBDAS) * v[..., None]


def direction_log_values(log_a: NDArray[np.float64], j: int) -> NDArray[np.float64]:
    """``log M`` of every direction after window ``j``: ``(..., D)``."""
    mixed = logsumexp(log_a, axis=-1) - np.log(LAMBDAS.size)
    return np.logaddexp(mixed, log_tail_weight(j))


def family_log_values(log_m: NDArray[np.float64], n_groups: int
                      ) -> dict[str, NDArray[np.float64]]:
    """``log`` of the family e-processes ``citl``, ``slope`` and (with groups) the average
    of the group e-processes, from the directions' ``log M`` ``(..., 2 + n_groups)``."""
    out = {"citl": log_m[..., 0], "slope": log_m[..., 1]}
    if n_groups:
        out["groups"] = logsumexp(log_m[..., 2:], axis=-1) - np.log(n_groups)
    return out


def combined_log_value(families: dict[str, NDArray[np.float64]]) -> NDArray[np.float64]:
    """``log E``: the average of the family e-processes."""
    stacked = np.stack(list(families.values()), axis=-1)
    return logsumexp(stacked, axis=-1) - np.log(stacked.shape[-1])


@dataclass(frozen=True)
class EProcess:
    """The e-process after ``windows`` windows: ``log_a`` (directions x bets; None before the
    first), the slope's running logit sum and row count, the largest ``log E`` so far and the
    first window with ``E >= 1/alpha`` (0: none)."""

    n_groups: int
    windows: int = 0
    log_a: NDArray[np.float64] | None = None
    logit_sum: float = 0.0
    rows: int = 0
    max_log_value: float = 0.0
    alarm_window: int = 0

    @property
    def center(self) -> float:
        """The slope direction's centre: the mean logit of the windows so far."""
        return self.logit_sum / self.rows if self.rows else 0.0


@dataclass(frozen=True)
class Step:
    """One window's e-process log values (``log_value`` combined, ``families``, ``directions``)
    and its sums ``s`` and ``v``."""

    log_value: float
    families: dict[str, float]
    directions: NDArray[np.float64]
    s: NDArray[np.float64]
    v: NDArray[np.float64]


def advance(state: EProcess, p: NDArray[np.float64], y: NDArray[np.float64],
            codes: Sequence[NDArray[np.int64]], alpha: float) -> tuple[EProcess, Step]:
    """The state after one more window (its rows ``p``, ``y``, group ``codes``) and the
    window's values. The alarm is the first window where ``log E >= log(1/alpha)``."""
    j = state.windows + 1
    s, v = window_sums(p, y, codes, state.n_groups, state.center)
    log_a = update_log_wealth(state.log_a, j, s, v)
    directions = direction_log_values(log_a, j)
    families = family_log_values(directions, state.n_groups)
    log_value = float(combined_log_value(families))
    alarm = state.alarm_window or (j if log_value >= -np.log(alpha) else 0)
    new = EProcess(state.n_groups, j, log_a, state.logit_sum + float(np.sum(logit(p))),
                   state.rows + int(p.size), max(state.max_log_value, log_value), alarm)
    return new, Step(log_value, {k: float(x) for k, x in families.items()}, directions,
                     s, v)
