"""``local.lcb.summary`` computed where the values are (:mod:`calaudit.local.lcb_summary`):
the floats of :func:`calaudit.local.lcb.summarize` on the whole array."""

from __future__ import annotations

import json

import numpy as np
import pytest

from calaudit import scale
from calaudit.local.lcb import QUANTILES, summarize
from calaudit.local.lcb_summary import kept_summary
from calaudit.numerics.pairwise_sums import pairwise_sums, sum_plan
from calaudit.scale import ArrayRows, SerialExecutor


@pytest.mark.parametrize("task_rows", [4_096, scale.TASK_ROWS])
@pytest.mark.parametrize("n", [1, 2, 9, 130, 4_099, scale.TASK_ROWS + 1,
                               3 * scale.TASK_ROWS + 517])
def test_the_summary_is_the_whole_arrays(n, task_rows):
    rng = np.random.default_rng(n)
    values = rng.standard_normal(n) * 1e3 + rng.standard_normal(n) * 1e-3
    values[: n // 3] = np.round(values[: n // 3])  # ties
    got = kept_summary(ArrayRows({"lcb": values}), n, QUANTILES, task_rows=task_rows)
    assert json.dumps(got) == json.dumps(summarize(values))


def test_the_sums_follow_numpys_pairwise_tree():
    n = 2 * scale.TASK_ROWS + 3_001
    values = np.random.default_rng(1).standard_normal(n) * 1e8
    inside, crossing = sum_plan(n, scale.task_ranges(n))
    assert crossing and all(size <= 128 for _, size in crossing)
    with scale.using(SerialExecutor()):
        total, absolute = pairwise_sums(ArrayRows({"v": values}), "v", n,
                                        task_rows=scale.TASK_ROWS)
    assert (total, absolute) == (np.sum(values), np.sum(np.abs(values)))

