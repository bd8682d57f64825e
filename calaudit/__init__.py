"""calaudit: audit whether a probabilistic classifier's probabilities can be trusted.

The public Python API. Names load lazily so that ``import calaudit`` (and the command
line's ``--help``) stays fast::

    import calaudit
    data = calaudit.load("preds.parquet", covariates="age,race")
    result = calaudit.run_audit(data, calaudit.AuditConfig(seed=1))
    result.metric("ece").value

Subpackages: ``calaudit.stats`` (one function per calibration test, scipy-like results),
``calaudit.plot`` (scikit-learn-like ``Display`` objects), ``calaudit.metrics`` (every
estimator as a plain function), ``calaudit.scale`` (where row reductions run:
``calaudit.scale.using(executor)`` chooses threads, one process or a Dask cluster for a
block of calls). Guide: ``docs/api.md``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from calaudit import display
from calaudit._version import __version__

_EXPORTS = {
    "load": "calaudit.data.load",
    "CalibrationData": "calaudit.data.dataset",
    "Covariate": "calaudit.data.parts",
    "AuditConfig": "calaudit.audit.config",
    "BinningConfig": "calaudit.audit.config",
    "run_audit": "calaudit.audit.runner",
    "AuditResult": "calaudit.results",
    "MetricResult": "calaudit.results",
    "TestResult": "calaudit.results",
    "Status": "calaudit.results",
    "expected_calibration_error": "calaudit.metrics.ece",
    "max_calibration_error": "calaudit.metrics.ece",
    "brier_score": "calaudit.metrics.brier",
    "smooth_ece": "calaudit.metrics.smooth_ece",
    "log_loss": "calaudit.metrics.log_loss",
    "estimate_squared_error": "calaudit.squared.api",
    "SquaredConfig": "calaudit.audit.config",
    "adjust_pvalues": "calaudit.inference.multitest",
    "CalauditError": "calaudit.exceptions",
    "InputError": "calaudit.exceptions",
    "ConfigError": "calaudit.exceptions",
}

_SUBPACKAGES = ("stats", "plot", "metrics", "scale")

__all__ = ["__version__", *_EXPORTS, *_SUBPACKAGES]


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return import_module(f"calaudit.{name}")
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'calaudit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


def _result_html(result: Any) -> str:
    """A result's notebook HTML (:mod:`calaudit.output.notebook`, imported when a result
    is first shown)."""
    from calaudit.output.notebook import result_html

    return result_html(result)


display.install_result_html(_result_html)
