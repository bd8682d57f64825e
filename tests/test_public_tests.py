"""calaudit.stats: one function per test, the numbers of the command line."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from calaudit.cli.app import app
from calaudit.stats import (
    TestResult,
    ece_test,
    hosmer_lemeshow_test,
    klce_test,
    local_test,
    skce_test,
    spiegelhalter_test,
)
from tests.conftest import SAMPLE


@pytest.fixture(scope="module")
def sample_rows():
    """The first 600 rows of the sample (biased by group) and the CLI's JSON for them."""
    return pd.read_csv(SAMPLE / "credit_default.csv").iloc[:600].reset_index(drop=True)


@pytest.fixture(scope="module")
def cli_result(sample_rows, tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "rows.csv"
    sample_rows.to_csv(path, index=False)
    out = CliRunner().invoke(app, [
        "test", str(path), "--covariates", "age,race", "--seed", "7", "--json", "-"])
    assert out.exit_code in (0, 1), out.output
    return json.loads(out.stdout)


def cli_test(result, test_id):
    return next(t for t in result["tests"] if t["id"] == test_id)


def test_same_numbers_as_the_cli(sample_rows, cli_result):
    y, p = sample_rows["label"].to_numpy(), sample_rows["prob"].to_numpy()
    cases = [
        (local_test(y, p, sample_rows[["age", "race"]], random_state=7), "local_consistency"),
        (skce_test(y, p, rng=7), "skce_consistency"),
        (skce_test(y, p, method="uq_asymptotic", random_state=7), "skce_uq_asymptotic"),
        (skce_test(y, p, method="ul_asymptotic", random_state=7), "skce_ul_asymptotic"),
        (ece_test(y, p, random_state=7), "ece_consistency"),
        (spiegelhalter_test(y, p), "spiegelhalter"),
    ]
    for ours, test_id in cases:
        theirs = cli_test(cli_result, test_id)
        assert ours.id == test_id
        assert ours.statistic == pytest.approx(theirs["statistic"], rel=1e-12, abs=1e-15)
        assert ours.pvalue == pytest.approx(theirs["p_value"], rel=1e-12)
        if theirs["null_distribution"] is not None:
            np.testing.assert_allclose(ours.null_distribution, theirs["null_distribution"],
                                       rtol=1e-6)


def test_seed_changes_the_null_and_aliases_agree():
    rng = np.random.default_rng(3)
    p = rng.uniform(0.05, 0.95, 300)
    y = (rng.uniform(size=300) < p).astype(int)
    a = ece_test(y, p, n_resamples=100, random_state=1)
    assert np.array_equal(a.null_distribution,
                          ece_test(y, p, n_resamples=100, rng=1).null_distribution)
    assert not np.array_equal(a.null_distribution,
                              ece_test(y, p, n_resamples=100, random_state=2).null_distribution)
    with pytest.raises(ValueError, match="once"):
        ece_test(y, p, random_state=1, rng=1)


def test_result_object_is_scipy_like():
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.ones(3), 200)
    y = np.array([rng.choice(3, p=row) for row in p])
    result = skce_test(y, p, n_resamples=50, random_state=0)
    assert isinstance(result, TestResult)
    statistic, pvalue = result
    assert (statistic, pvalue) == (result.statistic, result.p_value)
    assert 0 < pvalue <= 1 and result.null_distribution.shape == (50,)
    assert "consistency" in result.method and "null_distribution=<50" in repr(result)


def test_local_test_methods_and_bad_input(sample_rows):
    y, p = sample_rows["label"], sample_rows["prob"]
    result = klce_test(y, p, {"age": sample_rows["age"], "race": sample_rows["race"]},
                       method="bootstrap", n_resamples=100, random_state=0)
    assert result.id == "klce_bootstrap" and 0 < result.pvalue <= 1
    assert result.null_distribution.shape == (100,) and "Algorithm 1" in result.method
    with pytest.raises(ValueError, match="method"):
        klce_test(y, p, sample_rows[["age"]], method="exact")
    with pytest.raises(ValueError, match="covariate"):
        klce_test(y, p, {})


def test_small_samples_give_nan_with_a_reason():
    result = klce_test([0, 1, 1, 0, 1], [0.2, 0.6, 0.7, 0.4, 0.5], {"x": [1, 2, 3, 4, 5]})
    assert math.isnan(result.pvalue) and "too small" in result.message


def test_hosmer_lemeshow_is_binary_only():
    rng = np.random.default_rng(5)
    p = rng.uniform(0.05, 0.95, 400)
    y = (rng.uniform(size=400) < p).astype(int)
    assert 0 < hosmer_lemeshow_test(y, p, n_groups=8).pvalue <= 1
    with pytest.raises(ValueError, match="binary"):
        hosmer_lemeshow_test([0, 1, 2], np.eye(3) * 0.8 + 0.2 / 3)
