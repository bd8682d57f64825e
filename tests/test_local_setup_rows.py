"""The local stage's setup on a binary Parquet dataset whose tasks read their own rows
(:mod:`calaudit.local.row_columns`): the covariates' moments, the median-heuristic
bandwidths' subsamples and the approximation check's rows come from reductions, with the
bits of the same files loaded into memory, and the client never reads the rows
(``RowsData._loaded`` refused)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calaudit import scale
from calaudit.audit.config import AuditConfig, LocalConfig
from calaudit.audit.local_calibration import STREAMS, LocalCalibrationStage
from calaudit.data.load import load
from calaudit.data.planned import plan
from calaudit.local import lcb_rows
from calaudit.local.kernel_tests import LocalTests
from calaudit.local.row_columns import GatheredColumn, covariate_moments, scalar_columns
from calaudit.scale import SerialExecutor, ThreadExecutor

N = 5_000
CONFIG = {"n_resamples": 19, "random_state": 5, "method": "features", "n_features": 64,
          "local": LocalConfig(n_resamples=19, group_ci_resamples=19, lcb_cv_max_rows=300,
                               median_max_rows=700, diagnostics=False)}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> str:
    rng = np.random.default_rng(21)
    p = rng.beta(2.0, 5.0, N)
    table = {"label": (rng.uniform(size=N) < p).astype(np.int8), "prob": p,
             "age": np.round(rng.normal(45.0, 12.0, N), 1),
             "region": np.array(["north", "south", "east"])[rng.integers(0, 3, N)]}
    table["prob"][:3] = [0.0, 1.0, 0.5]
    folder = tmp_path_factory.mktemp("setup") / "ds"
    folder.mkdir()
    for k, (lo, hi) in enumerate(((0, 1_300), (1_300, 3_900), (3_900, N))):
        pq.write_table(pa.table({name: v[lo:hi] for name, v in table.items()}),
                       folder / f"part-{k}.parquet")
    return str(folder)


def _setup(data) -> LocalTests:
    config = AuditConfig(**CONFIG)
    streams = dict(zip(STREAMS, np.random.default_rng(5).spawn(len(STREAMS)), strict=True))
    return LocalTests(data, config, streams)


def test_moments_are_numpys_bits(files, refused):
    loaded = load(files, covariates="age,region")
    age = next(c for c in loaded.covariates if c.name == "age").values
    with scale.using(ThreadExecutor(3)):
        moments = covariate_moments(plan(files, covariates="age,region"))
    assert moments == {"age": (float(age.mean()), float(age.std()))}


def test_gathered_columns_are_the_arrays_rows(files, refused):
    loaded = load(files, covariates="age,region")
    setup = _setup(plan(files, covariates="age,region"))
    outcome, prediction, residual = scalar_columns(setup)
    rows = np.array([4_999, 0, 1_299, 1_300, 7, 7, 3_900])
    y, p = np.asarray(loaded.y_true), np.asarray(loaded.y_proba)[:, 1]
    assert outcome[rows].tobytes() == (y[rows] == 1).astype(np.float64).tobytes()
    assert prediction[rows].tobytes() == p[rows].tobytes()
    assert residual[rows].tobytes() == ((y[rows] == 1) - p[rows]).tobytes()
    assert isinstance(setup.prob_features, GatheredColumn)
    assert setup.prob_features[rows].tobytes() == p[rows, None].tobytes()
    with pytest.raises(AssertionError, match="read into the client"):
        np.asarray(prediction)


@pytest.mark.parametrize("executor", [SerialExecutor, lambda: ThreadExecutor(2)],
                         ids=["serial", "threads"])
def test_setup_and_tests_equal_the_loaded_rows(files, refused, executor):
    """Bandwidths, encoding, approximation check, KLCE^2 and the local tests: the bytes of
    the loaded rows, without the client reading them."""
    loaded = load(files, covariates="age,region")
    config = AuditConfig(**CONFIG)
    with scale.using(executor()):
        planned = plan(files, covariates="age,region")
        assert _setup(planned).gathers
        got = LocalCalibrationStage().run(planned, config, np.random.default_rng(1))
    with scale.using(SerialExecutor()):
        want = LocalCalibrationStage().run(loaded, config, np.random.default_rng(1))

    def as_json(out):
        return json.dumps({"metrics": [dataclasses.asdict(m) for m in out.metrics],
                           "tests": [dataclasses.asdict(t) for t in out.tests],
                           "local": out.local}, sort_keys=True, default=str)
    assert as_json(got) == as_json(want)
    assert got.local["klce"]["computation"]["approximation"]


@pytest.mark.parametrize("executor", [SerialExecutor, lambda: ThreadExecutor(2)],
                         ids=["serial", "threads"])
def test_diagnostics_equal_the_loaded_rows(files, refused, executor, monkeypatch):
    """The whole local stage with its diagnostics (the LCB's per-group curves among
    them: requests, grids, bandwidths, normalisers, columns and centres by reductions):
    the bytes of the loaded rows, without the client reading them nor fetching a kept
    LCB column of every row."""
    whole = []
    monkeypatch.setattr(lcb_rows, "fetch", lambda rows, names, at=None, _f=lcb_rows.fetch: (
        whole.extend(names if at is None else ()), _f(rows, names, at))[1])
    config = AuditConfig(**{**CONFIG, "local": dataclasses.replace(CONFIG["local"],
                                                                   diagnostics=True)})
    with scale.using(executor()):
        got = LocalCalibrationStage().run(plan(files, covariates="age,region"), config,
                                          np.random.default_rng(1))
    with scale.using(SerialExecutor()):
        want = LocalCalibrationStage().run(load(files, covariates="age,region"), config,
                                           np.random.default_rng(1))
    assert whole == []
    assert _as_json(got) == _as_json(want)
    curves = got.local["lcb"]["curves"]
    assert [g["group"] for c in curves for g in c["groups"]] == ["east", "north", "south"]


def _as_json(out) -> str:
    return json.dumps({"metrics": [dataclasses.asdict(m) for m in out.metrics],
                       "tests": [dataclasses.asdict(t) for t in out.tests],
                       "local": out.local, "groups": out.groups,
                       "disparity": out.disparity, "attribution": out.attribution},
                      sort_keys=True, default=_exact)


def _exact(value):
    """Arrays and numpy numbers as their exact floats (``repr`` of each Python value)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    return repr(value)
