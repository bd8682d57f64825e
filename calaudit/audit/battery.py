"""The battery: the ordered list of stages an audit runs.

A new family of checks is a new module with a stage class, added here.
"""

from __future__ import annotations

from calaudit.audit.calibration_errors import CalibrationErrorStage
from calaudit.audit.squared_errors import SquaredErrorStage
from calaudit.audit.stages import Stage


def stages() -> tuple[Stage, ...]:
    """Stages in report order."""
    return (CalibrationErrorStage(), SquaredErrorStage())
