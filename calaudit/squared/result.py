"""Result objects of the squared-calibration-error pipeline (pure data)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from calaudit.results import jsonable


@dataclass(frozen=True)
class Candidate:
    """One (estimator, hyperparameter value) of the search: its validation risk (eq. 20)
    averaged over the cross-validation folds, and the standard error over folds."""

    estimator: str
    parameter: str
    value: float
    risk: float
    risk_se: float
    fold_risks: tuple[float, ...]

    @property
    def setting(self) -> float | int:
        """The hyperparameter value (an integer number of bins for ``bin``)."""
        return int(self.value) if self.parameter == "n_bins" else self.value

    def to_dict(self) -> dict[str, Any]:
        return {"estimator": self.estimator, "parameter": self.parameter,
                "value": self.setting, "risk": self.risk, "risk_se": self.risk_se}


@dataclass(frozen=True)
class Fitted:
    """An estimator at its best hyperparameter value: validation risk and the estimate of
    eq. 21 on the test split by the ensemble of the fold models (mean over folds), with
    the standard error over the folds' individual estimates."""

    candidate: Candidate
    estimate: float
    estimate_se: float
    fold_estimates: tuple[float, ...]

    @property
    def estimator(self) -> str:
        return self.candidate.estimator

    def to_dict(self) -> dict[str, Any]:
        return {**self.candidate.to_dict(), "estimate": self.estimate,
                "estimate_se": self.estimate_se}


@dataclass(frozen=True)
class SquaredErrorResult:
    """A squared calibration error of Gruber & Bach's pipeline (sec. 3.2.2 and 5.2):
    ``estimate`` (``CE_2^2``) and ``root = sqrt(max(estimate, 0))`` (``CE_2``)."""

    target: str
    estimate: float
    chosen: Fitted
    per_estimator: tuple[Fitted, ...]
    candidates: tuple[Candidate, ...]
    split: Mapping[str, Any]
    settings: Mapping[str, Any]
    diagnostics: Mapping[str, Any] = field(default_factory=dict)

    @property
    def root(self) -> float:
        return math.sqrt(max(self.estimate, 0.0))

    @property
    def estimator(self) -> str:
        return self.chosen.estimator

    @property
    def risk(self) -> float:
        return self.chosen.candidate.risk

    def best(self, estimator: str) -> Fitted:
        """The fitted entry of one estimator."""
        return next(f for f in self.per_estimator if f.estimator == estimator)

    def to_params(self) -> dict[str, Any]:
        """The ``params`` of the ``tce2`` / ``cwce2`` / ``cce2`` metric."""
        chosen = self.chosen
        return jsonable({
            "squared": True,
            "root": self.root,
            "estimator": chosen.estimator,
            "hyperparameters": {chosen.candidate.parameter: chosen.candidate.setting},
            "risk": chosen.candidate.risk,
            "risk_se": chosen.candidate.risk_se,
            "estimate_se": chosen.estimate_se,
            "per_estimator": [f.to_dict() for f in self.per_estimator],
            "candidates": [c.to_dict() for c in self.candidates],
            "selection": dict(self.split),
            "settings": dict(self.settings),
            "diagnostics": dict(self.diagnostics),
        })
