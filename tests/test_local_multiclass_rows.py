"""A multi-class model's local stage on a Parquet dataset (text labels) whose tasks read
their own rows:
the KLCE feature pass (``e_y - p`` of the (n, m) rows), each class's one-vs-rest view
(:class:`calaudit.local.features.KernelRows` of the class, its score rows) and the
top-label view of the diagnostics are built in the tasks, with the bytes of the same files
loaded into memory, and the client never reads the rows (``RowsData._loaded`` refused).
The same stage on two workers: ``tests/test_dask_dataset_rows.py``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calaudit import scale
from calaudit.audit.config import AuditConfig, LocalConfig
from calaudit.audit.local_calibration import STREAMS, LocalCalibrationStage
from calaudit.data.load import load
from calaudit.data.planned import plan
from calaudit.exceptions import InputError
from calaudit.inference.feature_tests import label_inputs
from calaudit.local.kernel_tests import LocalTests
from calaudit.local.row_columns import class_column, scalar_columns
from calaudit.scale import SerialExecutor, ThreadExecutor
from tests.test_local_setup_rows import _as_json

N = 3_000
COVARIATES = "age,region"
CONFIG = {"n_resamples": 19, "random_state": 5, "method": "features", "n_features": 64,
          "local": LocalConfig(n_resamples=19, group_ci_resamples=19, lcb_cv_max_rows=300,
                               median_max_rows=700)}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> str:
    """Three classes named by text labels in three files of unequal sizes."""
    return _write(tmp_path_factory.mktemp("multiclass") / "ds")


def _write(folder, broken: dict[int, str | None] | None = None) -> str:
    rng = np.random.default_rng(8)
    logits = rng.normal(size=(N, 3))
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    codes = np.minimum((rng.uniform(size=N)[:, None] > np.cumsum(p, axis=1)).sum(axis=1), 2)
    label = np.array(["ant", "bee", "cat"], dtype=object)[codes]
    for row, value in (broken or {}).items():
        label[row] = value
    table = {"label": label, "p_ant": p[:, 0], "p_bee": p[:, 1], "p_cat": p[:, 2],
             "age": np.round(rng.normal(45.0, 12.0, N), 1),
             "region": np.array(["north", "south", "east"])[rng.integers(0, 3, N)]}
    folder.mkdir()
    for k, (lo, hi) in enumerate(((0, 700), (700, 2_100), (2_100, N))):
        pq.write_table(pa.table({name: pa.array(list(v[lo:hi]), pa.string())
                                 if name == "label" else v[lo:hi]
                                 for name, v in table.items()}),
                       folder / f"part-{k}.parquet")
    return str(folder)


@pytest.mark.parametrize("broken", [{2_500: "dog", 2_900: "eel"}, {1_000: None}],
                         ids=["unknown", "missing"])
def test_text_labels_are_checked_as_the_loader_does(tmp_path, broken):
    """A multi-class model's text labels are read by the tasks (each range's labels name
    their classes row by row); a label naming no class, or missing, gives the loader's
    error."""
    folder = _write(tmp_path / "ds", broken)
    with pytest.raises(InputError) as loaded:
        load(folder)
    with scale.using(ThreadExecutor(2)), pytest.raises(InputError) as planned:
        plan(folder)
    assert str(planned.value) == str(loaded.value)
    assert ("global row 2501" if 2_500 in broken else "global row 1001") in str(planned.value)


def _setup(data) -> LocalTests:
    streams = dict(zip(STREAMS, np.random.default_rng(5).spawn(len(STREAMS)), strict=True))
    return LocalTests(data, AuditConfig(**{**CONFIG, "local": dataclasses.replace(
        CONFIG["local"], diagnostics=False)}), streams)


def test_the_tasks_columns_are_the_arrays_rows(files, refused):
    """The feature pass's columns of every view, the classes' predictions and the
    top-label view, made by the tasks: the in-memory columns' bytes."""
    loaded = load(files, covariates=COVARIATES)
    y, p = np.asarray(loaded.y_true), np.asarray(loaded.y_proba)
    with scale.using(SerialExecutor()):
        want = _setup(loaded)
        setup = _setup(plan(files, covariates=COVARIATES))
        assert setup.gathers and not setup.data.is_binary
        columns, _ = label_inputs(want.features, want.gram.features, want.r, want.proba,
                                  1.0, 0, "s", 0)
        got = setup.kernel_rows().read(650, 2_200, ["x", "proba", "observed"])
        assert setup.kernel_rows().labels == 3
        for name in ("x", "proba", "observed"):
            assert got[name].tobytes() == np.asarray(columns[name][650:2_200]).tobytes()
        view = setup.kernel_rows(2, 3.5).read(0, N, ["x", "proba", "observed"])
        scaled = want.gram.features[:]
        assert view["observed"].tobytes() == (y == 2).astype(np.uint8)[:, None].tobytes()
        assert view["proba"].tobytes() == p[:, 2:3].copy().tobytes()
        assert view["x"][:, 1:].tobytes() == scaled[:, 3:].tobytes()
        assert view["x"][:, 0].tobytes() == (p[:, 2] * np.sqrt(3.5)).tobytes()
        rows = np.array([2_999, 0, 699, 700, 7, 7, 2_100])
        assert class_column(setup.data, 1)[rows].tobytes() == p[rows, 1:2].tobytes()
        top = p.argmax(axis=1)
        outcome, prediction, residual = scalar_columns(setup)
        assert outcome[rows].tobytes() == (y == top)[rows].astype(np.float64).tobytes()
        assert prediction[rows].tobytes() == p.max(axis=1)[rows].tobytes()
        assert residual[rows].tobytes() == ((y == top) - p.max(axis=1))[rows].tobytes()
    with pytest.raises(AssertionError, match="read into the client"):
        np.asarray(prediction)


@pytest.mark.parametrize("executor", [SerialExecutor, lambda: ThreadExecutor(2)],
                         ids=["serial", "threads"])
def test_the_local_stage_equals_the_loaded_rows(files, refused, executor):
    """The whole local stage of a three-class model (tests, per-class views, LCB, group
    table, attribution, disparity, panels): the bytes of the loaded rows, without the
    client reading them."""
    config = AuditConfig(**CONFIG)
    with scale.using(executor()):
        got = LocalCalibrationStage().run(plan(files, covariates=COVARIATES), config,
                                          np.random.default_rng(1))
    with scale.using(SerialExecutor()):
        want = LocalCalibrationStage().run(load(files, covariates=COVARIATES), config,
                                           np.random.default_rng(1))
    assert _as_json(got) == _as_json(want)
    klce = got.local["klce"]
    assert [row["class"] for row in klce["per_class"]] == ["ant", "bee", "cat"]
    assert all(row["p_value"] is not None for row in klce["per_class"])
    assert klce["computation"]["method"] == "features" and got.groups



@pytest.mark.parametrize("classes", [2, 3])
def test_the_exact_path_on_a_dataset_read_by_tasks(tmp_path, files, classes):
    """The exact path (its kernels are matrices of the rows, held here) on a dataset read
    by tasks, with its diagnostics: the loaded rows' bytes, binary and multi-class."""
    folder = files
    if classes == 2:
        rng = np.random.default_rng(4)
        p = rng.beta(2.0, 5.0, 1_200)
        folder = str(tmp_path / "binary")
        (tmp_path / "binary").mkdir()
        for k, (lo, hi) in enumerate(((0, 500), (500, 1_200))):
            pq.write_table(pa.table({
                "label": (rng.uniform(size=hi - lo) < p[lo:hi]).astype(np.int8),
                "prob": p[lo:hi], "age": np.round(rng.normal(45.0, 12.0, hi - lo), 1),
                "region": np.array(["north", "south"])[rng.integers(0, 2, hi - lo)]}),
                tmp_path / "binary" / f"part-{k}.parquet")
    config = AuditConfig(**{**CONFIG, "method": "exact"})
    with scale.using(SerialExecutor()):
        got = LocalCalibrationStage().run(plan(folder, covariates=COVARIATES), config,
                                          np.random.default_rng(1))
        want = LocalCalibrationStage().run(load(folder, covariates=COVARIATES), config,
                                           np.random.default_rng(1))
    assert got.local["klce"]["computation"]["method"] == "exact"
    assert _as_json(got) == _as_json(want)
