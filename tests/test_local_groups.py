"""The group table: bands, intersections, statistics, the group test, adjustment, ranking."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from calaudit.data.dataset import Covariate
from calaudit.inference.multitest import adjust_pvalues
from calaudit.local import groups as grp
from calaudit.local.group_sources import level_table
from calaudit.local.poisson_binomial import _rna_cdf, group_test, poisson_binomial_pmf, tails
from tests.reference_local import poisson_binomial_enumeration


def test_quantile_bands_match_pandas_qcut():
    x = np.random.default_rng(0).integers(21, 76, size=500).astype(float)
    codes, labels = grp.quantile_bands(x, 4)
    expected = pd.qcut(x, 4, labels=False, duplicates="drop")
    assert np.array_equal(codes, expected)
    assert labels[0].startswith("[21,") and labels[-1].endswith(", 75]")
    assert all(lab.startswith("(") for lab in labels[1:])
    codes, labels = grp.quantile_bands(np.array([1.0, 1.0, 1.0]), 4)
    assert labels == ("[1, 1]",) and np.all(codes == 0)
    assert grp.quantile_bands(np.array([27900.0, 40700.0, 5200.0]), 2)[1][0] == "[5200, 27900]"


@pytest.mark.skipif(not hasattr(stats, "poisson_binom"), reason="scipy < 1.15")
def test_exact_recursion_matches_scipy():
    p = np.random.default_rng(4).uniform(0.0, 1.0, size=400)
    reference = stats.poisson_binom(p).pmf(np.arange(401))
    assert np.allclose(poisson_binomial_pmf(p), reference, rtol=1e-9, atol=1e-300)


def test_groups_and_intersections():
    race = Covariate("race", "categorical", np.array([0, 0, 1, 1, 2]), ("A", "B", "C"))
    age = Covariate("age", "numeric", np.array([20.0, 30.0, 40.0, 50.0, 60.0]))
    levels = [grp.covariate_levels(race, 2), grp.covariate_levels(age, 2)]
    specs = grp.define_groups(levels, intersections=True)
    names = [s.name for s in specs]
    assert names[:5] == ["race=A", "race=B", "race=C", "age=[20, 40]", "age=(40, 60]"]
    inter = [s for s in specs if s.kind == "intersection"]
    assert sum(s.rows.size for s in inter) == 5
    assert {s.name for s in inter} == {"race=A & age=[20, 40]", "race=B & age=[20, 40]",
                                       "race=B & age=(40, 60]", "race=C & age=(40, 60]"}
    assert inter[0].covariates == {"race": "A", "age": "[20, 40]"}
    assert len(grp.define_groups(levels, intersections=False)) == 5


def test_poisson_binomial_exact_and_approximation():
    p = np.array([0.1, 0.5, 0.7, 0.2, 0.9, 0.35, 0.6, 0.05])
    assert np.allclose(poisson_binomial_pmf(p), poisson_binomial_enumeration(p), atol=1e-15)
    for k in range(9):
        low, high, method = tails(k, p)
        pmf = poisson_binomial_enumeration(p)
        assert low == pytest.approx(pmf[:k + 1].sum()) and high == pytest.approx(pmf[k:].sum())
        assert method == "exact"
    big = np.random.default_rng(2).uniform(0.05, 0.6, size=2500)
    exact = np.cumsum(poisson_binomial_pmf(big))
    for k in (650, 700, 750, 800):
        assert _rna_cdf(k, big) == pytest.approx(exact[k], abs=2e-4)
    # equal probabilities: the binomial distribution
    p_value, _ = group_test(3, np.full(20, 0.4))
    binom = stats.binom(20, 0.4)
    assert p_value == pytest.approx(min(1, 2 * min(binom.cdf(3), binom.sf(2))))
    assert group_test(10, np.full(5000, 0.002))[1] == "refined normal approximation"


def test_group_rows_statistics_status_and_adjustment():
    rng = np.random.default_rng(0)
    n = 600
    race = Covariate("race", "categorical", rng.integers(0, 3, n), ("A", "B", "C"))
    p = rng.uniform(0.1, 0.5, n)
    shift = np.where(race.values == 0, 0.15, np.where(race.values == 1, -0.08, 0.0))
    y = (rng.random(n) < p + shift).astype(float)
    y[:3] = 1.0
    tiny = Covariate("tiny", "categorical", (np.arange(n) < 10).astype(int), ("no", "yes"))
    lcb = rng.normal(size=n)
    levels = [grp.covariate_levels(race, 4), grp.covariate_levels(tiny, 4)]
    settings = grp.GroupSettings(min_rows=30, min_events=5, ci_resamples=300)
    rows = level_table(None, levels, False, y, p, lcb, np.random.default_rng(1), settings)[1]
    by = {r["group"]: r for r in rows}
    a = by["race=A"]
    members = race.values == 0
    assert a["n"] == members.sum() and a["events"] == y[members].sum()
    assert a["observed_rate"] == pytest.approx(y[members].mean())
    assert a["mean_prediction"] == pytest.approx(p[members].mean())
    assert a["bias"] == pytest.approx(a["observed_rate"] - a["mean_prediction"])
    assert a["mean_lcb"] == pytest.approx(lcb[members].mean())
    assert a["bias_ci"][0] < a["bias"] < a["bias_ci"][1]
    assert a["p_value"] == pytest.approx(group_test(int(y[members].sum()), p[members])[0])
    assert by["tiny=yes"]["status"] == "INCONCLUSIVE" and by["tiny=yes"]["p_value"] is None
    assert "10 rows < 30" in by["tiny=yes"]["message"]
    conclusive = [r for r in rows if r["status"] != "INCONCLUSIVE"]
    adj = adjust_pvalues([r["p_value"] for r in conclusive], "holm")
    assert [r["p_value_adjusted"] for r in conclusive] == pytest.approx(list(adj))
    assert a["status"] == "FAIL" and by["race=C"]["status"] == "PASS"
    top = grp.most_biased(rows, 2)
    assert [t["rank"] for t in top][:1] == [1] and top[0]["group"] == "race=A"
    assert all(t["status"] != "INCONCLUSIVE" for t in grp.most_biased(rows, 10))
    assert all(grp.excludes_zero(t) for t in grp.most_biased(rows, 10))


def test_groups_shown_first_are_ranked_by_evidence_not_by_size_of_bias():
    """A small group with a large bias but an interval containing 0 is noise: it is not
    shown first; a large group with a smaller, certain bias leads."""
    def row(group, bias, ci, p, status="PASS"):
        return {"group": group, "bias": bias, "bias_ci": ci, "p_value": p,
                "p_value_adjusted": None if p is None else min(1.0, 3 * p), "status": status}

    rows = [row("age=[21, 34] & race=A", 0.066, [-0.004, 0.124], 0.003),
            row("race=A", 0.055, [0.019, 0.084], 1e-8, "FAIL"),
            row("race=B", -0.052, [-0.074, -0.030], 2e-9, "FAIL"),
            row("tiny", 0.30, None, None, "INCONCLUSIVE")]
    top = grp.most_biased(rows, 5)
    assert [t["group"] for t in top] == ["race=B", "race=A"]
    assert [t["rank"] for t in top] == [1, 2]


def test_bootstrap_interval_is_seeded_and_covers_the_mean():
    d = np.random.default_rng(3).normal(0.1, 1.0, size=400)
    a = grp.bootstrap_mean_interval(d, np.random.default_rng(5), 500, 0.95)
    assert a == grp.bootstrap_mean_interval(d, np.random.default_rng(5), 500, 0.95)
    low, high = normal_mean_interval(d, 0.95)
    assert a[0] == pytest.approx(low, abs=0.03) and a[1] == pytest.approx(high, abs=0.03)


def normal_mean_interval(d, level):
    """``mean(d) -/+ z sd(d) / sqrt(n)`` of the rows themselves (numpy's mean and sd)."""
    half = stats.norm.ppf(0.5 + level / 2.0) * d.std(ddof=1) / np.sqrt(d.size)
    return d.mean() - half, d.mean() + half


def _two_groups(n, seed=0):
    rng = np.random.default_rng(seed)
    codes = (np.arange(n) >= n // 4).astype(np.intp)
    p = rng.uniform(0.1, 0.6, n)
    y = (rng.random(n) < p + 0.03 * (codes == 0)).astype(float)
    return [grp.Levels("g", codes, ("a", "b"))], y, p


def group_table(levels, y, p, rng, settings):
    """The table of one covariate's groups (no LCB, no intersections)."""
    return level_table(None, levels, False, y, p, None, rng, settings)[1]


def test_group_interval_switches_to_normal_at_the_size_rule(monkeypatch):
    """Groups of NORMAL_MIN_ROWS+ rows get the normal interval (bias_ci_method), smaller
    ones the percentile bootstrap; above the rule the normal interval agrees with the
    bootstrap it replaces (the old path, forced by raising the rule) to Monte Carlo error."""
    levels, y, p = _two_groups(4 * grp.NORMAL_MIN_ROWS)
    specs = grp.define_groups(levels, False)
    settings = grp.GroupSettings(ci_resamples=2000)
    new = group_table(levels, y, p, np.random.default_rng(1), settings)
    assert [r["bias_ci_method"] for r in new] == ["normal", "normal"]
    for row, spec in zip(new, specs):
        # the moments are reductions (group_moments): numpy's pairwise mean and std to
        # their last digits
        assert row["bias_ci"] == pytest.approx(list(normal_mean_interval(
            y[spec.rows] - p[spec.rows], row["bias_ci_level"])), rel=1e-12)
    monkeypatch.setattr(grp, "NORMAL_MIN_ROWS", 10**9)
    old = group_table(levels, y, p, np.random.default_rng(1), settings)
    assert [r["bias_ci_method"] for r in old] == ["percentile bootstrap"] * 2
    for a, b in zip(new, old):
        half = (a["bias_ci"][1] - a["bias_ci"][0]) / 2
        assert a["bias_ci"] == pytest.approx(b["bias_ci"], abs=0.1 * half)
        assert {k: v for k, v in a.items() if k not in ("bias_ci", "bias_ci_method")} == \
            {k: v for k, v in b.items() if k not in ("bias_ci", "bias_ci_method")}
    small, ys, ps = _two_groups(2000)
    rows = group_table(small, ys, ps, np.random.default_rng(1), settings)
    assert [r["bias_ci_method"] for r in rows] == ["percentile bootstrap"] * 2


def test_bootstrap_means_normal_limit_above_the_rule():
    rng = np.random.default_rng(4)
    d = rng.normal(0.05, 0.5, grp.NORMAL_MIN_ROWS)
    draws = grp.bootstrap_means(d, np.random.default_rng(2), 4000)
    rows = grp.resampled_means(d, np.random.default_rng(2), 4000)
    assert draws.std() == pytest.approx(rows.std(), rel=0.05)
    assert draws.mean() == pytest.approx(rows.mean(), abs=0.05 * rows.std())
    small = d[:500]
    np.testing.assert_array_equal(grp.bootstrap_means(small, np.random.default_rng(2), 50),
                                  grp.resampled_means(small, np.random.default_rng(2), 50))
