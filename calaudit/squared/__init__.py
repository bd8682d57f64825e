"""Squared calibration errors and their risk-based estimator selection (Gruber & Bach).

Targets ``tce2``, ``cwce2``, ``cce2`` (:mod:`.targets`); calibration estimation functions
``bin`` (:mod:`.binning`), ``kde`` (:mod:`.kde`), ``kkr`` (:mod:`.kkr`), ``ukkr``
(:mod:`.ukkr`); the risk of eq. 20 (:mod:`.risk`); grids of appendix B (:mod:`.grids`);
the split / cross-validation / ensemble pipeline (:mod:`.selection`); the entry point
:func:`estimate_squared_error` (:mod:`.api`).
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
