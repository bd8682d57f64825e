"""Fixtures of the report tests: real results from the sample data and synthetic
results that fill every section of the schema (see ``synthetic.py``)."""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from calaudit.audit.config import AuditConfig
from calaudit.audit.runner import run_audit
from calaudit.data.load import load
from tests.report import synthetic

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_data"


def once_per_run(tmp_path_factory, name: str, make: Callable[[], Any]) -> Any:
    """``make()``, made once for the whole test run: in a parallel run (pytest-xdist) the
    first worker to ask makes it and leaves it pickled in the run's temporary folder,
    where the other workers read it instead of making their own. A worker that finds the
    maker failed (or gone for 15 minutes) makes its own."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the folder of the whole run, above the workers' own
    made, failed = root / f"{name}.pickle", root / f"{name}.failed"
    try:
        os.close(os.open(root / f"{name}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        deadline = time.monotonic() + 900
        while not made.exists() and not failed.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if made.exists():
            return pickle.loads(made.read_bytes())
        return make()
    try:
        value = make()
    except BaseException:
        failed.touch()
        raise
    partial = root / f"{name}.partial"
    partial.write_bytes(pickle.dumps(value))
    os.replace(partial, made)
    return value


def _credit_result() -> dict:
    data = load(SAMPLES / "credit_default.csv", covariates="age,race")
    return run_audit(data, AuditConfig(n_resamples=200)).to_dict()


def _image_result() -> dict:
    data = load(SAMPLES / "image_classifier.npz", label_col="labels_miscalibrated")
    return run_audit(data, AuditConfig(n_resamples=200)).to_dict()


@pytest.fixture(scope="session")
def credit_result(tmp_path_factory) -> dict:
    """``calaudit test credit_default.csv --covariates age,race`` as a dict."""
    return once_per_run(tmp_path_factory, "credit_result", _credit_result)


@pytest.fixture(scope="session")
def image_result(tmp_path_factory) -> dict:
    """The miscalibrated 10-class sample."""
    return once_per_run(tmp_path_factory, "image_result", _image_result)


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


def _rendered(result: Callable[[], dict]) -> Callable[[], str]:
    def render() -> str:
        from calaudit.report.render import render_html

        return render_html(result()).text
    return render


@pytest.fixture(scope="session")
def binary_html(tmp_path_factory) -> str:
    """The synthetic binary result rendered once (figures take a while to draw)."""
    return once_per_run(tmp_path_factory, "binary_html", _rendered(synthetic.binary_result))


@pytest.fixture(scope="session")
def multiclass_html(tmp_path_factory) -> str:
    return once_per_run(tmp_path_factory, "multiclass_html",
                        _rendered(synthetic.multiclass_result))
