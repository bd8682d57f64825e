"""Stage: squared calibration errors chosen by their risk (Gruber & Bach).

Metrics ``tce2``, ``cwce2``, ``cce2`` (the squared errors ``CE_2^2``; ``params.root`` is
``CE_2``). ``params`` names the chosen estimator and hyperparameter, the validation risk
of every candidate with its standard error over folds, each estimator's own best
candidate with its estimate, the split and cross-validation settings and the seed. All
targets share one split, drawn from the stage's random stream.

Off by default (``squared.enabled``; ``--squared``). With ``squared.max_rows`` set, larger
data sets are skipped, and so are data sets too small for the folds: the targets then
appear with value ``null`` and ``params.skipped`` saying why.
"""

from __future__ import annotations

import numpy as np

from calaudit.audit.config import AuditConfig, SquaredConfig
from calaudit.audit.stages import StageOutput
from calaudit.data.dataset import CalibrationData
from calaudit.results import MetricResult


def skipped(target: str, reason: str) -> MetricResult:
    """A target that was not estimated, and why."""
    from calaudit.squared.targets import TITLES

    return MetricResult(target, float("nan"), {"squared": True, "skipped": reason},
                        title=TITLES[target])


def settings_from(config: SquaredConfig):
    """The estimator settings of :mod:`calaudit.squared` for this configuration."""
    from calaudit.squared.fitting import Settings

    return Settings(kernel_gamma=config.kernel_gamma,
                    kkr_lambda_exponent=config.kkr_lambda_exponent,
                    ukkr_lambda_exponent=config.ukkr_lambda_exponent,
                    spectrum=config.spectrum, rank_tolerance=config.rank_tolerance,
                    max_rank=config.max_rank)


class SquaredErrorStage:
    """TCE_2^2, CWCE_2^2 and CCE_2^2 with cross-validated estimator selection."""

    name = "squared_errors"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        squared = config.squared
        if not squared.enabled or not squared.targets:
            return StageOutput()
        from calaudit.squared.api import run_target
        from calaudit.squared.selection import minimum_rows
        from calaudit.squared.targets import TITLES

        if squared.max_rows is not None and data.n > squared.max_rows:
            reason = f"{data.n} rows > squared.max_rows = {squared.max_rows}"
            return StageOutput(metrics=tuple(skipped(t, reason) for t in squared.targets))
        if data.n < minimum_rows(squared.n_folds):
            reason = (f"{data.n} rows are too few for {squared.n_folds}-fold "
                      f"cross-validation (at least {minimum_rows(squared.n_folds)})")
            return StageOutput(metrics=tuple(skipped(t, reason) for t in squared.targets))
        split_seed = int(rng.integers(2**63 - 1))
        settings = settings_from(squared)
        metrics = []
        for target in squared.targets:
            result = run_target(
                target, data.y_true, data.y_proba, estimators=squared.estimators,
                n_folds=squared.n_folds, test_fraction=squared.test_fraction,
                grid_sizes=squared.grid_sizes(), settings=settings,
                rng=np.random.default_rng(split_seed))
            params = {**result.to_params(), "seed": config.seed}
            metrics.append(MetricResult(target, result.estimate, params, title=TITLES[target]))
        return StageOutput(metrics=tuple(metrics))
