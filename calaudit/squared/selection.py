"""The calibration-evaluation pipeline (Gruber & Bach, sec. 3.2.2 and 5.2).

1. A random split: ``test_fraction`` (20 %) of the rows is the test split, the rest is
   cut into ``n_folds`` (5) contiguous cross-validation folds of the shuffled rows.
2. On each fold every estimator is fitted on the other folds for its whole grid and its
   risk (eq. 20) computed on the held-out fold; risks are averaged over folds (standard
   errors over folds).
3. Each estimator's best grid value minimises the mean validation risk; the estimator
   with the smallest such risk is chosen. Risks on the test split are never compared
   (the paper's remark in sec. 3.2.2).
4. The estimate is eq. 21 on the test split with the fold models as an ensemble: the mean
   over folds of ``mean_i h_fold(x_i, x_i)``.

Weighted rows (docs/weights.md): the same split, weighted fits, the weighted risks of
:mod:`calaudit.squared.risk` and weighted means. A target with several problems adds risks
and estimates over them; one hyperparameter value is chosen for all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.squared.binning import BinningPath
from calaudit.squared.fitting import EvalSet, FittedPath, Settings
from calaudit.squared.grids import PARAMETER
from calaudit.squared.kde import KdePath
from calaudit.squared.kkr import KernelFold, KkrPath
from calaudit.squared.result import Candidate, Fitted, SquaredErrorResult
from calaudit.squared.risk import RowWeights
from calaudit.squared.targets import Problem
from calaudit.squared.ukkr import UkkrPath


@dataclass(frozen=True)
class Split:
    """Row indices of the test split and of each (training, validation) fold."""

    test: NDArray[np.intp]
    folds: tuple[tuple[NDArray[np.intp], NDArray[np.intp]], ...]
    test_fraction: float

    def describe(self, weights: RowWeights | None = None) -> dict[str, Any]:
        """The split's sizes: rows, or on weighted rows the units they stand for (the
        weights' sum for frequency weights)."""
        if weights is None:
            n_train_val, n_test = sum(len(v) for _, v in self.folds), int(self.test.size)
        else:
            units = weights.units
            n_train_val = float(sum(units[v].sum() for _, v in self.folds))
            n_test = float(units[self.test].sum())
        return {"n_folds": len(self.folds), "test_fraction": self.test_fraction,
                "n_train_val": n_train_val, "n_test": n_test,
                "criterion": "mean validation risk over folds (eq. 20)",
                "ensemble": "mean of the fold models' estimates on the test split (eq. 21)"}


def minimum_rows(n_folds: int) -> int:
    """The fewest rows the pipeline accepts: two rows in every validation fold (a
    U-statistic needs pairs) and in the test split."""
    return 2 * n_folds + 2


def make_split(n: int, n_folds: int, test_fraction: float, rng: np.random.Generator) -> Split:
    """Shuffle, hold out ``round(test_fraction * n)`` rows (at least 2) as the test split
    and cut the rest into ``n_folds`` contiguous folds (a split of rows, weighted or not)."""
    if n < minimum_rows(n_folds):
        raise ValueError(f"{n} rows are too few for {n_folds}-fold cross-validation and a "
                         f"test split; at least {minimum_rows(n_folds)} are needed")
    order = rng.permutation(n)
    n_test = min(max(2, int(round(test_fraction * n))), n - 2 * n_folds)
    train_val = order[: n - n_test]
    pieces = np.array_split(np.arange(train_val.size), n_folds)
    folds = tuple((train_val[np.setdiff1d(np.arange(train_val.size), piece)], train_val[piece])
                  for piece in pieces)
    return Split(order[n - n_test:], folds, test_fraction)


def fit_path(estimator: str, train: Problem, grid: tuple[float, ...], settings: Settings,
             shared: dict[str, Any]) -> FittedPath:
    """Fit one estimator on one training fold (``shared`` holds the kernel spectrum that
    ``kkr`` and ``ukkr`` have in common)."""
    if estimator == "bin":
        return BinningPath(train, grid)
    if estimator == "kde":
        return KdePath(train, grid)
    if estimator in ("kkr", "ukkr"):
        if "kernel" not in shared:
            shared["kernel"] = KernelFold(train, settings)
        path = KkrPath if estimator == "kkr" else UkkrPath
        return path(shared["kernel"], grid, settings)
    raise ValueError(f"unknown estimator {estimator!r}")


def _se(values: NDArray[np.float64]) -> float:
    return float(np.std(values, ddof=1) / np.sqrt(values.size)) if values.size > 1 else 0.0


@dataclass
class CrossValidation:
    """Step 2: validation risks ``risks[e]`` (folds x grid, summed over problems), the
    fitted paths by (fold, problem, estimator) and the kernel spectra's facts."""

    risks: dict[str, NDArray[np.float64]]
    paths: dict[tuple[int, int, str], FittedPath]
    kernel_facts: list[list[dict[str, Any]]]


def cross_validate(problems: Sequence[Problem], estimators: Sequence[str],
                   grids: dict[str, tuple[float, ...]], split: Split, settings: Settings,
                   tests: Sequence[EvalSet]) -> CrossValidation:
    """Fit every estimator on every training fold and compute its validation risks."""
    n_folds = len(split.folds)
    cv = CrossValidation({e: np.zeros((n_folds, len(grids[e]))) for e in estimators}, {}, [])
    for k, (train_rows, val_rows) in enumerate(split.folds):
        cv.kernel_facts.append([])
        for p, problem in enumerate(problems):
            train, shared = problem.training(train_rows), {}
            val = EvalSet(f"val{k}", problem.take(val_rows))
            for e in estimators:
                path = fit_path(e, train, grids[e], settings, shared)
                cv.risks[e][k] += path.risks(val)
                cv.paths[k, p, e] = path
            if "kernel" in shared:  # keep only the test projections of this fold
                shared["kernel"].retain(tests[p])
                cv.kernel_facts[k].append(shared["kernel"].facts)
    return cv


def run_pipeline(target: str, problems: Sequence[Problem], estimators: Sequence[str],
                 grids: dict[str, tuple[float, ...]], split: Split,
                 settings: Settings) -> SquaredErrorResult:
    """Steps 2-4 for one target; ``grids`` maps each estimator to its grid."""
    tests = [EvalSet("test", problem.take(split.test)) for problem in problems]
    cv = cross_validate(problems, estimators, grids, split, settings, tests)
    candidates: dict[str, list[Candidate]] = {
        e: [Candidate(e, PARAMETER[e], float(v), float(cv.risks[e][:, i].mean()),
                      _se(cv.risks[e][:, i]), tuple(cv.risks[e][:, i].tolist()))
            for i, v in enumerate(grids[e])] for e in estimators}
    fitted = []
    for e in estimators:  # steps 3-4: each estimator's best value, its ensemble estimate
        best = int(np.argmin(cv.risks[e].mean(axis=0)))
        per_fold = np.array([sum(cv.paths[k, p, e].estimate(tests[p], best)
                                 for p in range(len(problems)))
                             for k in range(len(split.folds))])
        fitted.append(Fitted(candidates[e][best], float(per_fold.mean()), _se(per_fold),
                             tuple(per_fold.tolist())))
    chosen = min(fitted, key=lambda f: f.candidate.risk)
    return SquaredErrorResult(
        target=target, estimate=chosen.estimate, chosen=chosen, per_estimator=tuple(fitted),
        candidates=tuple(c for e in estimators for c in candidates[e]),
        split=split.describe(problems[0].weights), settings=describe_settings(settings, problems),
        diagnostics=describe_kernels(cv.kernel_facts) if cv.kernel_facts[0] else {})


def describe_kernels(facts: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """The kernel spectra of kkr / ukkr: rank per fold (per problem for class-wise)."""
    ranks = [[f["rank"] for f in fold] for fold in facts]
    return {"kernel_spectrum": {
        "method": facts[0][0]["spectrum"],
        "rank": [r[0] for r in ranks] if len(ranks[0]) == 1 else ranks,
        "residual_trace_max": max(f["residual_trace"] for fold in facts for f in fold)}}


def describe_settings(settings: Settings, problems: Sequence[Problem]) -> dict[str, Any]:
    """The fixed settings behind the numbers, for ``params.settings``."""
    return {
        "problems": len(problems),
        "kernel": {"type": "gaussian", "gamma": settings.kernel_gamma,
                   "definition": "exp(-gamma * ||x - x'||^2)"},
        "lambda": {"kkr": f"lambda = n_train^{settings.kkr_lambda_exponent:g} * value, "
                          "ridge lambda * n_train^2 (eq. 28)",
                   "ukkr": f"lambda = n_train^{settings.ukkr_lambda_exponent:g} * value, "
                           "ridge lambda * n_train (eq. 32)"},
        "kde_kernel": "Dirichlet (Beta for scores), bandwidth b: Dir(x; x_j / b + 1)",
        "bins": ("equal-width, right-closed" if not problems[0].simplex
                 else "per-dimension equal-width grid cells (n_bins per coordinate)"),
        "spectrum": {"method": settings.spectrum, "rank_tolerance": settings.rank_tolerance,
                     "max_rank": settings.max_rank},
    }
