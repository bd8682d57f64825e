"""Kuiper's test of calibration against loops from its definition and the closed form of
its null (the range of a Brownian motion)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from calaudit.inference.kuiper import kuiper_test


def kuiper_loop(y: np.ndarray, s: np.ndarray) -> float:
    """max_k C_k - min_k C_k with C_0 = 0, C_k = (1/n) sum_{j <= k} (y_j - s_j), scores
    ascending (ties in row order), by an explicit loop."""
    order = sorted(range(len(s)), key=lambda i: (s[i], i))
    c, high, low = 0.0, 0.0, 0.0
    for i in order:
        c += (y[i] - s[i]) / len(s)
        high, low = max(high, c), min(low, c)
    return high - low


def binary(y, p):
    return np.asarray(y), np.column_stack([1 - np.asarray(p), np.asarray(p)])


def test_statistic_is_the_range_of_the_cumulative_residuals():
    rng = np.random.default_rng(1)
    p = np.round(rng.uniform(0.05, 0.95, 300), 2)  # ties in the scores
    y = (rng.random(300) < p).astype(int)
    result = kuiper_test(*binary(y, p), n_resamples=99, rng=np.random.default_rng(2))
    assert result.estimate == pytest.approx(kuiper_loop(y, p), rel=1e-12)
    sigma = math.sqrt(float(np.sum(p * (1 - p)))) / p.size
    assert result.statistic == pytest.approx(result.estimate / sigma, rel=1e-12)
    assert result.null_distribution.shape == (99,) and 1 / 100 <= result.p_value <= 1


def test_top_label_view_for_several_classes():
    rng = np.random.default_rng(3)
    proba = rng.dirichlet(np.ones(4), 200)
    y = np.array([rng.choice(4, p=row) for row in proba])
    result = kuiper_test(y, proba, n_resamples=49, rng=np.random.default_rng(4))
    top = proba.argmax(axis=1)
    assert result.params["notion"] == "top-label"
    assert result.estimate == pytest.approx(
        kuiper_loop((y == top).astype(float), proba.max(axis=1)), rel=1e-12)


def test_null_is_the_range_of_a_brownian_motion():
    """Under calibration K / sigma tends to the range of a standard Brownian motion on
    [0, 1], whose mean is 2 sqrt(2 / pi) (Feller 1951)."""
    rng = np.random.default_rng(5)
    p = rng.uniform(0.05, 0.95, 4000)
    y = (rng.random(p.size) < p).astype(int)
    result = kuiper_test(*binary(y, p), n_resamples=400, rng=np.random.default_rng(6))
    null = result.null_distribution / result.params["sigma"]
    assert null.mean() == pytest.approx(2 * math.sqrt(2 / math.pi), rel=0.06)


def test_rejects_an_overconfident_model_and_not_a_calibrated_one():
    rng = np.random.default_rng(7)
    p = rng.uniform(0.05, 0.95, 3000)
    truth = 0.5 + 0.6 * (p - 0.5)  # the model is too sure of itself
    bad = kuiper_test(*binary((rng.random(p.size) < truth).astype(int), p),
                      n_resamples=199, rng=np.random.default_rng(8))
    good = kuiper_test(*binary((rng.random(p.size) < p).astype(int), p),
                       n_resamples=199, rng=np.random.default_rng(8))
    assert bad.p_value == pytest.approx(1 / 200) and good.p_value > 0.05


def test_buckets_of_the_sorted_scores_give_the_loop_with_ties_across_them(monkeypatch):
    """Buckets of 64 rows (ties in the scores straddle their bounds, some buckets are
    empty): the walk over the buckets is the loop's range, and the null has its shape."""
    from calaudit.inference import kuiper

    monkeypatch.setattr(kuiper, "BUCKET_ROWS", 64)
    rng = np.random.default_rng(11)
    p = np.round(rng.uniform(0.05, 0.95, 500), 1)  # nine values: most buckets tie
    y = (rng.random(p.size) < np.clip(p + 0.1, 0, 1)).astype(int)
    result = kuiper_test(*binary(y, p), n_resamples=59, rng=np.random.default_rng(2))
    assert result.params["buckets"] == 8
    assert result.estimate == pytest.approx(kuiper_loop(y, p), rel=1e-12)
    assert result.null_distribution.shape == (59,) and np.all(result.null_distribution > 0)


def test_the_bits_do_not_depend_on_the_executor():
    from calaudit import scale

    rng = np.random.default_rng(12)
    p = rng.uniform(0.05, 0.95, 3000)
    y = (rng.random(p.size) < p).astype(int)
    runs = []
    for executor in (scale.SerialExecutor(), scale.ThreadExecutor(2)):
        with scale.using(executor):
            result = kuiper_test(*binary(y, p), n_resamples=39, rng=np.random.default_rng(3))
        runs.append((result.estimate, result.p_value, result.null_distribution.tobytes()))
    assert runs[0] == runs[1]


def test_a_dataset_on_two_workers_gives_the_loaded_bits_without_its_rows_in_the_client(
        tmp_path, monkeypatch, two_workers, refused):
    """Three Parquet files, buckets of 1,000 rows: the tasks read, sort and redraw the
    rows on the workers; estimate, p-value and null are the loaded rows' bytes."""
    from calaudit import scale
    from calaudit.data.planned import plan
    from calaudit.inference import kuiper
    from calaudit.inference.kuiper import kuiper_test_of_rows
    from tests.conftest import write_parts

    monkeypatch.setattr(kuiper, "BUCKET_ROWS", 1_000)
    rng = np.random.default_rng(13)
    p = np.round(rng.beta(2.0, 3.0, 4_500), 3)
    label = (rng.random(p.size) < p).astype(np.int8)
    path = write_parts(tmp_path / "ds", {"label": label, "prob": p}, (0, 1_000, 2_600, 4_500))
    loaded = kuiper_test(*binary(label, p), n_resamples=49, rng=np.random.default_rng(4))
    with scale.using(scale.DaskExecutor(two_workers)):
        data = plan(path)
        result = kuiper_test_of_rows(data.rows, 2, n_resamples=49,
                                     rng=np.random.default_rng(4))
    assert result.params["buckets"] == 5
    assert (result.estimate, result.statistic, result.p_value) == (
        loaded.estimate, loaded.statistic, loaded.p_value)
    assert result.null_distribution.tobytes() == loaded.null_distribution.tobytes()


def test_a_multiclass_dataset_read_by_its_tasks_gives_the_loaded_bits(tmp_path, monkeypatch,
                                                                      refused):
    """Four classes with text labels in three Parquet files, buckets of 100 rows: the
    top-label view read range by range is the loaded rows' bytes."""
    from calaudit import scale
    from calaudit.data.load import load
    from calaudit.data.planned import plan
    from calaudit.inference import kuiper
    from calaudit.inference.kuiper import kuiper_test_of_rows
    from tests.conftest import multiclass_frame, write_frame

    monkeypatch.setattr(kuiper, "BUCKET_ROWS", 100)
    frame = multiclass_frame(450, 4, seed=5)
    (tmp_path / "ds").mkdir()
    for k, (a, b) in enumerate([(0, 100), (100, 320), (320, 450)]):
        write_frame(frame.iloc[a:b], tmp_path / "ds" / f"part-{k}.parquet")
    loaded = load(str(tmp_path / "ds"))
    expected = kuiper_test(loaded.y_true, loaded.y_proba, n_resamples=29,
                           rng=np.random.default_rng(6))
    with scale.using(scale.SerialExecutor()):
        data = plan(str(tmp_path / "ds"))
        result = kuiper_test_of_rows(data.rows, 4, n_resamples=29,
                                     rng=np.random.default_rng(6))
    assert result.params["notion"] == "top-label" and result.params["buckets"] == 5
    assert (result.estimate, result.p_value) == (expected.estimate, expected.p_value)
    assert result.null_distribution.tobytes() == expected.null_distribution.tobytes()
