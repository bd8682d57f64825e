"""The squared-errors stage in the battery, its configuration section and the CLI."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

import calaudit
from calaudit.audit.battery import SquaredErrorStage, squared_settings
from calaudit.audit.config import (
    SQUARED_ESTIMATORS,
    SQUARED_TARGETS,
    AuditConfig,
    SquaredConfig,
)
from calaudit.cli.app import app
from calaudit.numerics.random import stream
from calaudit.squared import ESTIMATORS, TARGETS
from calaudit.squared.api import run_target
from tests.conftest import SAMPLE
from tests.test_squared_estimators import dirichlet_data

runner = CliRunner()
QUICK = {"bin_grid_size": 3, "kde_grid_size": 3, "kkr_grid_size": 3, "ukkr_grid_size": 3}


def small_data(n=240, m=3, seed=21):
    y, p = dirichlet_data(n, m, seed=seed)
    return calaudit.CalibrationData.from_arrays(y, p)


def test_config_names_match_the_package():
    assert SQUARED_TARGETS == TARGETS and SQUARED_ESTIMATORS == ESTIMATORS


def test_config_is_toml_friendly_and_documented():
    allowed = {"bool", "int", "float", "str", "tuple[str, ...]", "int | None"}
    for f in dataclasses.fields(SquaredConfig):
        assert f.type in allowed, f.name
        assert f.metadata.get("help"), f.name
    assert AuditConfig().squared == SquaredConfig()
    assert AuditConfig().to_dict()["squared"]["enabled"] is False


@pytest.mark.parametrize("kwargs,match", [
    ({"targets": ("ece",)}, "unknown target"),
    ({"estimators": ()}, "at least one estimator"),
    ({"estimators": ("svm",)}, "unknown estimator"),
    ({"n_folds": 1}, "n_folds"),
    ({"test_fraction": 0.0}, "test_fraction"),
    ({"kde_grid_size": 0}, "kde_grid_size"),
    ({"max_rows": 0}, "max_rows"),
    ({"kernel_gamma": 0.0}, "kernel_gamma"),
    ({"spectrum": "svd"}, "spectrum"),
    ({"rank_tolerance": -1.0}, "rank_tolerance"),
    ({"max_rank": 0}, "max_rank"),
])
def test_config_validation(kwargs, match):
    with pytest.raises(calaudit.ConfigError, match=match):
        SquaredConfig(**kwargs)


def test_config_from_command_line_options():
    assert SquaredConfig.from_options(None, None).enabled is False
    assert SquaredConfig.from_options("off", None).enabled is False
    everything = SquaredConfig.from_options("all", None)
    assert everything.enabled and everything.targets == SQUARED_TARGETS
    some = SquaredConfig.from_options("TCE2, cce2", "bin,kde")
    assert some.targets == ("tce2", "cce2") and some.estimators == ("bin", "kde")
    implied = SquaredConfig.from_options(None, "kkr")
    assert implied.enabled and implied.estimators == ("kkr",)
    with pytest.raises(calaudit.ConfigError, match="unknown target"):
        SquaredConfig.from_options("tce", None)


def test_stage_is_off_by_default():
    data = small_data()
    assert SquaredErrorStage().run(data, AuditConfig(), stream(0, "squared_errors")).metrics == ()


def test_stage_metrics_follow_the_pipeline_with_the_stage_stream():
    data = small_data()
    squared = SquaredConfig(enabled=True, targets=("tce2", "cce2"), **QUICK)
    config = AuditConfig(seed=4, squared=squared)
    out = SquaredErrorStage().run(data, config, stream(4, "squared_errors"))
    assert [m.id for m in out.metrics] == ["tce2", "cce2"]
    split_seed = int(stream(4, "squared_errors").integers(2**63 - 1))
    for metric in out.metrics:
        expected = run_target(metric.id, data.y_true, data.y_proba,
                              estimators=SQUARED_ESTIMATORS, n_folds=5, test_fraction=0.2,
                              grid_sizes=squared.grid_sizes(), settings=squared_settings(squared),
                              rng=np.random.default_rng(split_seed))
        assert metric.value == expected.estimate
        assert metric.params["estimator"] == expected.estimator
        assert metric.params["seed"] == 4
        assert len(metric.params["candidates"]) == 12
        assert metric.params["root"] == pytest.approx(math.sqrt(max(metric.value, 0)))
        assert metric.title.startswith("Squared")


def test_stage_skips_large_and_tiny_data_with_a_reason():
    data = small_data()
    config = AuditConfig(squared=SquaredConfig(enabled=True, max_rows=100, targets=("tce2",)))
    (metric,) = SquaredErrorStage().run(data, config, stream(0, "squared_errors")).metrics
    assert math.isnan(metric.value) and "max_rows" in metric.params["skipped"]
    assert metric.to_dict()["value"] is None
    tiny = small_data(n=10)
    config = AuditConfig(squared=SquaredConfig(enabled=True, targets=("cce2",)))
    (metric,) = SquaredErrorStage().run(tiny, config, stream(0, "squared_errors")).metrics
    assert "too few" in metric.params["skipped"]


def test_run_audit_includes_the_squared_metrics():
    data = small_data()
    config = AuditConfig(squared=SquaredConfig(enabled=True, targets=("cwce2",), **QUICK))
    result = calaudit.run_audit(data, config)
    metric = result.metric("cwce2")
    assert metric.value >= 0 and metric.params["settings"]["problems"] == 3
    assert result.to_dict()["config"]["squared"]["targets"] == ["cwce2"]


def test_cli_squared_options(tmp_path):
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["test", str(SAMPLE / "image_classifier.npz"), "--squared",
                                 "tce2", "--squared-estimators", "bin,ukkr", "--json",
                                 str(out)])
    assert result.exit_code == 0, result.output
    payload = json.loads(out.read_text())
    (metric,) = [m for m in payload["metrics"] if m["id"] == "tce2"]
    assert metric["params"]["estimator"] in ("bin", "ukkr")
    assert {c["estimator"] for c in metric["params"]["candidates"]} == {"bin", "ukkr"}
    assert "tce2" in result.stdout
    assert payload["config"]["squared"]["enabled"] is True


def test_cli_default_and_errors(tmp_path):
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["metrics", str(SAMPLE / "image_classifier.npz"),
                                 "--json", str(out)])
    assert result.exit_code == 0
    ids = {m["id"] for m in json.loads(out.read_text())["metrics"]}
    assert not ids & {"tce2", "cwce2", "cce2"}
    bad = runner.invoke(app, ["test", str(SAMPLE / "image_classifier.npz"), "--squared",
                              "tce3"])
    assert bad.exit_code == 2 and "unknown target 'tce3'" in bad.output
    bad = runner.invoke(app, ["test", str(SAMPLE / "image_classifier.npz"),
                              "--squared-estimators", "svm"])
    assert bad.exit_code == 2 and "unknown estimator 'svm'" in bad.output
