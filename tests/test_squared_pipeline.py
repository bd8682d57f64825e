"""The split / cross-validation / ensemble pipeline (Gruber & Bach, sec. 3.2.2, 5.2)."""

from __future__ import annotations

import numpy as np
import pytest

import calaudit
from calaudit.squared import Settings, estimate_squared_error
from calaudit.squared.binning import bin_features
from calaudit.squared.grids import ESTIMATORS, paper_grid, regularisation, thin
from calaudit.squared.selection import make_split, minimum_rows, run_pipeline
from calaudit.squared.targets import problems_for
from tests import reference_squared as ref
from tests.test_squared_estimators import dirichlet_data


def test_appendix_b_grids():
    assert paper_grid("bin", False) == tuple(float(5 * i) for i in range(1, 21))
    bandwidths = paper_grid("kde", True)
    assert len(bandwidths) == 20 and bandwidths == paper_grid("kde", False)
    np.testing.assert_allclose(bandwidths[:15], np.logspace(-5, -1, 15))
    np.testing.assert_allclose(bandwidths[15:], [0.2, 0.4, 0.6, 0.8, 1.0])
    np.testing.assert_allclose(paper_grid("kkr", False), 10.0 ** np.arange(-1, -18, -2))
    np.testing.assert_allclose(paper_grid("ukkr", False), 10.0 ** np.arange(-1, -10, -1))
    np.testing.assert_allclose(paper_grid("kkr", True), 10.0 ** np.arange(8, -10, -1))
    np.testing.assert_allclose(paper_grid("ukkr", True), 10.0 ** np.arange(4, -5, -0.5))
    assert paper_grid("bin", True) == tuple(float(b) for b in range(1, 11))
    with pytest.raises(ValueError, match="unknown estimator"):
        paper_grid("svm", False)


def test_thinning_keeps_ends_and_spreads_evenly():
    grid = tuple(float(v) for v in range(10))
    assert thin(grid, None) == grid and thin(grid, 20) == grid
    assert thin(grid, 2) == (0.0, 9.0)
    assert thin(grid, 4) == (0.0, 3.0, 6.0, 9.0)
    with pytest.raises(ValueError):
        thin(grid, 0)


def test_regularisation():
    assert regularisation("kkr", 2.0, 100, -0.5) == pytest.approx(2.0 * 100 ** 1.5)
    assert regularisation("ukkr", 2.0, 100, -0.25) == pytest.approx(2.0 * 100 ** 0.75)


def test_split_shapes_and_disjointness():
    split = make_split(103, 5, 0.2, np.random.default_rng(0))
    assert split.test.size == 21
    everything = np.concatenate([split.test] + [val for _, val in split.folds])
    assert sorted(everything.tolist()) == list(range(103))
    for train, val in split.folds:
        assert not set(train) & set(val) and not set(train) & set(split.test)
        assert train.size + val.size == 82
    assert split.describe()["n_train_val"] == 82
    with pytest.raises(ValueError, match="too few"):
        make_split(minimum_rows(5) - 1, 5, 0.2, np.random.default_rng(0))


def pipeline_reference(problem, split, grid):
    """Steps 2-4 for ``bin`` with loops: fold risks by eq. 20, argmin of the mean, mean of
    the fold models' test estimates."""
    fold_risks = []
    for train_rows, val_rows in split.folds:
        train, val = problem.take(train_rows), problem.take(val_rows)
        row = []
        for n_bins in grid:
            phi = ref.bin_phi_loops(train.points.tolist(), train.residuals.tolist(),
                                    val.points.tolist(), int(n_bins), problem.simplex)
            h = [[ref.dot(a, b) for b in phi] for a in phi]
            row.append(ref.risk_loops(val.residuals.tolist(), h))
        fold_risks.append(row)
    mean = np.mean(fold_risks, axis=0)
    best = int(np.argmin(mean))
    test = problem.take(split.test)
    estimates = []
    for train_rows, _ in split.folds:
        train = problem.take(train_rows)
        phi = ref.bin_phi_loops(train.points.tolist(), train.residuals.tolist(),
                                test.points.tolist(), int(grid[best]), problem.simplex)
        estimates.append(np.mean([ref.dot(a, a) for a in phi]))
    return mean, best, np.mean(estimates)


@pytest.mark.parametrize("target", ["tce2", "cce2"])
def test_pipeline_matches_loop_reference_for_binning(target):
    y, p = dirichlet_data(90, 3, seed=11)
    split = make_split(90, 3, 0.2, np.random.default_rng(1))
    grid = (1.0, 2.0, 5.0) if target == "cce2" else (5.0, 10.0, 15.0)
    (problem,) = problems_for(target, y, p)
    result = run_pipeline(target, [problem], ["bin"], {"bin": grid}, split, Settings())
    mean, best, estimate = pipeline_reference(problem, split, grid)
    np.testing.assert_allclose([c.risk for c in result.candidates], mean, rtol=1e-10)
    assert result.chosen.candidate.value == grid[best]
    assert result.estimate == pytest.approx(estimate, rel=1e-10)
    assert result.root == pytest.approx(np.sqrt(estimate))


def test_classwise_sums_risks_and_estimates_over_classes():
    y, p = dirichlet_data(150, 3, seed=12)
    split = make_split(150, 5, 0.2, np.random.default_rng(2))
    grids = {"bin": (5.0, 10.0), "kde": (0.01, 0.1)}
    total = run_pipeline("cwce2", problems_for("cwce2", y, p), ["bin", "kde"], grids, split,
                         Settings())
    per_class = [run_pipeline("x", [problem], ["bin", "kde"], grids, split, Settings())
                 for problem in problems_for("cwce2", y, p)]
    with_kernel = run_pipeline("cwce2", problems_for("cwce2", y, p), ["ukkr"],
                               {"ukkr": (1e-3,)}, split, Settings())
    ranks = with_kernel.diagnostics["kernel_spectrum"]["rank"]
    assert len(ranks) == 5 and all(len(fold) == 3 for fold in ranks)
    for index, candidate in enumerate(total.candidates):
        assert candidate.risk == pytest.approx(
            sum(r.candidates[index].risk for r in per_class), rel=1e-12)
    bin_value = total.best("bin").candidate.value
    manual = 0.0
    for problem in problems_for("cwce2", y, p):
        test = problem.take(split.test)
        for train_rows, _ in split.folds:
            phi = bin_features(problem.take(train_rows), test.points, int(bin_value))
            manual += np.mean(np.sum(phi * phi, axis=1)) / len(split.folds)
    assert total.best("bin").estimate == pytest.approx(manual, rel=1e-12)


def test_result_structure_and_choice():
    y, p = dirichlet_data(300, 4, seed=13)
    result = estimate_squared_error(y, p, "cce2", rng=3, grid_sizes={"kde": 4, "kkr": 5,
                                                                     "ukkr": 5, "bin": 3})
    assert {f.estimator for f in result.per_estimator} == set(ESTIMATORS)
    assert len(result.candidates) == 4 + 5 + 5 + 3
    best = min(result.per_estimator, key=lambda f: f.candidate.risk)
    assert result.chosen == best and result.estimate == best.estimate
    for fitted in result.per_estimator:
        same = [c for c in result.candidates if c.estimator == fitted.estimator]
        assert fitted.candidate.risk == min(c.risk for c in same)
        assert fitted.estimate == pytest.approx(np.mean(fitted.fold_estimates))
    params = result.to_params()
    assert params["estimator"] == result.estimator and params["squared"] is True
    assert params["selection"]["n_folds"] == 5 and params["selection"]["n_test"] == 60
    spectrum = params["diagnostics"]["kernel_spectrum"]
    assert spectrum["method"] == "low_rank" and len(spectrum["rank"]) == 5
    assert spectrum["residual_trace_max"] < 300 * 1e-10
    bins_only = estimate_squared_error(y, p, "cce2", rng=3, estimators=("bin",))
    assert bins_only.to_params()["diagnostics"] == {}


def test_seeded_and_deterministic():
    y, p = dirichlet_data(200, 3, seed=14)
    sizes = {"kde": 3, "kkr": 3, "ukkr": 3, "bin": 3}
    one = estimate_squared_error(y, p, "tce2", rng=5, grid_sizes=sizes)
    two = estimate_squared_error(y, p, "tce2", rng=np.random.default_rng(5), grid_sizes=sizes)
    other = estimate_squared_error(y, p, "tce2", rng=6, grid_sizes=sizes)
    assert one.to_params() == two.to_params()
    assert one.to_params() != other.to_params()


def test_calibrated_predictions_score_lower_than_miscalibrated():
    rng = np.random.default_rng(15)
    truth = rng.dirichlet(np.ones(3), 1500)
    y = np.array([rng.choice(3, p=row) for row in truth])
    sharp = truth ** 3 / np.sum(truth ** 3, axis=1, keepdims=True)
    sizes = {"kde": 5, "kkr": 5, "ukkr": 5}
    for target in ("tce2", "cce2"):
        calibrated = estimate_squared_error(y, truth, target, rng=0, grid_sizes=sizes,
                                            estimators=("kde", "kkr", "ukkr"))
        overconfident = estimate_squared_error(y, sharp, target, rng=0, grid_sizes=sizes,
                                               estimators=("kde", "kkr", "ukkr"))
        assert calibrated.estimate < 0.005 < overconfident.estimate


def test_api_validation():
    y, p = dirichlet_data(50, 3, seed=16)
    with pytest.raises(calaudit.ConfigError, match="unknown squared calibration error"):
        estimate_squared_error(y, p, "ece")
    with pytest.raises(calaudit.ConfigError, match="estimator"):
        estimate_squared_error(y, p, "tce2", estimators=("svm",))
    with pytest.raises(calaudit.ConfigError, match="n_folds"):
        estimate_squared_error(y, p, "tce2", n_folds=1)
    with pytest.raises(calaudit.ConfigError, match="test_fraction"):
        estimate_squared_error(y, p, "tce2", test_fraction=1.0)
    with pytest.raises(calaudit.InputError, match="too few"):
        estimate_squared_error(y[:8], p[:8], "tce2")
    with pytest.raises(calaudit.InputError):
        estimate_squared_error(y, p * 2, "tce2")
    binary = estimate_squared_error((p[:, 0] > 0.5).astype(int), p[:, 0], "tce2", rng=0,
                                    estimators=("bin",))
    assert binary.estimate >= 0
