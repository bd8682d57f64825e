"""The local aggregate test's score members and level sums reduced range by range
(:mod:`calaudit.local.score_rows`): on one range they are the members built on every row
in memory (:meth:`ScoreMembers.build`), bit for bit; on a dataset whose tasks read their
own rows (the rows never in this process) they are the in-memory reduction's, binary,
multi-class and one class one-vs-rest, and so is the aggregate test."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from calaudit import scale
from calaudit.data.load import load
from calaudit.data.planned import RowsData, plan
from calaudit.local.aggregate_test import feature_aggregate
from calaudit.local.groups import covariate_levels
from calaudit.local.klce import residuals
from calaudit.local.score_members import ScoreMembers
from calaudit.local.score_rows import level_codes, memory_rows, score_pass, score_rows
from calaudit.numerics.pairwise import as_columns
from calaudit.scale import SerialExecutor
from tests.conftest import write_parts as write


def table(classes: int, n: int, seed: int = 2) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.arange(2.0, 2.0 + classes), n)
    y = (rng.uniform(size=n)[:, None] > np.cumsum(proba, axis=1)).sum(axis=1)
    region = np.array(["north", "south", "east"])[rng.integers(0, 3, n)]
    out = {"label": y, "age": np.round(rng.uniform(18, 90, n), 1), "region": region}
    if classes == 2:
        return {**out, "prob": proba[:, 1]}
    return {**out, **{f"p_{k}": proba[:, k] for k in range(classes)}}


def in_memory(folder: str, view: int | None = None):
    """The loaded data's levels and the in-memory score rows of ``view``."""
    loaded = load(folder, covariates="age,region")
    levels = [covariate_levels(c, 4) for c in loaded.covariates]
    names, sizes = [lv.name for lv in levels], [len(lv.labels) for lv in levels]
    codes = level_codes([lv.codes for lv in levels], sizes)[0]
    if view is not None:
        p = loaded.y_proba[:, view].copy()
        r = (loaded.y_true == view).astype(np.float64) - p
    else:
        p = loaded.y_proba[:, 1].copy() if loaded.is_binary else loaded.y_proba
        r = residuals(loaded.y_true, loaded.y_proba)
    return loaded, levels, names, sizes, r, p, codes


def same(a, b) -> None:
    assert (a is None) == (b is None)
    if a is not None:
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


def same_pass(a, b) -> None:
    for name in ("observed", "expected", "top_observed", "top_expected"):
        same(getattr(a, name), getattr(b, name))
    for x, y in zip(a.members.members, b.members.members, strict=True):
        assert (x.name, x.df, x.view) == (y.name, y.df, y.view)
        for field in ("columns", "inverse", "overall", "total_columns"):
            same(getattr(x, field), getattr(y, field))


@pytest.mark.parametrize("classes", [2, 3])
def test_one_range_is_the_members_built_on_every_row(tmp_path, classes):
    folder = write(tmp_path / "ds", table(classes, 3_000), (0, 3_000))
    loaded, levels, names, sizes, r, p, codes = in_memory(folder)
    built = ScoreMembers.build(names, [lv.codes for lv in levels], sizes, p)
    found = score_pass(memory_rows(r, p, codes), names, sizes, 1 if p.ndim == 1 else 3)
    columns = as_columns(r)
    same(found.observed, built.level_sums(columns))
    same(found.expected, built.levels.T @ p.reshape(p.shape[0], -1))
    if classes == 3:
        same(found.top_observed, built.top_sums(columns))
        confidence = p[np.arange(p.shape[0]), built.top]
        same(found.top_expected, built.levels.T @ confidence)
    for x, y in zip(found.members.members, built.members, strict=True):
        assert (x.name, x.df, x.view) == (y.name, y.df, y.view)
        for field in ("columns", "inverse", "overall", "total_columns"):
            same(getattr(x, field), getattr(y, field))


def refuse_rows(monkeypatch) -> None:
    def refused(self):
        raise AssertionError("the rows were read into this process")
    monkeypatch.setattr(RowsData, "_loaded", property(refused))


def aggregate_json(rows, names, sizes, labels) -> str:
    found = feature_aggregate(0.5, np.linspace(0.0, 1.0, 9), 0.3, rows, names, sizes,
                              labels, 123, 9)
    return json.dumps([found.statistic, found.null_distribution.tolist(), found.p_value,
                       found.members, found.deciding])


@pytest.mark.parametrize("classes,view", [(2, None), (3, None), (3, 2)])
def test_the_tasks_sums_are_the_in_memory_ones(tmp_path, monkeypatch, classes, view):
    n = scale.TASK_ROWS + 2_001  # two ranges
    folder = write(tmp_path / "ds", table(classes, n), (0, 40_000, n))
    loaded, levels, names, sizes, r, p, codes = in_memory(folder, view)
    labels = 1 if p.ndim == 1 else classes
    with scale.using(SerialExecutor()):
        memory = score_pass(memory_rows(r, p, codes), names, sizes, labels)
        expected = aggregate_json(memory_rows(r, p, codes), names, sizes, labels)
        data = plan(folder, covariates="age,region")
        refuse_rows(monkeypatch)
        rows = score_rows(data, levels, view)
        same_pass(score_pass(rows, names, sizes, labels), memory)
        assert aggregate_json(rows, names, sizes, labels) == expected


def test_the_tasks_sums_on_two_workers(two_workers, tmp_path, monkeypatch):
    import cloudpickle

    from calaudit.scale import DaskExecutor
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    folder = write(tmp_path / "ds", table(3, 3_000), (0, 1_000, 3_000))
    loaded, levels, names, sizes, r, p, codes = in_memory(folder)
    expected = aggregate_json(memory_rows(r, p, codes), names, sizes, 3)
    with scale.using(DaskExecutor(two_workers)):
        data = plan(folder, covariates="age,region")
        refuse_rows(monkeypatch)
        assert aggregate_json(score_rows(data, levels), names, sizes, 3) == expected
