"""The e-process of calaudit.monitoring.eprocess against slow references: the bets'
expectation under the null by enumeration, the mixture by an explicit sum over starts and
bets, and a small seeded level check."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import special

from calaudit.monitoring import eprocess as ep
from calaudit.monitoring.monitor import MonitorConfig, start, update


def test_bennett_factor_has_null_expectation_at_most_one():
    """E[exp(lam S - psi(lam) V)] <= 1 over all 2^8 outcomes, for every direction."""
    rng = np.random.default_rng(1)
    p = rng.uniform(0.02, 0.98, 8)
    codes = rng.integers(0, 2, 8)
    outcomes = np.array(list(itertools.product([0.0, 1.0], repeat=8)))
    weight = np.prod(np.where(outcomes == 1, p, 1 - p), axis=1)
    s, v = ep.window_sums(np.broadcast_to(p, outcomes.shape), outcomes,
                          [np.broadcast_to(codes, outcomes.shape)], 2, 0.3)
    for lam in [*ep.LAMBDAS, 10.0, -10.0]:
        expectation = np.sum(weight[:, None] * np.exp(lam * s - ep.psi(lam) * v), axis=0)
        assert np.all(expectation <= 1.0 + 1e-12)


def test_window_sums_match_a_row_loop():
    rng = np.random.default_rng(2)
    p, y = rng.uniform(0.01, 0.99, 50), rng.integers(0, 2, 50).astype(float)
    codes = [rng.integers(-1, 3, 50), rng.integers(3, 5, 50)]
    s, v = ep.window_sums(p, y, codes, 5, -0.4)
    ref_s, ref_v = np.zeros(7), np.zeros(7)
    for t in range(50):
        h = np.zeros(7)
        h[0] = 1.0
        h[1] = np.tanh((np.log(p[t] / (1 - p[t])) + 0.4) / 2)
        for c in codes:
            if c[t] >= 0:
                h[2 + c[t]] = 1.0
        ref_s += h * (y[t] - p[t])
        ref_v += h * h * p[t] * (1 - p[t])
    np.testing.assert_allclose(s, ref_s, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(v, ref_v, rtol=1e-12, atol=1e-12)


def reference_log_e(windows, n_groups):
    """log E after each window by the explicit double sum over starts j and bets k of
    pi_j rho_k prod_{w >= j} exp(lam_k S_w - psi V_w) plus the weight of later starts,
    averaged over directions within the groups family and over the families."""
    out, logits, rows = [], 0.0, 0
    sums = []
    for p, y, codes in windows:
        center = logits / rows if rows else 0.0
        sums.append(ep.window_sums(p, y, codes, n_groups, center))
        logits += float(np.sum(special.logit(p)))
        rows += p.size
        big_w = len(sums)
        values = []
        for d in range(2 + n_groups):
            total = 1.0 - sum(1.0 / (j * (j + 1)) for j in range(1, big_w + 1))
            for j in range(1, big_w + 1):
                for lam in ep.LAMBDAS:
                    wealth = 1.0
                    for s, v in sums[j - 1:]:
                        wealth *= np.exp(lam * s[d] - ep.psi(lam) * v[d])
                    total += wealth / (j * (j + 1)) / ep.LAMBDAS.size
            values.append(total)
        families = [values[0], values[1]] + ([np.mean(values[2:])] if n_groups else [])
        out.append(np.log(np.mean(families)))
    return np.array(out)


@pytest.mark.parametrize("n_groups", [0, 3])
def test_advance_matches_the_explicit_mixture(n_groups):
    rng = np.random.default_rng(3)
    windows = []
    for w in range(6):
        p = rng.uniform(0.05, 0.95, 40)
        shift = 0.15 if w >= 3 else 0.0
        y = (rng.uniform(size=40) < np.minimum(p + shift, 1)).astype(float)
        windows.append((p, y, [rng.integers(0, 3, 40)] if n_groups else []))
    state = ep.EProcess(n_groups)
    got = []
    for p, y, codes in windows:
        state, step = ep.advance(state, p, y, codes, 0.05)
        got.append(step.log_value)
    np.testing.assert_allclose(got, reference_log_e(windows, n_groups), rtol=1e-10,
                               atol=1e-12)


def test_start_weights_sum_to_one():
    for big_w in (1, 5, 40):
        total = sum(np.exp(ep.log_start_weight(j)) for j in range(1, big_w + 1))
        assert total + np.exp(ep.log_tail_weight(big_w)) == pytest.approx(1.0, abs=1e-14)


def test_alarm_is_the_first_window_over_one_over_alpha():
    rng = np.random.default_rng(4)
    state = ep.EProcess(0)
    logs = []
    for w in range(8):
        p = rng.uniform(0.1, 0.9, 400)
        y = (rng.uniform(size=400) < np.minimum(p + (0.2 if w >= 2 else 0), 1)).astype(float)
        state, step = ep.advance(state, p, y, [], 0.05)
        logs.append(step.log_value)
    first = 1 + int(np.argmax(np.array(logs) >= np.log(20)))
    assert state.alarm_window == first >= 3
    assert state.max_log_value == max(logs)


def test_level_on_calibrated_streams():
    """300 calibrated streams of 30 windows: the alarm rate stays below alpha and the
    mean of E after the last window is at most 1 (a supermartingale), within noise."""
    rng = np.random.default_rng(5)
    streams, n_groups = 300, 2
    log_a, logit_sum = None, np.zeros(streams)
    alarm = np.zeros(streams, dtype=bool)
    for j in range(1, 31):
        p = special.expit(rng.normal(-0.5, 1.0, (streams, 200)))
        y = (rng.random((streams, 200)) < p).astype(float)
        codes = rng.integers(0, n_groups, (streams, 200))
        s, v = ep.window_sums(p, y, [codes], n_groups, logit_sum / (200 * (j - 1) or 1))
        log_a = ep.update_log_wealth(log_a, j, s, v)
        log_e = ep.combined_log_value(ep.family_log_values(
            ep.direction_log_values(log_a, j), n_groups))
        alarm |= log_e >= np.log(20)
        logit_sum += special.logit(p).sum(axis=1)
    assert alarm.mean() <= 0.05
    assert np.exp(log_e).mean() <= 1.0 + 3 * np.exp(log_e).std() / np.sqrt(streams)


def test_strong_drift_raises_the_alarm_soon_after_it_starts():
    rng = np.random.default_rng(6)
    p = special.expit(rng.normal(-1, 1, 20 * 1000))
    window = np.repeat(np.arange(20), 1000)
    q = np.where(window >= 10, special.expit(0.6 * special.logit(p)), p)
    y = (rng.random(p.size) < q).astype(int)
    state = update(start(MonitorConfig(window="1000rows", n_boot=2)), p, y)
    assert 11 <= state.eprocess.alarm_window <= 13
    assert state.table()["alarm"].sum() == 20 - state.eprocess.alarm_window + 1
