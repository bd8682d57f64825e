"""Statistics that used to run whole in the client, now reductions through the run's
executor: the clinical recalibration fits and their bootstrap replicates, the
group table's per-group moments. The same bytes in one process (serially, on 1, 2 and 3
threads, whatever BLAS's thread count) and on 1 and 2 Dask workers, over several fixed row
ranges; the values checked against slow obvious references (``math.fsum``, loops).

The clusters are ``distributed.LocalCluster``: in-process threads for one worker, two
single-threaded worker processes otherwise (module-scoped, started once).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from calaudit import scale
from calaudit.metrics.clinical import (
    RecalibrationRows,
    logistic_recalibration,
    logit_of,
    newton_partial,
    recalibration_replicates,
)
from calaudit.numerics.resampling import bootstrap_counts
from calaudit.scale import TASK_ROWS, ArrayRows, SerialExecutor, ThreadExecutor
from tests.conftest import eventually

N = 2 * TASK_ROWS + 4_321  # three reduction ranges


def binary(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 5.0, n)
    p[:2] = [0.0, 1.0 - 1e-13]  # clipped rows
    y = (rng.uniform(size=n) < np.clip(1.2 * p, 0, 1)).astype(np.int64)
    return y, p


@pytest.fixture(scope="module")
def clinical_data():
    y, p = binary(N, 7)
    weights = bootstrap_counts(np.random.default_rng(3), N, 3)
    return y, p, weights


def _clinical_bytes(y, p, weights, executor) -> bytes:
    with scale.using(executor):
        fit = logistic_recalibration(y, p)
        citl, slope = recalibration_replicates(y.astype(np.float64), p, weights)
    return repr(fit).encode() + citl.tobytes() + slope.tobytes()


@pytest.fixture(scope="module")
def clinical_serial(clinical_data) -> bytes:
    return _clinical_bytes(*clinical_data, SerialExecutor())


@pytest.mark.parametrize("blas", [1, 2, 3])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_clinical_fits_give_the_same_bytes_on_any_threads(clinical_data, clinical_serial,
                                                          threads, blas):
    with threadpool_limits(blas, user_api="blas"):
        assert _clinical_bytes(*clinical_data, ThreadExecutor(threads)) == clinical_serial


def test_newton_partial_sums_are_the_exact_sums(clinical_data):
    """One range's log-likelihood, score and information against ``math.fsum`` of the
    formula, row by row (relative 1e-13)."""
    y, p, weights = clinical_data
    logit, _ = logit_of(p)
    rows = ArrayRows({"y": y, "logit": logit, "weights": weights})
    beta = np.array([[0.3, -0.2, 0.1], [0.9, 1.1, 1.0]])
    both = newton_partial(0, TASK_ROWS, rows=rows, betas=(beta[:1], beta),
                          views=(RecalibrationRows("citl", weighted=True),
                                 RecalibrationRows("slope", weighted=True)))
    got = {key: both[f"{key}1"] for key in ("loglik", "grad", "info")}
    yy, x = y[:TASK_ROWS].astype(float), logit[:TASK_ROWS]
    for q in range(3):
        w = weights[:TASK_ROWS, q]
        eta = beta[0, q] + x * beta[1, q]
        pi = 1.0 / (1.0 + np.exp(-eta))
        loglik = math.fsum(w * (yy * eta - np.logaddexp(0.0, eta)))
        assert got["loglik"][q] == pytest.approx(loglik, rel=1e-13)
        score = [math.fsum(w * (yy - pi)), math.fsum(w * (yy - pi) * x)]
        assert got["grad"][:, q] == pytest.approx(score, rel=1e-11, abs=1e-9)
        v = w * pi * (1.0 - pi)
        info = [[math.fsum(v), math.fsum(v * x)], [math.fsum(v * x), math.fsum(v * x * x)]]
        assert got["info"][q] == pytest.approx(np.array(info), rel=1e-13)
        eta = beta[0, q] + x  # calibration-in-the-large: offset logit(p), design [1]
        pi = 1.0 / (1.0 + np.exp(-eta))
        assert both["loglik0"][q] == pytest.approx(
            math.fsum(w * (yy * eta - np.logaddexp(0.0, eta))), rel=1e-13)
        assert both["grad0"][0, q] == pytest.approx(math.fsum(w * (yy - pi)), rel=1e-11)
        assert both["info0"][q, 0, 0] == pytest.approx(math.fsum(w * pi * (1 - pi)), rel=1e-13)


def test_the_fits_in_lockstep_are_the_fits_one_at_a_time(clinical_data):
    """Both recalibration fits share each pass over the rows; each is the bytes of its own
    fit alone (``fit_logistic`` of its dense design)."""
    from calaudit.metrics.clinical import fit_logistic

    y, p, weights = clinical_data
    logit, _ = logit_of(p)
    yy, ones = y.astype(np.float64), np.ones((y.size, 1))
    citl, slope = recalibration_replicates(yy, p, weights)
    alone = fit_logistic(ones, logit, yy, weights).coef[0]
    assert citl.tobytes() == alone.tobytes()
    alone = fit_logistic(np.column_stack([ones[:, 0], logit]), np.zeros(y.size), yy,
                         weights).coef[1]
    assert slope.tobytes() == alone.tobytes()


# ----------------------------------------------------------------- group table moments

def group_inputs(n: int = N, seed: int = 5):
    """Two covariates (a 3-level category, a numeric one cut in 4 bands) with their
    intersections; outcome, prediction, LCB values."""
    from calaudit.local import groups as grp

    rng = np.random.default_rng(seed)
    race = rng.integers(0, 3, n)
    age = rng.normal(50.0, 12.0, n)
    p = rng.uniform(0.05, 0.9, n)
    y = (rng.uniform(size=n) < np.clip(p + 0.05 * (race == 1), 0, 1)).astype(np.float64)
    lcb = 1e3 + rng.normal(0.0, 0.1, n)  # a large mean: the two-pass sums matter
    levels = [grp.Levels("race", race.astype(np.int32), ("A", "B", "C")),
              grp.Levels("age", *grp.quantile_bands(age, 4))]
    return levels, y, p, lcb


def _table_bytes(executor) -> bytes:
    import json

    from calaudit.local import groups as grp
    from calaudit.local.group_sources import level_table

    levels, y, p, lcb = group_inputs()
    with scale.using(executor):
        table = level_table(None, levels, True, y, p, lcb, np.random.default_rng(2),
                            grp.GroupSettings(ci_resamples=200))[1]
    return json.dumps(table, sort_keys=True).encode()


@pytest.fixture(scope="module")
def table_serial() -> bytes:
    return _table_bytes(SerialExecutor())


def test_group_moments_are_the_exact_moments():
    """Every group's moments against the rows' exact sums (``math.fsum``) and
    ``statistics.stdev`` (exact fractions): the slow obvious reference."""
    import statistics

    from calaudit.local.group_moments import source_moments
    from calaudit.local.group_sources import level_rows
    from calaudit.local.groups import define_groups
    from calaudit.scale import ArrayRows

    levels, y, p, lcb = group_inputs()
    source = level_rows(None, levels, True, y, p)
    moments = source_moments(source, source.groupings(), ArrayRows({"lcb": lcb}))
    specs = define_groups(levels, True)
    assert len(specs) == 3 + 4 + 12
    for spec in specs:
        got, rows = moments[spec.key[0]][spec.key[1]], spec.rows
        n = rows.size
        assert (got.n, got.events) == (n, math.fsum(y[rows]))
        assert got.observed_rate == math.fsum(y[rows]) / n
        assert got.expected_events == pytest.approx(math.fsum(p[rows]), rel=1e-15)
        assert got.mean_prediction == pytest.approx(math.fsum(p[rows]) / n, rel=1e-15)
        assert got.mean_lcb == pytest.approx(math.fsum(lcb[rows]) / n, rel=1e-15)
        d = y[rows] - p[rows]
        assert got.bias == pytest.approx(math.fsum(d) / n, rel=1e-14)
        assert got.sd == pytest.approx(statistics.stdev(d.tolist()), rel=1e-13)


def test_group_moments_of_rows_in_no_group_and_empty_groups():
    """Rows in none of a grouping's groups (code ``size``) are in its spare bin; a code
    with no rows has NaN means."""
    from calaudit.local.group_moments import source_moments
    from calaudit.scale import ArrayRows

    y, p = np.array([1.0, 0.0, 1.0, 1.0]), np.array([0.5, 0.25, 0.75, 0.5])
    source = ArrayRows({"y": y, "p": p, "a": np.array([0, 1, 0, 1], np.int32),
                        "b": np.array([3, 2, 2, 2], np.int32)})
    moments = source_moments(source, [("a", 1), ("b", 3)])
    a, b = moments[0][0], moments[1][2]
    assert (a.n, a.events, a.bias, a.sd) == (2, 2.0, 0.375, math.sqrt(0.03125))
    assert (b.n, b.events, b.mean_prediction) == (3, 2.0, 0.5) and math.isnan(b.mean_lcb)
    assert moments[1][0].n == 0 and math.isnan(moments[1][0].bias)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_the_group_table_gives_the_same_bytes_on_any_threads(table_serial, threads):
    assert _table_bytes(ThreadExecutor(threads)) == table_serial


# ------------------------------------------ Dask (skipped without distributed: conftest)

@pytest.mark.parametrize("workers", ["one_worker", "two_workers"])
def test_clinical_fits_on_dask_give_the_serial_bytes(workers, request, monkeypatch,
                                                     clinical_data, clinical_serial):
    """The fits and the bootstrap replicates on 1 and 2 workers: the in-process bytes;
    every sum is a ``newton_partial`` on the workers; the rows placed once per fit pair
    (``y`` and ``logit(p)``, then with the batch's weights); everything released."""
    from calaudit.scale import DaskExecutor
    from tests.conftest import dask_partials

    client = request.getfixturevalue(workers)
    executor = DaskExecutor(client)
    kept: list[object] = []
    keep = DaskExecutor.keep
    monkeypatch.setattr(DaskExecutor, "keep",
                        lambda self, value: kept.append(value) or keep(self, value))
    calls = dask_partials(monkeypatch)
    before = set(client.who_has())
    assert _clinical_bytes(*clinical_data, executor) == clinical_serial
    assert calls and set(calls) == {"newton_partial"}
    assert [sorted(source.columns) for source in kept] == [["logit", "y"],
                                                           ["logit", "weights", "y"]]
    assert eventually(lambda: set(client.who_has()) <= before)


@pytest.mark.parametrize("workers", ["one_worker", "two_workers"])
def test_the_group_table_on_dask_gives_the_serial_bytes(workers, request, monkeypatch,
                                                        table_serial):
    """The group table's moments on 1 and 2 workers: the in-process bytes; two
    ``moments_partial`` passes over rows placed once; everything released."""
    from calaudit.scale import DaskExecutor
    from tests.conftest import dask_partials

    client = request.getfixturevalue(workers)
    calls = dask_partials(monkeypatch)
    before = set(client.who_has())
    assert _table_bytes(DaskExecutor(client)) == table_serial
    assert calls == ["moments_partial", "moments_partial"]
    assert eventually(lambda: set(client.who_has()) <= before)


def _audit(executor) -> str:
    from tests.conftest import audit_json

    return audit_json(executor, n=900, seed=4, method="features", resamples=29,
                      local_resamples=19, random_state=6)


def test_the_audit_sends_the_fits_and_the_group_moments_to_dask(one_worker, monkeypatch):
    """The stages pass the run's executor: the clinical fits and the group table's moments
    run on the worker, and the JSON is the in-process bytes."""
    from calaudit.scale import DaskExecutor
    from tests.conftest import dask_partials

    expected = _audit(None)
    calls = dask_partials(monkeypatch)
    assert _audit(DaskExecutor(one_worker)) == expected
    assert "newton_partial" in calls and calls.count("moments_partial") == 2
