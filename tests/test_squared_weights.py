"""The squared calibration errors on weighted rows (docs/weights.md): the weighted risk and
every weighted estimator against slow loops, frequency weights against the repeated rows,
and a weighted audit with ``--squared`` (and its weighted smoothed diagram) that says the
same thing everywhere."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from calaudit.squared import estimate_squared_error
from calaudit.data.dataset import CalibrationData
from calaudit.exceptions import InputError
from calaudit.squared.api import resolve_grids, squared_metrics
from calaudit.squared.binning import BinningPath
from calaudit.squared.fitting import EvalSet, Settings
from calaudit.squared.kde import KdePath, on_simplex
from calaudit.squared.kkr import KernelFold, KkrPath
from calaudit.squared.risk import RowWeights, pairwise_risk
from calaudit.squared.selection import Split, make_split, run_pipeline
from calaudit.squared.targets import Problem, problems_for
from calaudit.squared.ukkr import UkkrPath
from tests import reference_squared as ref
from tests.cli_inprocess import run_cli

KINDS = ("frequency", "design", "negatives")


def row_weights(kind: str, n: int, rng: np.random.Generator, negative: np.ndarray):
    """``RowWeights`` and the unit weight ``a`` of each row for one kind of weight:
    integer frequency weights (a zero included), positive design weights, frequency
    weights with negatives kept at rate 0.25 (each negative unit weighs 4)."""
    if kind == "design":
        w = rng.uniform(0.2, 3.0, n)
        return RowWeights(w, np.ones(n)), w
    units = rng.integers(0, 4, n).astype(float)
    units[0], units[1] = 0.0, 2.0
    a = np.where(negative, 4.0, 1.0) if kind == "negatives" else np.ones(n)
    return RowWeights(units * a, units), a


def scalar_problem(n: int, seed: int, kind: str) -> tuple[Problem, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.05, 0.95, n)
    o = (rng.uniform(size=n) < x ** 1.5).astype(float)
    weights, a = row_weights(kind, n, rng, o == 0)
    return Problem("score", x[:, None], (o - x)[:, None], False, weights), a


def vector_problem(n: int, seed: int, kind: str) -> tuple[Problem, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet([2.0, 1.0, 1.0], n)
    y = np.array([rng.choice(3, p=row) for row in p])
    weights, a = row_weights(kind, n, rng, y == 0)
    (problem,) = problems_for("cce2", y, p, weights)
    return problem, a


def loops_risk(problem: Problem, a: np.ndarray, h: np.ndarray) -> float:
    return ref.weighted_risk_units(problem.residuals.tolist(), h.tolist(),
                                   problem.weights.units.tolist(), a.tolist())


def weighted_mean_diagonal(problem: Problem, h: np.ndarray) -> float:
    w = problem.weights.weights
    return sum(wi * h[i, i] for i, wi in enumerate(w)) / sum(w)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("metric", [False, True])
def test_weighted_risk_matches_the_loop_over_pairs_of_distinct_units(kind, metric):
    rng = np.random.default_rng(7)
    problem, a = vector_problem(9, 3, kind)
    phi = rng.normal(size=(9, 4))
    s = rng.normal(size=(4, 4)) if metric else np.eye(4)
    s = s + s.T if metric else s
    h = phi @ s @ phi.T
    got = pairwise_risk(problem.residuals, phi, s if metric else None, problem.weights)
    assert got == pytest.approx(loops_risk(problem, a, h), rel=1e-11)


def evaluate(path, problem: Problem, a: np.ndarray, h: np.ndarray, index: int) -> None:
    """The path's risk and estimate at ``index`` against the loops with ``h``."""
    evalset = EvalSet("eval", problem)
    assert path.risks(evalset)[index] == pytest.approx(loops_risk(problem, a, h), rel=1e-9)
    assert path.estimate(evalset, index) == pytest.approx(weighted_mean_diagonal(problem, h),
                                                          rel=1e-9, abs=1e-13)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("canonical", [False, True])
def test_weighted_bin_and_kde_match_the_loops(kind, canonical):
    make = vector_problem if canonical else scalar_problem
    train, _ = make(14, 11, kind)
    train = train.training(np.arange(train.n))
    problem, a = make(8, 12, kind)
    w = train.weights.weights.tolist()
    grid = (2.0, 3.0) if canonical else (7.0, 3.0)
    phi = np.array(ref.weighted_bin_phi_loops(train.points.tolist(), train.residuals.tolist(),
                                              w, problem.points.tolist(), 3, canonical))
    evaluate(BinningPath(train, grid), problem, a, phi @ phi.T, 1)
    z_train = on_simplex(train.points, train.simplex)
    z_eval = on_simplex(problem.points, problem.simplex)
    x_eval = z_eval if canonical else problem.points
    phi = np.array(ref.weighted_kde_phi_loops(z_train.tolist(), train.outcomes.tolist(), w,
                                              z_eval.tolist(), x_eval.tolist(), 0.4))
    evaluate(KdePath(train, (0.05, 0.4)), problem, a, phi @ phi.T, 1)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("canonical", [False, True])
@pytest.mark.parametrize("spectrum", ["exact", "low_rank"])
def test_weighted_kkr_and_ukkr_match_the_weighted_ridge_regressions(kind, canonical,
                                                                    spectrum):
    make = vector_problem if canonical else scalar_problem
    train, _ = make(7, 21, kind)
    train = train.training(np.arange(train.n))
    problem, a = make(6, 22, kind)
    settings = Settings(spectrum=spectrum)
    fold = KernelFold(train, settings)
    w = train.weights.weights
    unit_weight = w / train.weights.units
    total, size = w.sum(), w.sum() ** 2 / (w * unit_weight).sum()
    x, r = train.points.tolist(), train.residuals.tolist()
    scale = 1e-2
    kkr = KkrPath(fold, (scale,), settings)
    ridge = scale * size ** settings.kkr_lambda_exponent * total ** 2
    h = ref.weighted_kkr_kronecker(x, r, w.tolist(), problem.points.tolist(), 0.5, ridge)
    evaluate(kkr, problem, a, h, 0)
    ukkr = UkkrPath(fold, (scale,), settings)
    ridge = scale * size ** settings.ukkr_lambda_exponent * total
    h = ref.weighted_ukkr_direct(x, r, w.tolist(), problem.points.tolist(), 0.5, ridge)
    evaluate(ukkr, problem, a, h, 0)


def flatten(value, prefix=""):
    """Every leaf of a nested result, keyed by its path."""
    if isinstance(value, dict):
        items = [(f"{prefix}.{key}", item) for key, item in value.items()]
    elif isinstance(value, (list, tuple)):
        items = [(f"{prefix}[{i}]", item) for i, item in enumerate(value)]
    else:
        return {prefix: value}
    return {k: v for path, item in items for k, v in flatten(item, path).items()}


def assert_same_fields(got: dict, want: dict, skip: str | None = None) -> None:
    got, want = flatten(got), flatten(want)
    assert got.keys() == want.keys()
    for key, value in want.items():
        if skip and skip in key:
            continue
        if isinstance(value, float):
            assert got[key] == pytest.approx(value, rel=1e-10, abs=1e-12), key
        else:
            assert got[key] == value, key


@pytest.mark.parametrize("target", ["tce2", "cwce2", "cce2"])
def test_frequency_weights_equal_the_repeated_rows(target):
    """Integer weights: the result of the rows repeated ``w`` times with every row's copies
    in the row's fold (the split draws rows), every field to 1e-10; the ridge grids stop
    above the numerical floor, where rounding amplified by ``1 / c`` dominates both."""
    rng = np.random.default_rng(5)
    n = 40
    p = rng.dirichlet([2.0, 1.0, 1.0], n)
    y = np.array([rng.choice(3, p=row) for row in p])
    w = rng.integers(0, 4, n).astype(float)
    copies_of = np.repeat(np.arange(n), w.astype(int))
    split = make_split(n, 3, 0.25, np.random.default_rng(1))
    grids = resolve_grids(("bin", "kde", "kkr", "ukkr"), target == "cce2",
                          {"bin": 4, "kde": 6})
    canonical = target == "cce2"
    grids["kkr"] = grids["kkr"][:8] if canonical else grids["kkr"][:3]
    grids["ukkr"] = grids["ukkr"][:10] if canonical else grids["ukkr"][:5]

    def copies(rows):
        return np.concatenate([np.flatnonzero(copies_of == u) for u in rows]).astype(np.intp)

    repeated = Split(copies(split.test), tuple((copies(t), copies(v)) for t, v in split.folds),
                     split.test_fraction)
    for spectrum in ("low_rank", "exact"):
        settings = Settings(spectrum=spectrum)
        weighted = run_pipeline(target, problems_for(target, y, p, RowWeights(w, w)),
                                list(grids), grids, split, settings)
        want = run_pipeline(target, problems_for(target, y[copies_of], p[copies_of]),
                            list(grids), grids, repeated, settings)
        # the exact spectrum keeps every eigenpair: its rank counts rows, not copies
        assert_same_fields(weighted.to_params(), want.to_params(),
                           skip="rank" if spectrum == "exact" else None)
        assert weighted.estimate == pytest.approx(want.estimate, rel=1e-10)


def test_unit_weights_and_scale_free_design_weights():
    rng = np.random.default_rng(9)
    p = rng.uniform(0.05, 0.95, 60)
    y = (rng.uniform(size=60) < p).astype(int)
    quick = {"grid_sizes": {"bin": 3, "kde": 3, "kkr": 3, "ukkr": 3}, "random_state": 2}
    plain = estimate_squared_error(y, p, "tce2", **quick)
    ones = estimate_squared_error(y, p, "tce2", sample_weight=np.ones(60), **quick)
    assert_same_fields(ones.to_params(), plain.to_params())
    w = rng.uniform(0.5, 2.0, 60)
    quick["grid_sizes"].update(kkr=1, ukkr=1)  # above the ridge floor (rounding times 1 / c)
    design = estimate_squared_error(y, p, "tce2", sample_weight=w, weight_kind="design",
                                    **quick)
    scaled = estimate_squared_error(y, p, "tce2", sample_weight=7.0 * w,
                                    weight_kind="design", **quick)
    # the kernel's residual trace is that of W^1/2 (K - L^T L) W^1/2: it scales with w
    assert_same_fields(scaled.to_params(), design.to_params(), skip="residual_trace")
    assert (scaled.diagnostics["kernel_spectrum"]["residual_trace_max"] == pytest.approx(
        7.0 * design.diagnostics["kernel_spectrum"]["residual_trace_max"], rel=1e-6))
    assert design.estimate != pytest.approx(plain.estimate, rel=1e-6)


def test_rows_of_weight_zero_are_left_out_before_the_split():
    """A row of weight 0 is not in the weighted law: the estimate equals that of the rows
    of positive weight, and too few of them skip the estimate (never a division by zero
    in a fold without pairs of units)."""
    rng = np.random.default_rng(11)
    p = rng.uniform(0.05, 0.95, 80)
    y = (rng.uniform(size=80) < p).astype(int)
    w = rng.integers(1, 4, 80).astype(float)
    w[::3] = 0.0
    quick = {"grid_sizes": {"bin": 3, "kde": 3, "kkr": 2, "ukkr": 2}, "random_state": 4}
    kept = w > 0
    for kind in ("frequency", "design"):
        with_zeros = estimate_squared_error(y, p, "tce2", sample_weight=w, weight_kind=kind,
                                            **quick)
        without = estimate_squared_error(y[kept], p[kept], "tce2", sample_weight=w[kept],
                                         weight_kind=kind, **quick)
        assert_same_fields(with_zeros.to_params(), without.to_params())
    few = np.zeros(80)
    few[:3] = 2.0
    with pytest.raises(InputError, match="3 rows of positive weight are too few"):
        estimate_squared_error(y, p, "tce2", sample_weight=few, **quick)
    data = CalibrationData.from_arrays(y, p, sample_weight=few)
    metrics = squared_metrics(data.y_true, data.y_proba, targets=("tce2",),
                              estimators=("bin",), rng=np.random.default_rng(0), seed=0,
                              weights=data.weights, sample_weight=data.sample_weight)
    assert np.isnan(metrics[0].value)
    assert "3 rows of positive weight" in metrics[0].params["skipped"]


def test_weighted_audit_with_squared_errors_agrees_everywhere(tmp_path):
    rng = np.random.default_rng(2)
    n = 300
    p = rng.uniform(0.02, 0.98, n)
    frame = pd.DataFrame({"prob": p, "label": (rng.uniform(size=n) < p ** 1.4).astype(int),
                          "w": rng.uniform(0.5, 3.0, n)})
    frame.to_csv(tmp_path / "preds.csv", index=False)
    out = run_cli("test", tmp_path / "preds.csv", "--label-col", "label", "--prob-cols", "prob",
                  "--weight-col", "w", "--weight-kind", "design", "--squared", "tce2,cwce2",
                  "--squared-estimators", "bin,ukkr", "--n-resamples", "99", "--json",
                  tmp_path / "r.json", "--md", tmp_path / "r.md", "--html", tmp_path / "r.html",
                  "--junit", tmp_path / "r.xml")
    assert out.code in (0, 1), out.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    assert "squared" not in json.dumps(result["data"]["weights"]["not_weighted"])
    markdown = (tmp_path / "r.md").read_text()
    html = re.sub(r"<[^>]+>", " ", (tmp_path / "r.html").read_text())
    terminal = out.stdout.replace("│", "|")
    for target in ("tce2", "cwce2"):
        (metric,) = [m for m in result["metrics"] if m["id"] == target]
        assert np.isfinite(metric["value"]) and metric["params"]["estimator"] in ("bin", "ukkr")
        shown = f"{metric['value']:.4g}"
        assert re.search(rf"^{target}\s+\|\s+{re.escape(shown)}\s", terminal, re.M)
        assert f"| {target} | {shown} |" in markdown
        assert re.search(rf"{target}\s+{re.escape(shown)}\b", html)
    curve = result["diagrams"]["smooth_reliability"]  # the weighted smoothed diagram
    (smece,) = [m for m in result["metrics"] if m["id"] == "smece"]
    assert curve["weights"] == "design" and curve["smece"] == smece["value"]
    for text in (markdown, html):
        assert "Every row counts with its weight (design weights)." in text
    verdict = result["verdict"]
    assert f"verdict: {verdict}" in out.stdout and f"## Verdict: {verdict}" in markdown
    junit = (tmp_path / "r.xml").read_text()
    assert (verdict == "FAIL") == ('failures="0"' not in junit)
