"""Calibration error estimators: plain functions of ``(y_true, y_proba)`` returning floats
or small result dataclasses. No file handling, no configuration."""
