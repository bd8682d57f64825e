"""Row sources and the statistics outside the kernel tests as reductions over fixed row
ranges: Parquet rows read by range give the in-memory rows; the attribution fit runs on the
executor it is given."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calaudit import scale
from calaudit.data.locations import locate
from calaudit.data.row_source import ParquetRows
from calaudit.scale import TASK_ROWS, SerialExecutor, task_ranges

N_BIG = 2 * TASK_ROWS + 6_871  # three reduction ranges


class Recording(SerialExecutor):
    """The serial executor, recording the partials it ran."""

    def __init__(self) -> None:
        self.partials: list[str] = []

    def map_sum(self, partial, ranges, shared):
        self.partials.append(partial.__name__)
        return super().map_sum(partial, ranges, shared)


def samples(seed: int):
    """Awkward columns: ties, zeros of both signs, tiny and huge values, infinities."""
    rng = np.random.default_rng(seed)
    for kind in range(6):
        n = int(rng.integers(1, 2_500))
        yield {0: rng.normal(size=n),
               1: rng.integers(-3, 4, size=n).astype(float),
               2: rng.uniform(size=n) ** 8,
               3: np.where(rng.uniform(size=n) < 0.5, 0.0, rng.normal(size=n) * 1e-300),
               4: rng.choice([1e300, -1e300, np.inf, -np.inf, 5.0], size=n),
               5: np.full(n, 0.25)}[kind], int(rng.integers(1, 600))


# ------------------------------------------------------------------ Parquet row source

def table(n: int = N_BIG, seed: int = 6) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 5.0, n)
    return {"label": (rng.uniform(size=n) < np.minimum(p + 0.02, 1)).astype(np.int8),
            "prob": p, "age": rng.uniform(20, 80, n).round(1),
            "flag": rng.uniform(size=n) < 0.3}


def write_files(folder, columns, files: int, row_group: int = 10_000):
    folder.mkdir()
    n = len(columns["prob"])
    cuts = np.linspace(0, n, files + 1).astype(int)
    for k in range(files):
        part = {name: values[cuts[k]:cuts[k + 1]] for name, values in columns.items()}
        pq.write_table(pa.table(part), folder / f"part-{k:02d}.parquet",
                       row_group_size=row_group)
    return folder


@pytest.fixture(scope="module")
def columns():
    return table()


@pytest.fixture(scope="module", params=[1, 3, 7])
def dataset(request, tmp_path_factory, columns):
    return write_files(tmp_path_factory.mktemp("rows") / "preds", columns, request.param)


def test_parquet_rows_read_any_range(dataset, columns):
    source = ParquetRows.of(locate(str(dataset)))
    assert source.n == N_BIG
    assert len(pickle.dumps(source)) < 200 * len(source.files) + 500  # no rows inside
    for start, stop in [(0, 1), (9_999, 10_001), (21_000, 70_000), (N_BIG - 5, N_BIG),
                        (500, 500), *task_ranges(N_BIG)]:
        got = source.read(start, stop, ["prob", "label", "flag"])
        np.testing.assert_array_equal(got["prob"], columns["prob"][start:stop])
        np.testing.assert_array_equal(got["label"], columns["label"][start:stop])
        np.testing.assert_array_equal(got["flag"], columns["flag"][start:stop])
    assert got["label"].dtype == np.int64 and got["prob"].dtype == np.float64
    with pytest.raises(ValueError):
        source.read(0, N_BIG + 1, ["prob"])


def test_parquet_rows_on_an_fsspec_filesystem(columns):
    import fsspec

    fs = fsspec.filesystem("memory")
    cuts = (0, 50_000, N_BIG)
    for k in range(2):
        part = {name: values[cuts[k]:cuts[k + 1]] for name, values in columns.items()}
        with fs.open(f"/rowsrc/part-{k}.parquet", "wb") as handle:
            pq.write_table(pa.table(part), handle, row_group_size=20_000)
    source = ParquetRows.of(locate("memory://rowsrc/"))
    assert source.n == N_BIG and len(source.files) == 2
    got = source.read(40_000, 60_000, ["prob", "age"])
    np.testing.assert_array_equal(got["prob"], columns["prob"][40_000:60_000])
    np.testing.assert_array_equal(got["age"], columns["age"][40_000:60_000])


def test_parquet_rows_skip_empty_files(tmp_path, columns):
    folder = tmp_path / "preds"
    folder.mkdir()
    for k, (a, b) in enumerate([(0, 70), (70, 70), (70, 200), (200, 300)]):
        part = {name: values[a:b] for name, values in columns.items()}
        pq.write_table(pa.table(part), folder / f"part-{k}.parquet", row_group_size=32)
    source = ParquetRows.of(locate(str(folder)))
    assert source.n == 300 and source.offsets.tolist() == [0, 70, 70, 200, 300]
    for start, stop in [(0, 300), (69, 71), (70, 70), (64, 200)]:
        np.testing.assert_array_equal(source.read(start, stop, ["prob"])["prob"],
                                      columns["prob"][start:stop])


def test_parquet_rows_refuse_text_columns_and_csv(tmp_path):
    pq.write_table(pa.table({"prob": [0.5, 0.25], "name": ["a", "b"]}), tmp_path / "a.parquet")
    source = ParquetRows.of(locate(str(tmp_path / "a.parquet")))
    assert source.n == 2
    with pytest.raises(ValueError, match="not numeric"):
        source.read(0, 2, ["name"])
    (tmp_path / "b.csv").write_text("prob\n0.5\n")
    with pytest.raises(ValueError, match="Parquet"):
        ParquetRows.of(locate(str(tmp_path / "b.csv")))


# ------------------------------------------------------- attribution on the executor

def test_the_attribution_fit_runs_on_the_executor_given():
    from calaudit.attribution.explain import AttributionSettings, attribute
    from calaudit.local.groups import Levels

    rng = np.random.default_rng(8)
    n = 3_000
    region = rng.integers(0, 3, n)
    p = rng.uniform(0.1, 0.9, n)
    y = (rng.uniform(size=n) < np.clip(p + 0.08 * (region == 2), 0, 1)).astype(float)
    levels = [Levels("region", region.astype(np.intp), ("a", "b", "c"))]
    plain = attribute(levels, ["categorical"], y, p, AttributionSettings())
    recording = Recording()
    with scale.using(recording):
        ran = attribute(levels, ["categorical"], y, p, AttributionSettings())
    assert ran.section == plain.section
    assert ran.section["explaining"] == ["region"]
    assert {"glm_partial", "mean_partial"} <= set(recording.partials)


def test_the_attribution_partial_does_not_depend_on_blas_threads():
    """A Dask worker runs one BLAS thread, the client several: a threaded BLAS dot rounds
    differently, so the partial must not use one (it would pass on a 1-thread BLAS)."""
    from threadpoolctl import threadpool_limits

    from calaudit.attribution.irls import glm_partial, model_rows

    rng = np.random.default_rng(10)
    y = (rng.uniform(size=TASK_ROWS) < 0.4).astype(float)
    rows = model_rows(y, rng.normal(size=TASK_ROWS),
                      rng.integers(0, 6, TASK_ROWS).astype(np.int32))
    cell_eta = rng.normal(size=6)
    many = glm_partial(0, TASK_ROWS, rows=rows, cell_eta=cell_eta)
    with threadpool_limits(1):
        one = glm_partial(0, TASK_ROWS, rows=rows, cell_eta=cell_eta)
    assert all(many[k].tobytes() == one[k].tobytes() for k in many)


def _former_clinical_fit(design, offset, y, weights):
    """The clinical fit before it became a reduction (sums over all rows at once)."""
    from scipy import special

    from calaudit.metrics.clinical import MAX_ITER, TOL, _loglik, _solve

    k, q = design.shape[1], weights.shape[1]
    beta = np.zeros((k, q))
    eta = offset[:, None] + design @ beta
    current = _loglik(eta, y, weights)
    converged = np.zeros(q, dtype=bool)
    for _ in range(MAX_ITER):
        pi = special.expit(eta)
        grad = design.T @ (weights * (y[:, None] - pi))
        info = np.einsum("nq,na,nb->qab", weights * pi * (1.0 - pi), design, design)
        step = _solve(info, grad)
        step[:, converged] = 0.0
        scale = np.ones(q)
        for _ in range(40):
            trial = beta + step * scale
            eta_trial = offset[:, None] + design @ trial
            value = _loglik(eta_trial, y, weights)
            worse = value < current - 1e-12 * np.abs(current)
            if not worse.any():
                break
            scale = np.where(worse, scale / 2.0, scale)
        beta, eta, current = trial, eta_trial, value
        converged |= (scale == 1.0) & (np.abs(step).max(axis=0) < TOL)
        if converged.all():
            break
    pi = special.expit(eta)
    return beta, np.einsum("nq,na,nb->qab", weights * pi * (1.0 - pi), design, design)


def test_clinical_fits_are_range_reductions_close_to_the_former_fit():
    """The fit's sums are a fold of range partials without BLAS (so its last digits
    differ from the former whole-array fit with BLAS products, once: compared to it at
    1e-12); above one range checked against the dense formula."""
    from calaudit.metrics import clinical

    rng = np.random.default_rng(11)
    for n in (200, N_BIG):
        p = rng.uniform(0.05, 0.95, n)
        y = (rng.uniform(size=n) < np.clip(1.1 * p, 0, 1)).astype(float)
        logit = np.log(p / (1 - p))
        design = np.column_stack([np.ones(n), logit])
        fit = clinical.fit_logistic(design, np.zeros(n), y, np.ones((n, 1)))
        if n <= TASK_ROWS:
            weights = rng.poisson(1.0, (n, 4)).astype(float)  # bootstrap replicates too
            former, _ = _former_clinical_fit(design, np.zeros(n), y, weights)
            np.testing.assert_allclose(
                clinical.fit_logistic(design, np.zeros(n), y, weights).coef, former,
                rtol=1e-12, atol=1e-14)
        beta = fit.coef[:, 0]
        pi = 1 / (1 + np.exp(-design @ beta))
        np.testing.assert_allclose(design.T @ (y - pi), 0.0, atol=1e-7 * n)
        info = (design * (pi * (1 - pi))[:, None]).T @ design
        np.testing.assert_allclose(fit.cov[0], np.linalg.inv(info), rtol=1e-8)
        recording = Recording()
        with scale.using(recording):
            again = clinical.fit_logistic(design, np.zeros(n), y, np.ones((n, 1)))
        assert again.coef.tobytes() == fit.coef.tobytes()
        assert set(recording.partials) == {"newton_partial"}


def test_a_data_page_that_does_not_decode_is_the_loaders_one_line_error(tmp_path):
    """The footer reads, a data page does not: the task reading it reports the file by
    its dataset name, rule unreadable_file, as the loader does."""
    from calaudit.exceptions import InputError

    folder = tmp_path / "preds"
    folder.mkdir()
    p = np.random.default_rng(0).uniform(size=5_000)
    for i in range(2):
        pq.write_table(pa.table({"prob": p, "label": (p > 0.5).astype(np.int64)}),
                       folder / f"part-{i}.parquet")
    source = ParquetRows.of(locate(str(folder)))
    page = pq.ParquetFile(folder / "part-1.parquet").metadata.row_group(0).column(0)
    with open(folder / "part-1.parquet", "r+b") as handle:  # the data page's header
        handle.seek(page.data_page_offset)
        handle.write(b"\xff" * 64)
    assert source.read(0, 10, ["prob"])["prob"].size == 10
    with pytest.raises(InputError, match="unreadable_file") as error:
        source.read(4_990, 5_010, ["prob"])
    assert error.value.one_line().startswith(source.names[1])
    assert source.names == tuple(f.name for f in locate(str(folder)).files)
