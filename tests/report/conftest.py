"""Fixtures of the report tests: real results from the sample data and synthetic
results that fill every section of the schema (see ``synthetic.py``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from calaudit.audit.config import AuditConfig
from calaudit.audit.runner import run_audit
from calaudit.data.load import load
from tests.report import synthetic

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_data"


@pytest.fixture(scope="session")
def credit_result() -> dict:
    """``calaudit test credit_default.csv --covariates age,race`` as a dict."""
    data = load(SAMPLES / "credit_default.csv", covariates="age,race")
    return run_audit(data, AuditConfig(n_resamples=200)).to_dict()


@pytest.fixture(scope="session")
def image_result() -> dict:
    """The miscalibrated 10-class sample."""
    data = load(SAMPLES / "image_classifier.npz", label_col="labels_miscalibrated")
    return run_audit(data, AuditConfig(n_resamples=200)).to_dict()


@pytest.fixture
def binary_synth() -> dict:
    return synthetic.binary_result()


@pytest.fixture
def multiclass_synth() -> dict:
    return synthetic.multiclass_result()


@pytest.fixture
def minimal_synth() -> dict:
    return synthetic.minimal_result()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where tests leave files for people to look at (screenshots): ``test-artifacts/``
    at the repository root (gitignored), or ``$CALAUDIT_TEST_ARTIFACTS``."""
    folder = Path(os.environ.get("CALAUDIT_TEST_ARTIFACTS", REPO / "test-artifacts"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def binary_html() -> str:
    """The synthetic binary result rendered once (figures take a while to draw)."""
    from calaudit.report.render import render_html

    return render_html(synthetic.binary_result()).text


@pytest.fixture(scope="session")
def multiclass_html() -> str:
    from calaudit.report.render import render_html

    return render_html(synthetic.multiclass_result()).text
