"""Squared calibration errors and their risk-based estimator selection (Gruber & Bach):
targets (:mod:`.targets`), estimators ``bin``, ``kde``, ``kkr``, ``ukkr``, the risk of eq. 20
(:mod:`.risk`), the grids of appendix B (:mod:`.grids`), the pipeline (:mod:`.selection`)
and :func:`estimate_squared_error` (:mod:`.api`).
"""

from __future__ import annotations

from calaudit.squared.api import estimate_squared_error
from calaudit.squared.fitting import Settings
from calaudit.squared.grids import ESTIMATORS
from calaudit.squared.result import Candidate, Fitted, SquaredErrorResult
from calaudit.squared.risk import pairwise_risk
from calaudit.squared.targets import TARGETS

__all__ = ["ESTIMATORS", "TARGETS", "Candidate", "Fitted", "Settings", "SquaredErrorResult",
           "estimate_squared_error", "pairwise_risk"]
