"""The entry points of the squared-error pipeline: ``estimate_squared_error`` (Python)
and ``squared_metrics`` (the audit's metrics)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from calaudit import registry
from calaudit.data.weights import SampleWeights
from calaudit.exceptions import ConfigError, InputError
from calaudit.numerics.random import one_seed
from calaudit.results import MetricResult
from calaudit.squared.fitting import Settings
from calaudit.squared.grids import ESTIMATORS, paper_grid, thin
from calaudit.squared.result import SquaredErrorResult
from calaudit.squared.risk import RowWeights
from calaudit.squared.selection import make_split, minimum_rows, run_pipeline
from calaudit.squared.targets import TARGETS, problems_for


def resolve_grids(estimators: Sequence[str], canonical: bool,
                  grid_sizes: Mapping[str, int | None] | None = None
                  ) -> dict[str, tuple[float, ...]]:
    """The appendix-B grid of each estimator, thinned to ``grid_sizes[estimator]``."""
    sizes = dict(grid_sizes or {})
    return {e: thin(paper_grid(e, canonical), sizes.get(e)) for e in estimators}


def check_choices(target: str, estimators: Sequence[str]) -> None:
    """ConfigError for an unknown target or estimator, or none at all."""
    if target not in TARGETS:
        raise ConfigError(f"unknown squared calibration error {target!r}; "
                          f"choose from {', '.join(TARGETS)}")
    if not estimators:
        raise ConfigError("no estimator given for the squared calibration errors")
    for name in estimators:
        if name not in ESTIMATORS:
            raise ConfigError(f"unknown squared-error estimator {name!r}; "
                              f"choose from {', '.join(ESTIMATORS)}")


def row_weights(weights: SampleWeights | None, sample_weight: np.ndarray | None
                ) -> RowWeights | None:
    """The rows' weights ``w`` and units ``t`` (:class:`calaudit.squared.risk.RowWeights`)
    of an audit's weights."""
    if weights is None:
        return None
    return RowWeights(np.asarray(sample_weight, dtype=np.float64), weights.unit_split()[0])


def positive_rows(y_true: np.ndarray, y_proba: np.ndarray, weights: RowWeights | None
                  ) -> tuple[np.ndarray, np.ndarray, RowWeights | None]:
    """The rows of positive weight (all rows unweighted): a row of weight 0 is not in the
    weighted empirical law, so it is left out before the split (every fold's U-statistic
    then has pairs of distinct units)."""
    if weights is None or bool(np.all(weights.weights > 0)):
        return y_true, y_proba, weights
    keep = np.flatnonzero(weights.weights > 0)
    return y_true[keep], y_proba[keep], weights.take(keep)


def run_target(target: str, y_true: np.ndarray, y_proba: np.ndarray, *,
               estimators: Sequence[str], n_folds: int, test_fraction: float,
               grid_sizes: Mapping[str, int | None] | None, settings: Settings,
               rng: np.random.Generator, weights: RowWeights | None = None
               ) -> SquaredErrorResult:
    """The pipeline on validated arrays (``y_proba`` (n, m), ``y_true`` class indices)."""
    check_choices(target, estimators)
    split = make_split(y_true.shape[0], n_folds, test_fraction, rng)
    grids = resolve_grids(estimators, target == "cce2", grid_sizes)
    return run_pipeline(target, problems_for(target, y_true, y_proba, weights),
                        list(estimators), grids, split, settings)


def squared_metrics(y_true: np.ndarray, y_proba: np.ndarray, *, targets: Sequence[str],
                    estimators: Sequence[str] = ESTIMATORS, n_folds: int = 5,
                    test_fraction: float = 0.2,
                    grid_sizes: Mapping[str, int | None] | None = None,
                    settings: Settings | None = None, max_rows: int | None = None,
                    seed: int | None = None, rng: np.random.Generator,
                    weights: SampleWeights | None = None,
                    sample_weight: np.ndarray | None = None) -> list[MetricResult]:
    """One metric per target (``CE_2^2``; ``params.root`` is ``CE_2``), estimator and
    hyperparameter chosen by cross-validated risk (``params``: the choice, the candidates'
    risks, the settings and ``seed``). All targets share one split seeded from ``rng``;
    data above ``max_rows`` or too small for the folds: NaN and ``params.skipped``.
    ``weights``, ``sample_weight``: the weighted empirical law (docs/weights.md)."""
    y_true, y_proba, rows = positive_rows(y_true, y_proba, row_weights(weights, sample_weight))
    n, least = y_true.shape[0], minimum_rows(n_folds)
    reason = None
    if max_rows is not None and n > max_rows:
        reason = f"{n} rows > squared.max_rows = {max_rows}"
    elif n < least:
        reason = (f"{n} rows{'' if rows is None else ' of positive weight'} are too few for "
                  f"{n_folds}-fold cross-validation (at least {least})")
    if reason:
        return [MetricResult(t, float("nan"), {"squared": True, "skipped": reason},
                             title=registry.title(t)) for t in targets]
    split_seed = int(rng.integers(2**63 - 1))
    metrics = []
    for target in targets:
        result = run_target(target, y_true, y_proba, estimators=estimators, n_folds=n_folds,
                            test_fraction=test_fraction, grid_sizes=grid_sizes,
                            settings=settings or Settings(),
                            rng=np.random.default_rng(split_seed), weights=rows)
        metrics.append(MetricResult(target, result.estimate, {**result.to_params(), "seed": seed},
                                    title=registry.title(target)))
    return metrics


def estimate_squared_error(y_true, y_proba, target: str = "cce2", *,
                           estimators: Sequence[str] = ESTIMATORS, n_folds: int = 5,
                           test_fraction: float = 0.2,
                           grid_sizes: Mapping[str, int | None] | None = None,
                           settings: Settings | None = None,
                           random_state: np.random.Generator | int | None = None,
                           rng: np.random.Generator | int | None = None, sample_weight=None,
                           weight_kind: str = "frequency") -> SquaredErrorResult:
    """Estimate ``TCE_2^2``, ``CWCE_2^2`` or ``CCE_2^2`` with the estimator and
    hyperparameters that minimise the cross-validated risk of Gruber & Bach (eq. 20).

    ``y_true`` holds labels and ``y_proba`` the probabilities, (n,) for binary models
    (positive class) or (n, m); both are validated like a file. ``estimators`` is any of
    ``bin``, ``kde``, ``kkr``, ``ukkr``; ``grid_sizes`` thins the appendix-B grids
    (``{"kkr": 6}``); ``random_state`` (an int or a ``numpy.random.Generator``; ``rng`` is
    an alias, scipy's name; default 0) seeds the split. ``sample_weight`` (n,) weights
    the rows (``weight_kind`` ``frequency`` or ``design``; docs/weights.md). Example::

        result = estimate_squared_error(y, p, "tce2", random_state=0)
        result.estimate, result.estimator, result.chosen.candidate.risk
    """
    from calaudit.data.dataset import CalibrationData

    data = CalibrationData.from_arrays(y_true, y_proba, sample_weight=sample_weight,
                                       weight_kind=weight_kind)
    if not isinstance(n_folds, int) or n_folds < 2:
        raise ConfigError(f"n_folds must be an integer >= 2; got {n_folds!r}")
    if not 0.0 < test_fraction < 1.0:
        raise ConfigError(f"test_fraction must be in (0, 1); got {test_fraction!r}")
    y, proba, rows = positive_rows(data.y_true, data.y_proba,
                                   row_weights(data.weights, data.sample_weight))
    if y.shape[0] < minimum_rows(n_folds):
        raise InputError(f"{y.shape[0]} rows{'' if rows is None else ' of positive weight'} "
                         f"are too few for the squared-error pipeline with {n_folds} folds "
                         f"(at least {minimum_rows(n_folds)})", rule="too_few_rows")
    seed = one_seed(0, random_state=random_state, rng=rng)
    generator = (seed if isinstance(seed, np.random.Generator)
                 else np.random.default_rng(seed))
    return run_target(target, y, proba, estimators=tuple(estimators), n_folds=n_folds,
                      test_fraction=test_fraction, grid_sizes=grid_sizes,
                      settings=settings or Settings(), rng=generator, weights=rows)
