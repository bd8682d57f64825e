"""The API as scikit-learn users expect it: 1-D binary probabilities, KeyErrors that list
the ids, DataFrame covariates, 0-based indices, one seed name, printable statuses,
DataFrames and HTML for notebooks, progress callbacks."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

import calaudit
from calaudit import progress
from calaudit.audit.config import LocalConfig
from calaudit.metrics import brier, brier_decomposition, ece, ece_variants, log_loss, skce
from calaudit.metrics.smooth_ece import smooth_ece
from calaudit.numerics.kernels import gaussian


@pytest.fixture(scope="module")
def binary():
    rng = np.random.default_rng(11)
    p = rng.uniform(0.02, 0.98, 300)
    y = (rng.uniform(size=300) < p).astype(np.int64)
    return y, p


METRICS = [
    ece.expected_calibration_error, ece.max_calibration_error, brier.brier_score,
    brier.brier_score_binary, ece_variants.expected_calibration_error_l2,
    ece_variants.classwise_ece, ece_variants.debiased_ece, ece_variants.canonical_ece,
    log_loss.log_loss, smooth_ece,
]


@pytest.mark.parametrize("metric", METRICS, ids=lambda f: f.__name__)
def test_one_dimensional_probabilities_mean_the_positive_class(metric, binary):
    y, p = binary
    two = np.column_stack([1 - p, p])
    assert metric(y, p) == metric(y, two)
    assert metric(y.tolist(), p.tolist()) == metric(y, two)


def test_kernel_and_decomposition_metrics_take_1d(binary):
    y, p = binary
    two = np.column_stack([1 - p, p])
    for f in (skce.skce_biased, skce.skce_unbiased, skce.skce_linear):
        assert f(y, p, gaussian(0.5)) == f(y, two, gaussian(0.5))
    assert brier_decomposition.brier_decomposition(y, p) == \
        brier_decomposition.brier_decomposition(y, two)
    assert calaudit.expected_calibration_error(y, p) == ece.expected_calibration_error(y, two)


def test_bad_metric_arrays_say_what_is_wrong():
    with pytest.raises(ValueError, match="index 1 holds 2"):
        calaudit.brier_score([0, 2], [0.3, 0.6])
    with pytest.raises(ValueError, match="2 entries"):
        calaudit.expected_calibration_error([0, 1, 1], [0.3, 0.6])


def small_audit(y, p, covariates=None, **config):
    data = calaudit.CalibrationData.from_arrays(y, p, covariates=covariates)
    config = calaudit.AuditConfig(n_resamples=50,
                                  local=LocalConfig(n_resamples=50, group_ci_resamples=50),
                                  **config)
    return data, config


@pytest.fixture(scope="module")
def audited(binary):
    y, p = binary
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"age": rng.integers(20, 80, y.size),
                          "region": rng.choice(["north", "south"], y.size)},
                         index=np.arange(y.size) + 1000)
    data, config = small_audit(y, p, frame[["age", "region"]], random_state=3)
    return calaudit.run_audit(data, config)


def test_lookups_raise_key_errors_listing_the_ids(audited):
    with pytest.raises(KeyError, match="valid ids: ece, mce, brier"):
        audited.metric("ECE")
    with pytest.raises(KeyError, match="local_consistency"):
        audited.test("klce")
    data = calaudit.CalibrationData.from_arrays([0, 1], [0.2, 0.7], covariates={"a": [1, 2]})
    with pytest.raises(KeyError, match="covariates: a"):
        data.covariate("b")


def test_covariates_from_a_dataframe_series_or_mapping(audited):
    assert audited.data["covariates"][0]["name"] == "age"
    assert audited.data["covariates"][1]["categories"] == ["north", "south"]
    series = pd.Series([1.0, 2.0, 3.0], name="x", index=[5, 6, 7])
    data = calaudit.CalibrationData.from_arrays([0, 1, 1], [0.1, 0.8, 0.6],
                                                covariates=series)
    assert data.covariate("x").values.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="needs a name"):
        calaudit.CalibrationData.from_arrays([0, 1], [0.1, 0.8], covariates=pd.Series([1, 2]))
    with pytest.raises(TypeError, match="DataFrame"):
        calaudit.CalibrationData.from_arrays([0, 1], [0.1, 0.8], covariates=[1, 2])


def test_array_messages_use_the_array_name_and_0_based_indices():
    with pytest.raises(calaudit.InputError) as caught:
        calaudit.CalibrationData.from_arrays([0, 1, 1], [0.2, 0.5, 1.3])
    message = str(caught.value)
    assert "column 'y_proba':" in message and "first at index 2 (value 1.3)" in message
    assert "drop_invalid=True" in caught.value.hint
    with pytest.raises(calaudit.InputError, match=r"'y_proba\[:, 1\]'.*index 0"):
        calaudit.CalibrationData.from_arrays([0, 1], [[0.5, np.nan], [0.5, 0.5]])


def test_one_seed_name_with_aliases(binary):
    assert calaudit.AuditConfig(random_state=5).seed == 5
    assert calaudit.AuditConfig(rng=5) == calaudit.AuditConfig(seed=5)
    assert calaudit.AuditConfig(seed=4).random_state == 4
    with pytest.raises(calaudit.ConfigError, match="once"):
        calaudit.AuditConfig(seed=1, random_state=2)
    y, p = binary
    a = calaudit.estimate_squared_error(y, p, "tce2", estimators=("bin",), random_state=2)
    b = calaudit.estimate_squared_error(y, p, "tce2", estimators=("bin",), rng=2)
    assert a.estimate == b.estimate


def test_statuses_print_as_their_name(audited, capsys):
    assert str(calaudit.Status.FAIL) == "FAIL" and f"{calaudit.Status.WARN}" == "WARN"
    print(audited.verdict)
    assert capsys.readouterr().out.strip() == audited.verdict.value


def test_frames_and_html_for_notebooks(audited):
    frame = audited.to_frame()
    assert frame.loc[("metric", "ece"), "value"] == audited.metric("ece").value
    test = audited.test("local_consistency")
    assert frame.loc[("test", "local_consistency"), "p_value"] == test.p_value
    assert frame.loc[("test", "local_consistency"), "status"] == test.status.value
    groups = audited.groups_frame()
    assert len(groups) == len(audited.groups)
    assert {"group", "bias", "bias_ci_low", "bias_ci_high", "status"} <= set(groups.columns)
    assert groups["p_value_adjusted"].is_monotonic_increasing
    assert repr(audited).startswith(f"AuditResult(verdict={audited.verdict.value}, n=300, ")
    page = audited._repr_html_()
    assert f">{audited.verdict.value}</span>" in page
    assert "local_consistency" in page
    for top in audited.local["lcb"]["top_groups"]:
        assert "Groups with the clearest bias" in page
        assert top["group"].replace("&", "&amp;") in page


def test_notebook_view_tells_the_story_and_marks_diagnostics(audited):
    """The notebook view leads with the reports' sentences, includes the attribution
    sentence, and says that diagnostic tests do not decide the verdict."""
    import html

    from calaudit.output.story import plain, story

    page = audited._repr_html_()
    payload = audited.to_dict()
    for sentence in story(payload):
        assert html.escape(plain(sentence)) in page
    assert html.escape(audited.attribution["summary"]) in page
    assert "diagnostic test(s) (do not gate)" in page
    diagnostics = [t.id for t in audited.tests if t.role == "diagnostic"]
    assert diagnostics and page.count("no (diagnostic)") == len(diagnostics)


def test_groups_frame_without_covariates(binary):
    data, config = small_audit(*binary, run_tests=False)
    result = calaudit.run_audit(data, config)
    assert result.groups_frame().empty and "bias" in result.groups_frame().columns
    assert "clearest bias" not in result._repr_html_()


def test_progress_callback_and_lines(binary, capsys):
    data, config = small_audit(*binary, run_tests=False)
    events = []
    calaudit.run_audit(data, config, progress=events.append)
    assert events[0].task == "audit" and events[0].completed == 0
    assert events[-1].task == "audit" and events[-1].done
    assert events[-1].completed == events[-1].total
    stages = [e.task for e in events if e.depth == 1 and e.done]
    assert stages[0] == "calibration_errors" and "smooth_ece" in stages
    calaudit.run_audit(data, config, progress=True)
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("calaudit: [1/") and lines[-1].startswith(
        f"calaudit: [{len(stages)}/{len(stages)}] diagrams")
    assert isinstance(progress.current_reporter(), progress.NullReporter)  # nothing left installed
    with pytest.raises(TypeError, match="progress"):
        calaudit.run_audit(data, config, progress="yes")


def test_progress_reports_steps_within_the_stages(binary):
    """The resampling loops report their progress inside their stage: a callback sees the
    label redraws of the global and local tests advance to their totals."""
    y, p = binary
    data, config = small_audit(y, p, pd.DataFrame({"g": np.arange(y.size) % 2 == 0}))
    events = []
    calaudit.run_audit(data, config, progress=events.append)
    inner = [e for e in events if e.depth >= 2]
    tasks = {e.task for e in inner}
    assert {"label redraws (SKCE)", "local resamples"} <= tasks, tasks
    for task in ("label redraws (SKCE)", "local resamples"):
        steps = [e for e in inner if e.task == task]
        assert steps[-1].done and steps[-1].completed == steps[-1].total == 50
        assert [e.completed for e in steps] == sorted(e.completed for e in steps)
    assert any(e.task == "skce" and e.depth == 1 for e in events)


def test_progress_lines_to_a_stream():
    out = io.StringIO()
    lines = progress.StageLines(out)
    reporter = progress.CallbackReporter(lines)
    with progress.reporting(reporter), progress.task("audit", total=1) as advance:
        with progress.task("stage"):
            pass
        advance()
    assert out.getvalue().startswith("calaudit: [1/1] stage (")
