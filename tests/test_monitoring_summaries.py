"""Per-window summaries (calaudit.monitoring.summaries, .fits) against references:
statsmodels for the recalibration fits, loops for the ECE and the group bias."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import special, stats

from calaudit.monitoring import fits
from calaudit.monitoring.summaries import (
    ece_estimate,
    group_summaries,
    summarize_window,
    top_label,
)


@pytest.fixture
def rows():
    rng = np.random.default_rng(11)
    p = special.expit(rng.normal(-0.5, 1.2, 3000))
    y = (rng.uniform(size=p.size) < special.expit(0.2 + 0.8 * special.logit(p))).astype(float)
    return p, y


def test_citl_and_slope_match_statsmodels(rows):
    p, y = rows
    logit = special.logit(p)
    ref = sm.GLM(y, np.ones((p.size, 1)), family=sm.families.Binomial(), offset=logit).fit()
    got = fits.citl_fit(p, y)
    np.testing.assert_allclose(got.coef, ref.params, rtol=1e-8)
    np.testing.assert_allclose(np.sqrt(np.diag(got.cov)), ref.bse, rtol=1e-6)
    ref = sm.GLM(y, sm.add_constant(logit), family=sm.families.Binomial()).fit()
    got = fits.slope_fit(p, y)
    np.testing.assert_allclose(got.coef, ref.params, rtol=1e-8)
    low, high = ref.conf_int(0.05)[1]
    est = got.estimate(1, 0.95)
    assert est.low == pytest.approx(low, rel=1e-6) and est.high == pytest.approx(high, rel=1e-6)


def test_fit_of_one_class_is_nan():
    est = fits.slope_fit(np.array([0.2, 0.4, 0.6]), np.zeros(3)).estimate(1, 0.95)
    assert np.isnan(est.value) and np.isnan(est.low)


def test_ece_matches_a_loop_and_its_interval_is_seeded(rows):
    p, y = rows
    ref = 0.0
    for b in range(15):
        inside = [i for i in range(p.size) if min(int(p[i] * 15), 14) == b]
        if inside:
            ref += len(inside) / p.size * abs(np.mean(y[inside]) - np.mean(p[inside]))
    first = ece_estimate(p, y, 15, 0.9, np.random.default_rng([3, 4]), 100)
    again = ece_estimate(p, y, 15, 0.9, np.random.default_rng([3, 4]), 100)
    assert first.value == pytest.approx(ref, rel=1e-12)
    assert first == again and first.low < first.value < first.high


def test_group_bias_and_interval(rows):
    p, y = rows
    codes = np.arange(p.size) % 3
    codes[:5] = -1
    out = group_summaries(p, y, "g", ("a", "b", "c"), codes, 0.95)
    for code, g in enumerate(out):
        r = y[codes == code] - p[codes == code]
        half = stats.norm.ppf(0.975) * r.std(ddof=1) / np.sqrt(r.size)
        assert (g.level, g.n) == ("abc"[code], r.size)
        assert g.bias.value == pytest.approx(r.mean(), rel=1e-12)
        assert g.bias.high - g.bias.value == pytest.approx(half, rel=1e-10)


def test_empty_group_is_reported_without_numbers(rows):
    p, y = rows
    out = group_summaries(p, y, "g", ("a", "b"), np.zeros(p.size, dtype=int), 0.95)
    assert out[1].n == 0 and np.isnan(out[1].bias.value)


def test_top_label():
    probs = np.array([[0.2, 0.5, 0.3], [0.4, 0.4, 0.2], [0.1, 0.1, 0.8]])
    p, y = top_label(probs, np.array([1, 1, 0]))
    np.testing.assert_array_equal(p, [0.5, 0.4, 0.8])
    np.testing.assert_array_equal(y, [1.0, 0.0, 0.0])


def test_window_summary_fields(rows):
    p, y = rows
    s = summarize_window(p, y, number=4, key=4, label="w4", n_boot=20)
    assert (s.n, s.events) == (p.size, y.sum())
    assert s.mean_prediction == pytest.approx(p.mean())
    assert s.citl.low < s.citl.value < s.citl.high
    assert s.slope.value == pytest.approx(fits.slope_fit(p, y).coef[1])
    count, sum_p, sum_y = s.bins
    assert sum(count) == p.size and sum(sum_y) == pytest.approx(y.sum())


@pytest.mark.slow
def test_large_bins_bootstrap_agrees_with_the_exact_poisson_bootstrap(monkeypatch):
    from calaudit.monitoring import summaries

    rng = np.random.default_rng(8)
    z = rng.normal(-1.0, 1.0, 30_000)
    p = 1.0 / (1.0 + np.exp(-z))
    y = (rng.uniform(size=z.size) < 1.0 / (1.0 + np.exp(-z - 0.1))).astype(float)
    fast = ece_estimate(p, y, 15, 0.9, np.random.default_rng(1), 1000)
    monkeypatch.setattr(summaries, "LARGE_BIN", 10**9)  # every row drawn
    exact = ece_estimate(p, y, 15, 0.9, np.random.default_rng(1), 1000)
    assert fast.value == exact.value
    width = exact.high - exact.low
    assert abs(fast.low - exact.low) < 0.1 * width
    assert abs(fast.high - exact.high) < 0.1 * width


def test_window_ece_is_the_audits_ece_also_on_bin_edges():
    import calaudit

    rng = np.random.default_rng(5)
    p = np.concatenate([np.arange(16) / 15.0, rng.uniform(size=400)])  # every bin edge
    y = (rng.uniform(size=p.size) < p).astype(float)
    got = ece_estimate(p, y, 15, 0.9, np.random.default_rng(1), 50).value
    assert got == pytest.approx(calaudit.expected_calibration_error(y.astype(int), p),
                                rel=1e-12)
