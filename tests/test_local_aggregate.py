"""The local aggregate test: score members against loops from their formulas, the
combination's exactness, and the redraws its members share on both paths."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from calaudit.inference import feature_passes
from calaudit.inference.feature_tests import feature_consistency_test
from calaudit.local import score_draws
from calaudit.local.aggregate import MemberValues, combine
from calaudit.local.aggregate_test import exact_aggregate, feature_aggregate, level_codes
from calaudit.local.features import product_features
from calaudit.local.kernel import product_gram
from calaudit.local.resampling import consistency_test, label_sampler
from calaudit.local.score_members import ScoreMembers
from calaudit.local.score_rows import memory_rows


def _design(codes, sizes):
    """Treatment-coded design [1, 0/1 columns of every level but the first]."""
    columns = [np.ones(len(codes[0]))]
    for c, size in zip(codes, sizes):
        columns += [(c == level).astype(float) for level in range(1, size)]
    return np.column_stack(columns)


def _score_loop(x, r, w):
    """r^T X (X^T W X)^+ X^T r by explicit sums over rows."""
    k = x.shape[1]
    u = np.zeros(k)
    info = np.zeros((k, k))
    for i in range(len(r)):
        for a in range(k):
            u[a] += x[i, a] * r[i]
            for b in range(k):
                info[a, b] += x[i, a] * w[i] * x[i, b]
    return float(u @ np.linalg.pinv(info) @ u), int(np.linalg.matrix_rank(info))


@pytest.fixture
def binary_case():
    rng = np.random.default_rng(4)
    n = 120
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.uniform(size=n) < p).astype(float)
    codes = [rng.integers(0, 3, n), rng.integers(0, 4, n)]
    return p, y, codes, [3, 4]


def test_binary_members_equal_the_score_statistic_from_loops(binary_case):
    p, y, codes, sizes = binary_case
    scores = ScoreMembers.build(["a", "b"], codes, sizes, p)
    r = y - p
    values = scores.statistics(scores.level_sums(r[:, None]))[:, 0]
    w = p * (1 - p)
    intercept = r.sum() ** 2 / w.sum()  # the intercept's own score statistic
    for k, (c, size) in enumerate(zip(codes, sizes)):
        # one covariate: the chi-square of the group residual sums about their mean
        expected = sum(r[c == g].sum() ** 2 / w[c == g].sum() for g in range(size))
        assert values[k] == pytest.approx(expected - intercept, rel=1e-12)
        assert scores.members[k].df == size - 1
    joint, rank = _score_loop(np.column_stack([(c == g) for c, s in zip(codes, sizes)
                                               for g in range(s)]).astype(float), r, w)
    assert values[2] == pytest.approx(joint - intercept, rel=1e-10)
    # the column space decides: treatment coding with an intercept gives the same S
    assert values[2] == pytest.approx(_score_loop(_design(codes, sizes), r, w)[0] - intercept,
                                      rel=1e-10)
    assert scores.members[2].df == rank - 1 == 5


def test_multiclass_members_equal_the_multinomial_score_from_loops():
    rng = np.random.default_rng(5)
    n, m = 90, 3
    proba = rng.dirichlet(np.ones(m), n)
    y = np.array([rng.choice(m, p=row) for row in proba])
    codes = [rng.integers(0, 3, n), rng.integers(0, 2, n)]
    scores = ScoreMembers.build(["a", "b"], codes, [3, 2], proba)
    r = np.eye(m)[y] - proba
    values = scores.statistics(scores.level_sums(r[:, :, None]),
                               scores.top_sums(r[:, :, None]))[:, 0]
    def quadratic(rows):
        u = r[rows].sum(axis=0)
        cov = sum(np.diag(q) - np.outer(q, q) for q in proba[rows])
        return u @ np.linalg.pinv(cov) @ u

    intercept = quadratic(np.ones(n, dtype=bool))
    for k, (c, size) in enumerate(zip(codes, [3, 2])):
        expected = sum(quadratic(c == g) for g in range(size))
        assert values[k] == pytest.approx(expected - intercept, rel=1e-9)
        assert scores.members[k].df == (size - 1) * (m - 1)
    top = np.argmax(proba, axis=1)
    confidence = proba[np.arange(n), top]
    top_r = (y == top) - confidence
    top_w = confidence * (1 - confidence)
    x = np.column_stack([(c == g) for c, s in zip(codes, [3, 2]) for g in range(s)])
    assert values[2] == pytest.approx(_score_loop(x.astype(float), top_r, top_w)[0]
                                      - top_r.sum() ** 2 / top_w.sum(), rel=1e-10)


def test_combination_is_a_rank_test_of_the_weighted_smallest_tail():
    rng = np.random.default_rng(0)
    values = rng.chisquare(3, size=(2, 200))
    values[0, 0] = 40.0  # the observed column is the most extreme for member 0
    result = combine([MemberValues("a", "score", values[0], 3.0),
                      MemberValues("b", "score", values[1], 3.0)])
    assert result.p_value == pytest.approx(1 / 200)
    assert result.deciding == "a"
    assert [m["weight"] for m in result.members] == [0.5, 0.5]
    # the same values under a monotone change of a member's scale keep the ranks of
    # that member alone, so its own p-value does not move
    again = combine([MemberValues("a", "score", values[0] * 3, 3.0),
                     MemberValues("b", "score", values[1], 3.0)])
    assert again.members[0]["p_value"] == result.members[0]["p_value"]


def test_combination_keeps_its_level_under_exchangeable_columns():
    rng = np.random.default_rng(1)
    rejections = 0
    runs = 2000
    for _ in range(runs):
        shared = rng.normal(size=60)  # dependent members, columns exchangeable
        a = shared + rng.normal(size=60)
        b = rng.gamma(2.0, size=60) + 0.5 * shared
        result = combine([MemberValues("a", "kernel", a), MemberValues("b", "kernel", b),
                          MemberValues("c", "score", rng.chisquare(2, 60), 2.0)])
        rejections += result.p_value <= 0.05
    # exact: P(p <= 0.05) = 3/60 = 0.05 at B + 1 = 60 columns (no ties)
    assert abs(rejections / runs - 0.05) < 3 * np.sqrt(0.05 * 0.95 / runs)


def test_exact_path_scores_see_the_kernel_passes_redraws(binary_case):
    p, y, codes, sizes = binary_case
    r = y - p
    gram = product_gram(p[:, None], 4.0, np.column_stack(codes).astype(float), 0.5)
    scores = ScoreMembers.build(["a", "b"], codes, sizes, p)
    rng = np.random.default_rng(9)
    found, kernel = exact_aggregate(gram, r, p, scores, copy.deepcopy(rng), 50,
                                    dtype=np.float64)
    alone = consistency_test(gram, r, p, copy.deepcopy(rng), 50, dtype=np.float64)
    assert np.array_equal(kernel.null_distribution, alone.null_distribution)
    # the score members' redraws are the kernel's: draw them again from the same stream
    columns = np.empty((len(p), 50))
    label_sampler(p)(copy.deepcopy(rng), columns)
    expected = scores.statistics(scores.level_sums(columns))
    members = {m["name"]: m for m in found.members}
    for k, name in enumerate(scores.names):
        own = (1 + np.sum(expected[k] >= members[name]["statistic"] * (1 - 1e-12))) / 51
        assert members[name]["p_value"] == pytest.approx(own)
    assert members["KLCE^2, median-heuristic bandwidths"]["p_value"] == alone.p_value


def test_feature_path_redraws_the_labels_of_the_feature_test(monkeypatch):
    rng = np.random.default_rng(2)
    n = 9000  # three row blocks
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.uniform(size=n) < p).astype(float)
    codes = [rng.integers(0, 3, n)]
    drawn = {"test": [], "replay": []}

    def recorder(key, original):
        def record(generator, thresholds, out):
            original(generator, thresholds, out)
            drawn[key].append(np.array(out, dtype=np.float64))
        return record

    monkeypatch.setattr(feature_passes, "binary_labels_into",
                        recorder("test", feature_passes.binary_labels_into))
    monkeypatch.setattr(score_draws, "binary_labels_into",
                        recorder("replay", score_draws.binary_labels_into))
    z = np.column_stack([p, codes[0]]).astype(float)
    features = product_features(z, 64, 3)
    test_rng = np.random.default_rng(11)
    from calaudit.local.aggregate_test import feature_seed

    seed = feature_seed(test_rng)
    res = feature_consistency_test(features, z, y - p, p, test_rng, 20,
                                   stream="klce_consistency")
    found = feature_aggregate(res.statistic, res.null_distribution, res.p_value,
                              memory_rows(y - p, p, level_codes(codes, [3])[0]), ["a"], [3],
                              1, seed, 20)
    assert len(drawn["test"]) == len(drawn["replay"]) == 3
    for a, b in zip(drawn["test"], drawn["replay"]):
        assert np.array_equal(a, b)
    # and the members' null is that of the recorded labels
    labels = np.vstack(drawn["test"])
    h = np.stack([codes[0] == g for g in range(3)], axis=1).astype(float)
    u = h.T @ (labels - p[:, None])
    w = h.T @ (p * (1 - p))
    expected = (u ** 2 / w[:, None]).sum(axis=0) - u.sum(axis=0) ** 2 / w.sum()
    mine = found.members[0]
    assert mine["p_value"] == pytest.approx(
        (1 + np.sum(expected >= mine["statistic"] * (1 - 1e-12))) / 21)


def test_member_tails_are_scipys_laws_and_do_not_underflow():
    from scipy import stats

    from calaudit.local.aggregate import chi_square_log_tail, moment_log_tail

    x = np.array([0.0, 0.5, 3.0, 10.0, 50.0, 300.0, 1000.0])
    for df in (1, 4, 9, 36):
        assert np.allclose(chi_square_log_tail(x, df), stats.chi2.logsf(x, df),
                           rtol=1e-12, atol=1e-14)
    deep = chi_square_log_tail(np.array([4000.0, 5000.0]), 4)
    assert np.all(np.isfinite(deep)) and deep[1] < deep[0]  # scipy's logsf is -inf here
    v = np.random.default_rng(0).gamma(2.0, size=300)
    mean, sd = v.mean(), v.std()
    skew = np.mean(((v - mean) / sd) ** 3)
    shape, scale = 4 / skew**2, sd * skew / 2
    assert np.allclose(moment_log_tail(v),
                       stats.gamma.logsf(v - (mean - shape * scale), shape, scale=scale),
                       rtol=1e-12, atol=1e-14)
