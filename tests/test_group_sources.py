"""The group table, its reliability panels and the disparity read from a row source
(:mod:`calaudit.local.group_sources`): on a Parquet dataset whose tasks read their own
rows (the client never holds the rows: ``RowsData._loaded`` refused) they are the bytes
of the same files loaded into memory, binary and three-class, with groups on both sides
of the gathering rule (bootstrap and exact test below it, moments above it)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calaudit import scale
from calaudit.attribution.disparity import disparity
from calaudit.data.load import load
from calaudit.data.planned import RowsData, plan
from calaudit.local import groups as grp
from calaudit.local.group_reliability import group_panels
from calaudit.local.group_sources import level_table
from calaudit.local.lcb import top_label_residual
from calaudit.scale import ArrayRows, SerialExecutor, ThreadExecutor

N = 3_000
CUTS = (0, 1_100, 2_000, N)


def _dataset(folder, classes: int) -> str:
    rng = np.random.default_rng(11 + classes)
    table = {"age": np.round(rng.uniform(18, 90, N), 1),
             "region": np.array(["north", "south", "east", "west"])[
                 rng.choice(4, N, p=[0.5, 0.3, 0.18, 0.02])]}
    if classes == 2:
        p = rng.beta(2.0, 5.0, N)
        table.update(label=(rng.uniform(size=N) < p + 0.05 * (table["region"] == "east")
                            ).astype(np.int8), prob=p)
    else:
        proba = rng.dirichlet([2.0, 3.0, 4.0], N)
        table.update(label=np.array([rng.choice(3, p=row) for row in proba]),
                     **{f"p_{k}": proba[:, k] for k in range(3)})
    folder.mkdir()
    for k in range(len(CUTS) - 1):
        part = {name: values[CUTS[k]:CUTS[k + 1]] for name, values in table.items()}
        pq.write_table(pa.table(part), folder / f"part-{k}.parquet")
    return str(folder)


@pytest.fixture(scope="module", params=[2, 3], ids=["binary", "3-class"])
def files(request, tmp_path_factory) -> str:
    return _dataset(tmp_path_factory.mktemp("groups") / "ds", request.param)


def _pieces(data, levels, outcome, prediction, lcb, strategy: str = "uniform") -> str:
    """The group table, panels and disparity of ``data`` (the stage's calls), as JSON."""
    settings = grp.GroupSettings(ci_resamples=99)
    rng = np.random.default_rng(3).spawn(3)
    specs, table, values = level_table(data, levels, True, outcome, prediction, lcb,
                                       rng[0], settings)
    panels = group_panels(table, specs, None, None, n_bins=10, strategy=strategy,
                          n_resamples=49, level=0.95, rng=rng[1], values=values)
    gaps = disparity(table, specs, [lv.name for lv in levels], values, rng[2], 99, 0.95)
    return json.dumps({"groups": table, "panels": panels, "disparity": gaps},
                      sort_keys=True, default=float)


@pytest.fixture(params=["default", "small rules"])
def rules(request, monkeypatch) -> str:
    """The default gathering rule (every group of these rows gathered), or rules small
    enough that the largest groups take the moments' path (normal interval, the refined
    normal approximation of the cumulant sums, normal draws, a panel's own gather)."""
    if request.param == "small rules":
        monkeypatch.setattr(grp, "NORMAL_MIN_ROWS", 1_200)
        monkeypatch.setattr(grp, "EXACT_MAX_ROWS", 900)
    return request.param


def _in_memory(folder: str):
    loaded = load(folder, covariates="age,region")
    levels = [grp.covariate_levels(c, 4) for c in loaded.covariates]
    outcome, prediction = top_label_residual(loaded.y_true, loaded.y_proba)
    lcb = np.random.default_rng(5).normal(0.01, 0.02, loaded.n)
    return loaded, levels, outcome, prediction, lcb


@pytest.mark.parametrize("executor", [SerialExecutor(), ThreadExecutor(2)],
                         ids=["serial", "threads"])
def test_the_tasks_give_the_in_memory_groups_panels_and_disparity(files, rules, executor,
                                                                  monkeypatch):
    loaded, levels, outcome, prediction, lcb = _in_memory(files)
    expected = _pieces(loaded, levels, outcome, prediction, lcb)
    with scale.using(executor):
        data = plan(files, covariates="age,region")

        def refused(self):
            raise AssertionError("the group table read the rows into the client")

        monkeypatch.setattr(RowsData, "_loaded", property(refused))
        # the levels' edges and labels only: a task computes its rows' codes
        no_codes = [dataclasses.replace(lv, codes=None) for lv in levels]
        assert _pieces(data, no_codes, None, None, lcb) == expected
        assert _pieces(data, no_codes, None, None, ArrayRows({"lcb": lcb})) == expected
        # quantile bins: a large group's panel gathers its rows
        assert _pieces(data, no_codes, None, None, lcb, "quantile") == _pieces(
            loaded, levels, outcome, prediction, lcb, "quantile")
    table = json.loads(expected)["groups"]
    methods = {row["bias_ci_method"] for row in table} - {None}
    assert methods == ({"percentile bootstrap", "normal"} if rules == "small rules"
                       else {"percentile bootstrap"})
    assert any(row["group"] == "region=west" and row["status"] != "INCONCLUSIVE"
               for row in table)


def test_the_group_table_of_levels_is_the_table_of_the_groups_rows(files, rules):
    """The groups made from the levels' counts (no rows) are ``define_groups``' groups;
    each row's moments are its rows' own (the groups' rows of the arrays), and the
    disparity of the gathered rows below the rule is the stratified bootstrap of every
    level's rows."""
    loaded, levels, outcome, prediction, lcb = _in_memory(files)
    settings = grp.GroupSettings(ci_resamples=99)
    specs, table, values = level_table(loaded, levels, True, outcome, prediction, lcb,
                                       np.random.default_rng(1), settings)
    given = grp.define_groups(levels, True)
    assert [(s.name, s.key) for s in specs] == [(s.name, s.key) for s in given]
    assert all(s.rows is None for s in specs)
    for row, spec in zip(table, given, strict=True):
        y, p = outcome[spec.rows], prediction[spec.rows]
        assert (row["n"], row["events"]) == (y.size, int(y.sum()))
        assert row["bias"] == pytest.approx(float(np.mean(y - p)), rel=1e-12, abs=1e-15)
        assert row["mean_lcb"] == pytest.approx(float(lcb[spec.rows].mean()), rel=1e-12)
    if rules == "default":  # every conclusive level gathered: the rows' own bootstrap
        rng = np.random.default_rng(2)
        gap = disparity(table, specs, ["region"], values, rng, 99, 0.95)[0]
        rng = np.random.default_rng(2)
        members = [s for s in given if s.kind == "single" and "region" in s.covariates
                   and next(r for r in table if r["group"] == s.name)["status"]
                   != "INCONCLUSIVE"]
        spread = np.ptp(np.stack([grp.bootstrap_means(outcome[s.rows] - prediction[s.rows],
                                                      rng, 99) for s in members]), axis=0)
        tail = (1.0 - 0.95) / 2.0
        assert gap["ci"] == list(np.quantile(spread, [tail, 1.0 - tail]))


def test_large_groups_test_on_their_cumulant_sums():
    """Above ``EXACT_MAX_ROWS`` rows the group test is the refined normal approximation
    of the reduced cumulant sums: the p-value of the rows' own sums to rounding."""
    from calaudit.local.poisson_binomial import group_test

    rng = np.random.default_rng(7)
    n = 2 * grp.EXACT_MAX_ROWS
    p = rng.uniform(0.05, 0.6, 2 * n)
    y = (rng.random(2 * n) < p).astype(np.float64)
    levels = [grp.Levels("g", np.repeat([0, 1], n).astype(np.int32), ("a", "b"))]
    specs = grp.define_groups(levels, False)
    table = level_table(None, levels, False, y, p, None, np.random.default_rng(0),
                        grp.GroupSettings())[1]
    for row, spec in zip(table, specs, strict=True):
        value, method = group_test(int(y[spec.rows].sum()), p[spec.rows])
        assert row["test_method"] == method == "refined normal approximation"
        assert row["p_value"] == pytest.approx(value, rel=1e-9, abs=1e-300)


# ------------------------------------------ Dask (skipped without distributed: conftest)

def test_on_two_workers_the_tasks_give_the_in_memory_pieces(files, two_workers, monkeypatch):
    """On two worker processes: the same bytes, the moments, the small groups' gather and
    the large panel group's bins and laws reduced by tasks that read their own rows (only the
    LCB values are placed from here)."""
    from calaudit.scale import DaskExecutor
    from tests.conftest import dask_partials

    monkeypatch.setattr(grp, "NORMAL_MIN_ROWS", 1_200)
    monkeypatch.setattr(grp, "EXACT_MAX_ROWS", 900)
    loaded, levels, outcome, prediction, lcb = _in_memory(files)
    expected = _pieces(loaded, levels, outcome, prediction, lcb)
    executor = DaskExecutor(two_workers)
    with scale.using(executor):
        data = plan(files, covariates="age,region")
        monkeypatch.setattr(RowsData, "_loaded", property(lambda self: 1 / 0))
        calls = dask_partials(monkeypatch)
        no_codes = [dataclasses.replace(lv, codes=None) for lv in levels]
        assert _pieces(data, no_codes, None, None, lcb) == expected
    assert calls == ["moments_partial", "moments_partial", "gather_partial",
                     "panel_partial"]


def test_the_local_stage_on_two_workers_is_the_single_process_json(files, two_workers):
    """The local calibration stage of the dataset on two workers (``--workers 2``) gives
    the JSON of the same files loaded and audited in one process."""
    from calaudit.audit.config import AuditConfig
    from calaudit.audit.local_calibration import LocalCalibrationStage
    from calaudit.audit.runner import run_audit
    from calaudit.audit.sections.local import LocalConfig
    from calaudit.scale import DaskExecutor
    from tests.test_dask_dataset_rows import CONFIG, canonical

    options = {"covariates": "age,region"}
    stages = (LocalCalibrationStage(),)
    config = AuditConfig(**CONFIG, n_features=64, local=LocalConfig(
        n_resamples=19, group_ci_resamples=19, lcb_prob_bandwidth=0.1, lcb_cov_bandwidth=1.0))
    single = canonical(run_audit(load(files, **options), config, stages=stages))
    executor = DaskExecutor(two_workers)
    with scale.using(executor):
        data = plan(files, **options)
    result = run_audit(data, dataclasses.replace(config, executor=executor), stages=stages)
    assert canonical(result) == single
    assert any(g["bias_ci_method"] == "percentile bootstrap" and g["group"] == "region=west"
               for g in json.loads(single)["groups"])


def test_a_large_groups_panel_is_its_rows_diagram():
    """The panel of a group above the gathering rule (bins and laws reduced over the
    ranges) against the diagram of the group's own rows (:func:`reliability_bins`,
    :func:`consistency_band`): the same bins to rounding, bands within a resampling
    step (the same uniforms, the law multiplied range by range)."""
    from calaudit.local import panel_sums
    from calaudit.metrics.consistency import consistency_band
    from calaudit.metrics.reliability import reliability_bins

    rng = np.random.default_rng(9)
    n = panel_sums.PANEL_ROWS + 5_000  # two ranges of the panels' reduction
    p = rng.beta(2.0, 3.0, n)
    y = (rng.random(n) < p * 1.1).astype(np.float64)
    codes = (rng.random(n) < 0.6).astype(np.int32)
    levels = [grp.Levels("g", codes, ("a", "b"))]
    specs, table, values = level_table(None, levels, False, y, p, None,
                                       np.random.default_rng(0), grp.GroupSettings())
    panels = group_panels(table, specs, None, None, n_bins=10, strategy="uniform",
                          n_resamples=400, level=0.95, rng=np.random.default_rng(1),
                          values=values)
    assert values.gathered == {} and len(panels) == 2
    draws = np.random.default_rng(1)  # the panels' draws, in the panels' order
    for panel in panels:
        rows = codes == ("ab".index(panel["level"]))
        bins = reliability_bins(p[rows], y[rows], n_bins=10, strategy="uniform").to_dict()
        assert bins["count"] == panel["bins"]["count"]
        for key in ("mean_score", "observed_rate", "rate_low", "rate_high"):
            np.testing.assert_allclose(panel["bins"][key], bins[key], rtol=1e-12)
        band = consistency_band(p[rows], n_bins=10, n_resamples=400, rng=draws).to_dict()
        step = 1.0 / np.array(bins["count"])
        for side in ("low", "high"):
            assert np.all(np.abs(np.array(panel["consistency_band"][side]) - band[side])
                          <= step + 1e-12)
