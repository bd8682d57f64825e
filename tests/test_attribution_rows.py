"""The recalibration model's attribution on a dataset whose tasks read their own rows
(:mod:`calaudit.attribution.rows`): computed without the rows in this process, it is the
in-memory attribution (the same JSON section, the same fitted probabilities), binary and
multi-class, with a level too small to use (rows left out across reduction ranges)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from calaudit import scale
from calaudit.attribution import rows
from calaudit.attribution.explain import AttributionSettings, attribute, mark_explained
from calaudit.data.load import load
from calaudit.data.planned import RowsData, plan
from calaudit.local.groups import covariate_levels, define_groups
from calaudit.local.lcb import top_label_residual
from calaudit.scale import ArrayRows, SerialExecutor
from tests.conftest import write_parts as write

#: Two reduction ranges (the last one short).
N = scale.TASK_ROWS + 3_001


def table(classes: int, n: int = N, seed: int = 3) -> dict[str, np.ndarray]:
    """Predictions biased by region and age; the level ``west`` has 12 rows (too few:
    its rows are left out), in the first and the last range."""
    rng = np.random.default_rng(seed)
    age = np.round(rng.uniform(18, 90, n), 1)
    region = np.array(["north", "south", "east"])[rng.integers(0, 3, n)]
    region[[5, 9, n // 2, *range(n - 9, n)]] = "west"
    shift = np.where(region == "south", 0.6, 0.0) + (age - 50) / 60
    if classes == 2:
        p = 1 / (1 + np.exp(-rng.normal(-0.5, 1.0, n)))
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(np.log(p / (1 - p)) + shift))))
        return {"label": y.astype(np.int8), "prob": p, "age": age, "region": region}
    proba = rng.dirichlet([2.0, 3.0, 4.0], n)
    tilt = proba * np.exp(np.stack([shift, np.zeros(n), -shift], axis=1))
    tilt /= tilt.sum(axis=1, keepdims=True)
    y = (rng.uniform(size=n)[:, None] > np.cumsum(tilt, axis=1)).sum(axis=1)
    return {"label": y, **{f"p_{k}": proba[:, k] for k in range(3)}, "age": age,
            "region": region}


def refuse_rows(monkeypatch) -> None:
    def refused(self):
        raise AssertionError("the rows were read into this process")
    monkeypatch.setattr(RowsData, "_loaded", property(refused))


def explained(attribution, levels, outcome) -> str:
    """The explained-group check of every group as failing (its rows' JSON); some are
    checked against an adjusted model, exactly (few rows) or by the normal
    approximation."""
    specs = define_groups(levels, intersections=True)
    table = [{"group": spec.name, "status": "FAIL"} for spec in specs]
    mark_explained(table, specs, attribution, outcome, 0.05)
    checked = [row for row in table if "p_value_after_adjustment" in row]
    assert checked and len(checked) < len(table)
    return json.dumps(table)


@pytest.mark.parametrize("classes", [2, 3])
def test_the_attribution_read_by_tasks_is_the_in_memory_one(tmp_path, monkeypatch, classes):
    folder = write(tmp_path / "ds", table(classes), (0, 30_000, 50_001, N))
    options = {"covariates": "age,region"}
    loaded = load(folder, **options)
    levels = [covariate_levels(c, 5) for c in loaded.covariates]
    kinds = [c.kind for c in loaded.covariates]
    settings = AttributionSettings(min_rows=30, min_events=5)
    outcome, prediction = top_label_residual(loaded.y_true, loaded.y_proba)
    view = "binary" if classes == 2 else "top-label"
    with scale.using(SerialExecutor()):
        memory = attribute(levels, kinds, outcome, prediction, settings, view)
        data = plan(folder, **options)
        refuse_rows(monkeypatch)
        source = rows.level_rows(data, levels)
        tasks = attribute(levels, kinds, None, None, settings, view, source=source)
        assert tasks.source is source and tasks.offset is None
        assert json.dumps(tasks.section) == json.dumps(memory.section)
        assert memory.section["rows_used"] == N - 12
        assert explained(tasks, levels, None) == explained(memory, levels, outcome)


def test_the_tasks_columns_are_the_in_memory_ones(tmp_path, monkeypatch):
    """A range's outcome, prediction and level codes, computed in the task."""
    folder = write(tmp_path / "ds", table(3, 5_000), (0, 2_000, 5_000))
    loaded = load(folder, covariates="age,region")
    levels = [covariate_levels(c, 4) for c in loaded.covariates]
    outcome, prediction = top_label_residual(loaded.y_true, loaded.y_proba)
    memory = ArrayRows({"outcome": outcome, "prediction": prediction,
                        **{f"code:{k}": lv.codes for k, lv in enumerate(levels)}})
    with scale.using(SerialExecutor()):
        data = plan(folder, covariates="age,region")
    refuse_rows(monkeypatch)
    source = rows.level_rows(data, levels)
    names = ["outcome", "prediction", "code:0", "code:1"]
    for start, stop in ((0, 5_000), (1_990, 2_010)):
        ours, theirs = source.read(start, stop, names), memory.read(start, stop, names)
        for name in names:
            assert ours[name].dtype == theirs[name].dtype
            assert ours[name].tobytes() == theirs[name].tobytes()


def test_the_attribution_on_two_workers_is_the_in_memory_one(two_workers, tmp_path,
                                                             monkeypatch):
    """Binary and multi-class, the attribution read by tasks on two workers: the
    in-memory section and fitted probabilities (the whole local stage's JSON on two
    workers: tests/test_dask_dataset_rows.py)."""
    import cloudpickle

    from calaudit.scale import DaskExecutor
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    settings = AttributionSettings(min_rows=30, min_events=5)
    for classes in (2, 3):
        folder = write(tmp_path / f"ds{classes}", table(classes, 3_000),
                       (0, 700, 1_300, 3_000))
        options = {"covariates": "age,region", "categorical": ()}
        loaded = load(folder, **options)
        levels = [covariate_levels(c, 5) for c in loaded.covariates]
        kinds = [c.kind for c in loaded.covariates]
        outcome, prediction = top_label_residual(loaded.y_true, loaded.y_proba)
        memory = attribute(levels, kinds, outcome, prediction, settings)
        expected = explained(memory, levels, outcome)
        with scale.using(DaskExecutor(two_workers)):
            data = plan(folder, **options)
            with monkeypatch.context() as patch:
                refuse_rows(patch)
                tasks = attribute(levels, kinds, None, None, settings,
                                  source=rows.level_rows(data, levels))
                assert explained(tasks, levels, None) == expected
        assert json.dumps(tasks.section) == json.dumps(memory.section)
        assert memory.section["rows_used"] == 3_000 - 12
