"""The Python API: lazy top-level names, load -> run_audit -> result."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import calaudit
from tests.conftest import SAMPLE


def test_public_names_resolve():
    for name in calaudit.__all__:
        assert getattr(calaudit, name) is not None
    with pytest.raises(AttributeError):
        calaudit.no_such_name  # noqa: B018


def test_import_is_light():
    code = "import sys, calaudit; print(any(m in sys.modules for m in ('numpy', 'pandas')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_load_and_audit_from_python():
    data = calaudit.load(SAMPLE / "credit_default.parquet", covariates=["age", "race"])
    result = calaudit.run_audit(data, calaudit.AuditConfig(seed=3))
    assert result.metric("ece").value == pytest.approx(
        calaudit.expected_calibration_error(data.y_true, data.y_proba))
    # the sample's built-in truth: globally calibrated, biased by group
    assert all(t.status is calaudit.Status.PASS for t in result.tests
               if t.family != "local")
    assert result.test("local_consistency").status is calaudit.Status.FAIL
    assert result.verdict is calaudit.Status.FAIL
    assert result.to_dict()["config"]["seed"] == 3


def test_from_arrays_validates_like_files():
    with pytest.raises(calaudit.InputError, match="probability_out_of_range"):
        calaudit.CalibrationData.from_arrays([0, 1], [0.2, 1.3])
    data = calaudit.CalibrationData.from_arrays(
        ["a", "b", "c"], np.eye(3) * 0.7 + 0.1, classes=["a", "b", "c"],
        covariates={"g": ["x", "y", "x"]})
    assert data.y_true.tolist() == [0, 1, 2]
    assert data.covariate("g").categories == ("x", "y")


def test_config_validation():
    with pytest.raises(calaudit.ConfigError, match="alpha"):
        calaudit.AuditConfig(alpha=0)
    with pytest.raises(calaudit.ConfigError, match="binning"):
        calaudit.BinningConfig(strategy="log")
