"""Statistics that used to run whole in the client, now reductions through the run's
executor (issue 14): the clinical recalibration fits and their bootstrap replicates, the
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

from calaudit.metrics.clinical import (
    RecalibrationRows,
    logistic_recalibration,
    logit_of,
    newton_partial,
    recalibration_replicates,
)
from calaudit.numerics.resampling import bootstrap_counts
from calaudit.numerics.row_blocks import TASK_ROWS, SerialExecutor, ThreadExecutor
from calaudit.numerics.row_sources import ArrayRows

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
    fit = logistic_recalibration(y, p, executor)
    citl, slope = recalibration_replicates(y.astype(np.float64), p, weights, executor)
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
    got = newton_partial(0, TASK_ROWS, rows=rows, beta=beta, newton=True,
                         view=RecalibrationRows("slope", weighted=True))
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


# ----------------------------------------------------------------------------- Dask

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def one_worker():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        yield client


@pytest.fixture(scope="module")
def two_workers():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  memory_limit="1GB", dashboard_address=None,
                                  scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                                  host="127.0.0.1") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        yield client


def eventually(condition, seconds: float = 20.0) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize("workers", ["one_worker", "two_workers"])
def test_clinical_fits_on_dask_give_the_serial_bytes(workers, request, monkeypatch,
                                                     clinical_data, clinical_serial):
    """The fits and the bootstrap replicates on 1 and 2 workers: the in-process bytes;
    every sum is a ``newton_partial`` on the workers; the rows placed once per fit pair
    (``y`` and ``logit(p)``, then with the batch's weights); everything released."""
    from calaudit.execution import DaskExecutor
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
