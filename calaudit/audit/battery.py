"""The battery: the ordered list of stages an audit runs.

A new family of checks is a new module with a stage class, added here.
"""

from __future__ import annotations

from calaudit.audit.calibration_errors import CalibrationErrorStage
from calaudit.audit.clinical_stage import ClinicalStage
from calaudit.audit.diagrams import DiagramsStage
from calaudit.audit.ece_family import EceFamilyStage
from calaudit.audit.local_calibration import LocalCalibrationStage
from calaudit.audit.skce_stage import SkceStage
from calaudit.audit.smooth_ece_stage import SmoothEceStage
from calaudit.audit.squared_errors import SquaredErrorStage
from calaudit.audit.stages import Stage


def stages() -> tuple[Stage, ...]:
    """Stages in report order."""
    return (CalibrationErrorStage(), EceFamilyStage(), SmoothEceStage(), ClinicalStage(),
            SkceStage(), SquaredErrorStage(), LocalCalibrationStage(), DiagramsStage())
