"""A multi-class model's SKCE stage on a Parquet dataset whose tasks read their own rows:
the feature pass's columns (``p``, one-hot labels, ``e_y - p``) built in the tasks, the
median subsample, the approximation subsample and the block estimators' terms gathered or
reduced there; the stage's bytes are those of the same files loaded into memory, and the
client never reads the rows (``RowsData._loaded`` refused). On two workers:
``tests/test_dask_dataset_rows.py``."""

from __future__ import annotations

import numpy as np
import pytest

from calaudit import scale
from calaudit.audit.battery import SkceStage
from calaudit.audit.config import AuditConfig
from calaudit.audit.sections.global_tests import SkceConfig
from calaudit.data.load import load
from calaudit.data.planned import plan
from calaudit.inference.feature_tests import label_inputs
from calaudit.inference.skce_class_rows import ClassRows
from calaudit.scale import SerialExecutor
from tests.test_local_multiclass_rows import files  # noqa: F401 (a fixture)
from tests.test_local_setup_rows import _as_json

CONFIG = {"n_resamples": 19, "random_state": 5, "n_features": 64}


def test_the_class_rows_are_the_in_memory_feature_columns(files, refused):  # noqa: F811
    """``x``, ``proba``, ``observed`` and ``residuals`` of a range read by the task: the
    bytes of the columns the in-memory feature pass makes of the loaded arrays."""
    loaded = load(files)
    p, r = np.asarray(loaded.y_proba), np.asarray(loaded.residuals)
    columns, _ = label_inputs(None, p, r, p, 1.0, 0, "s", 0)
    with scale.using(SerialExecutor()):
        rows = ClassRows(plan(files).rows)
        got = rows.read(650, 2_200, ["x", "proba", "observed", "residuals"])
    assert rows.n == p.shape[0]
    for name in ("x", "proba", "observed"):
        assert got[name].tobytes() == np.asarray(columns[name][650:2_200]).tobytes()
        assert got[name].shape == (1_550, 3)
    assert got["residuals"].tobytes() == r[650:2_200].tobytes()


@pytest.mark.parametrize("options", [
    {"method": "features", "skce": SkceConfig(max_quadratic_n=1_000)},
    {"method": "features", "ci_level": 0.9, "skce": SkceConfig(max_quadratic_n=1_000)},
    {"method": "exact", "skce": SkceConfig(max_quadratic_n=1_000)},
    {"method": "features", "skce": SkceConfig(max_quadratic_n=5_000)}],
    ids=["features", "intervals", "linear-only", "gathered"])
def test_the_multiclass_skce_stage_equals_the_loaded_rows(files, refused, options):  # noqa: F811
    """The SKCE stage of a three-class model (median subsample, feature pass with the
    consistency redraws and the bootstrap, the approximation check, the linear and block
    estimators; up to ``max_quadratic_n`` rows the gathered exact path): the bytes of the
    loaded rows, without the client reading them."""
    config = AuditConfig(**CONFIG, **options)
    with scale.using(SerialExecutor()):
        data = plan(files)
        assert not data.is_binary and len(data.classes) == 3
        got = SkceStage().run(data, config, np.random.default_rng(1))
        want = SkceStage().run(load(files), config, np.random.default_rng(1))
    assert _as_json(got) == _as_json(want)
    uq = next(m for m in got.metrics if m.id == "skce_uq")
    assert np.isfinite(uq.value) == (options["method"] == "features")
    if options["skce"].max_quadratic_n == 1_000 and options["method"] == "features":
        computation = next(t for t in got.tests if t.id == "skce_consistency").params[
            "computation"]
        assert computation["method"] == "features"
        assert computation["approximation"]["subsample_rows"] == 2_000
