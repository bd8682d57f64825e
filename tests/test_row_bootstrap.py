"""Bootstrap intervals from block-factorised counts drawn by the task that reads a block
(:mod:`calaudit.metrics.row_bootstrap`, :mod:`calaudit.metrics.smooth_bootstrap`,
:func:`calaudit.metrics.clinical.recalibration_of_counts`): each replicate is the
count-weighted statistic of the rows under the count matrix those blocks make, and a
dataset audited with ``--ci`` by tasks that read their own rows gives the JSON of the same
rows loaded into memory, while the client reads no rows."""

from __future__ import annotations

import numpy as np
import pytest

from calaudit import scale
from calaudit.audit.battery import (
    CalibrationErrorStage,
    ClinicalStage,
    EceFamilyStage,
    SkceStage,
    SmoothEceStage,
)
from calaudit.audit.config import AuditConfig
from calaudit.audit.runner import run_audit
from calaudit.data.dataset_rows import DatasetRows
from calaudit.data.load import load
from calaudit.data.planned import plan
from calaudit.metrics.binned import debiased_squared_from_sums, ece_from_sums, mce_from_sums
from calaudit.metrics.brier_decomposition import (
    decompose_binned,
    decomposition_from_sums,
    sum_decompositions,
)
from calaudit.metrics.clinical import (
    logit_of,
    recalibration_of_counts,
    recalibration_replicates,
)
from calaudit.metrics.ece import notion_outcomes, scores_and_outcomes
from calaudit.metrics.ece_variants import (
    CanonicalBins,
    canonical_from_sums,
    classwise_outcomes,
)
from calaudit.metrics.log_loss import log_loss
from calaudit.metrics.row_bootstrap import Draws, replicate_sums
from calaudit.metrics.row_summary import Binning, class_panels
from calaudit.metrics.smooth_bootstrap import smooth_ece_of_counts
from calaudit.metrics.smooth_ece import smooth_ece_replicates
from calaudit.numerics.block_draws import totals_table
from calaudit.scale import ArrayRows, DaskExecutor, SerialExecutor, blocks
from tests.test_dask_dataset_rows import canonical, columns, write

N = 9_000  # three row blocks, the last one short


def count_matrix(draws: Draws, n: int) -> np.ndarray:
    """(n, B): every block's counts, stacked in row order."""
    totals = totals_table(draws.seed, draws.stream, n, draws.n_resamples)
    return np.vstack([draws.counts(totals, block, hi - lo) for block, lo, hi in blocks(0, n)])


def rows_of(m: int, seed: int = 3, n: int = N):
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.full(m, 0.7), n)
    y = (rng.random(n)[:, None] >= np.cumsum(proba, axis=1)[:, :-1]).sum(axis=1)
    return y, proba, rng.uniform(0.2, 3.0, n)


def test_the_counts_are_one_multinomial_draw_of_n_per_resample():
    draws = Draws(11, "binned_bootstrap", 40)
    counts = count_matrix(draws, N)
    assert counts.shape == (N, 40)
    assert np.all(counts.sum(axis=0) == N) and np.all(counts >= 0)
    assert np.all(counts == np.round(counts))
    assert abs(counts.mean() - 1.0) < 1e-12 and 0.8 < counts.var() < 1.2


@pytest.mark.parametrize(("m", "weighted", "strategy"), [
    (2, False, "uniform"), (2, True, "quantile"), (3, False, "quantile"), (3, True, "uniform")])
def test_replicates_are_the_count_weighted_statistics(m, weighted, strategy):
    """Every binned statistic of every resample equals the statistic of the in-memory
    rows weighted by the count matrix (times ``w``)."""
    y, proba, w = rows_of(m)
    draws = Draws(5, "binned_bootstrap", 30)
    source = ArrayRows({"y": y, "proba": proba, **({"w": w} if weighted else {})})
    binning = Binning.build(ArrayRows({"y": y, "proba": proba}), 10, strategy)
    with scale.using(SerialExecutor()):
        boot = replicate_sums(source, binning, draws)
    weights = count_matrix(draws, N) * (w[:, None] if weighted else 1.0)
    bins = {"n_bins": 10, "strategy": strategy}
    scalar = notion_outcomes(y, proba, **bins).sums(weights)
    per_class = classwise_outcomes(y, proba if m > 2 else proba[:, :1], **bins)
    if m == 2:
        per_class = (*per_class, notion_outcomes(y, proba, **bins))
    decomposed = per_class[1:] if m == 2 else per_class
    parts = sum_decompositions([decompose_binned(b, weights) for b in decomposed])
    expected = {
        "ece": ece_from_sums(scalar), "mce": mce_from_sums(scalar),
        "ece_l2": ece_from_sums(scalar, "l2"),
        "debiased": debiased_squared_from_sums(scalar),
        "classwise": np.mean([ece_from_sums(b.sums(weights)) for b in per_class], axis=0),
        "canonical": CanonicalBins.build(y, proba, 10).ece("tv", weights),
        "log_loss": log_loss(y, proba, weights=weights),
        "reliability": parts.reliability, "resolution": parts.resolution,
        "brier": (((proba - np.eye(m)[y]) ** 2).sum(axis=1) @ weights) / weights.sum(axis=0)}
    ours = boot.sums(0)
    mine = sum_decompositions([decomposition_from_sums(*boot.moments(k), floats=False)
                               for k in ((0,) if m == 2 else class_panels(m))])
    found = {
        "ece": ece_from_sums(ours), "mce": mce_from_sums(ours),
        "ece_l2": ece_from_sums(ours, "l2"), "debiased": debiased_squared_from_sums(ours),
        "classwise": np.mean([ece_from_sums(boot.sums(k)) for k in class_panels(m)], axis=0),
        "canonical": canonical_from_sums(*boot.canonical_sums(), "tv"),
        "log_loss": boot.log_loss_sums / boot.total,
        "reliability": mine.reliability, "resolution": mine.resolution,
        "brier": boot.brier_sums[0] / boot.total}
    for key, value in expected.items():
        np.testing.assert_allclose(found[key], value, rtol=1e-10, atol=1e-14, err_msg=key)


def test_smooth_ece_replicates_are_the_count_weighted_ones():
    y, proba, w = rows_of(2, seed=8)
    draws = Draws(9, "binned_bootstrap", 12)
    counts = count_matrix(draws, N)
    scores, outcomes = scores_and_outcomes(y, proba, "binary")
    for weights, source in ((counts, ArrayRows({"y": y, "proba": proba})),
                            (counts * w[:, None], ArrayRows({"y": y, "proba": proba, "w": w}))):
        with scale.using(SerialExecutor()):
            ours = smooth_ece_of_counts(source, draws)
        np.testing.assert_allclose(ours, smooth_ece_replicates(scores, outcomes, weights),
                                   rtol=1e-9)


def test_clinical_replicates_are_the_count_weighted_fits():
    y, proba, w = rows_of(2, seed=2)
    p = proba[:, 1]
    draws = Draws(4, "clinical_bootstrap", 16)
    counts = count_matrix(draws, N)
    rows = {"y": y, "logit": logit_of(p)[0]}
    for weights, extra in ((counts, {}), (counts * w[:, None], {"w": w})):
        with scale.using(SerialExecutor()):
            citl, slope = recalibration_of_counts(ArrayRows({**rows, **extra}), N, draws,
                                                  bool(extra))
        expected = recalibration_replicates(y.astype(np.float64), p, weights)
        np.testing.assert_allclose(citl, expected[0], rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(slope, expected[1], rtol=1e-8)


#: Every stage with bootstrap intervals (the SKCE on random features: its tasks read
#: their own rows for more rows than ``max_quadratic_n``).
STAGES = (CalibrationErrorStage(), EceFamilyStage(), SmoothEceStage(), ClinicalStage(),
          SkceStage())


def _config(**extra):
    from calaudit.audit.sections.global_tests import SkceConfig

    return AuditConfig(n_resamples=39, random_state=5, method="features", ci=True,
                       skce=SkceConfig(max_quadratic_n=2_000), **extra)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> str:
    table = {name: values[:N] for name, values in columns(6).items()}
    return str(write(tmp_path_factory.mktemp("boot") / "ds", table, (0, 1_500, 5_000, N)))


def test_a_dataset_with_intervals_on_two_workers_is_the_loaded_json(folder, two_workers,
                                                                    refused, monkeypatch):
    """``--ci`` on a dataset: on two workers and in one process, the JSON (statuses,
    p-values, estimates and intervals) is bit for bit the one of the same rows loaded; the
    client reads no rows (``refused``, and the source's ``read`` fails in this process)
    and places nothing; the counts are drawn by the reductions' tasks."""
    from tests.conftest import dask_partials

    config = _config()
    single = canonical(run_audit(load(folder), config, stages=STAGES))
    with scale.using(SerialExecutor()):
        data = plan(folder)
        assert canonical(run_audit(data, config, stages=STAGES)) == single
    calls = dask_partials(monkeypatch)
    executor = DaskExecutor(two_workers)
    with scale.using(executor):
        data = plan(folder)

    def read_here(self, start, stop, names):
        raise AssertionError(f"rows {start}-{stop} read in the client")

    monkeypatch.setattr(DatasetRows, "read", read_here)  # the workers' copies read
    result = run_audit(data, _config(executor=executor), stages=STAGES)
    assert canonical(result) == single
    assert all(m.ci is not None for m in result.metrics), [m.id for m in result.metrics
                                                           if m.ci is None]
    for partial in ("replicate_partial", "spread_count_partial", "newton_partial"):
        assert partial in calls
    assert executor.block_bytes == 0


def test_a_multiclass_dataset_with_intervals_is_the_loaded_json(tmp_path, refused):
    rng = np.random.default_rng(12)
    n = 5_000
    proba = rng.dirichlet([2.0, 3.0, 4.0], n)
    table = {"label": (rng.random(n)[:, None] >= np.cumsum(proba, axis=1)[:, :-1]).sum(1),
             **{f"p_{k}": proba[:, k] for k in range(3)}}
    path = str(write(tmp_path / "multi", table, (0, 1_000, 2_000, n)))
    stages = STAGES[:3]
    config = _config()
    single = canonical(run_audit(load(path), config, stages=stages))
    with scale.using(SerialExecutor()):
        assert canonical(run_audit(plan(path), config, stages=stages)) == single


@pytest.mark.parametrize("blocksize", [2, 7])
def test_linear_skce_replicates_are_the_count_weighted_term_means(blocksize):
    """``skce_ul`` / ``skce_block`` replicates: the terms' mean under the counts of the
    ``T`` terms (one multinomial of ``T`` per resample)."""
    from calaudit.inference.skce_rows import linear_replicates
    from calaudit.metrics.skce import block_terms, choose_kernel

    y, proba, _ = rows_of(3, seed=5, n=30_001)
    residuals = np.eye(3)[y] - proba
    kernel = choose_kernel(proba, "laplacian", 0.5).kernel
    draws = Draws(7, "skce_ul_bootstrap", 25)
    with scale.using(SerialExecutor()):
        ours = linear_replicates(ArrayRows({"proba": proba, "residuals": residuals}),
                                 kernel, blocksize, draws)
    terms = block_terms(kernel, proba, residuals, blocksize)
    counts = count_matrix(draws, terms.size)
    assert np.all(counts.sum(axis=0) == terms.size)
    np.testing.assert_allclose(ours, terms @ counts / terms.size, rtol=1e-10)


def test_a_csv_dataset_with_intervals_is_the_loaded_json(tmp_path, refused):
    """A CSV dataset read by its tasks (each parses its own files' rows): the ``--ci``
    JSON of the loaded rows, no row read into the client's columns."""
    from tests.test_csv_dataset_rows import frame
    from tests.test_csv_dataset_rows import write as write_csv

    path = write_csv(tmp_path / "csv", frame(3), gzip_last=True)
    config = _config()
    single = canonical(run_audit(load(path), config, stages=STAGES))
    with scale.using(SerialExecutor()):
        assert canonical(run_audit(plan(path), config, stages=STAGES)) == single
