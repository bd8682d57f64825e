"""The scipy.special forms of the normal and chi-square functions give scipy.stats' bits,
the FFT convolution gives scipy.signal.fftconvolve's, and a default audit never imports
scipy.stats (its 0.75 s import was a twentieth of the exact local test's time)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import signal, stats

from calaudit.metrics.smooth_ece import convolve_rows_valid
from calaudit.numerics import distributions
from tests.conftest import ROOT, SAMPLE

POINTS = np.concatenate([np.linspace(-40.0, 40.0, 8001),
                         [0.0, -0.0, 1e-300, -1e-300, np.inf, -np.inf, np.nan]])
LEVELS = np.concatenate([np.linspace(0.0, 1.0, 4001), [1e-300, 1e-17, 1 - 1e-16, 0.975]])


@pytest.mark.parametrize(("ours", "theirs", "grid"), [
    (distributions.norm_cdf, stats.norm.cdf, POINTS),
    (distributions.norm_sf, stats.norm.sf, POINTS),
    (distributions.norm_pdf, stats.norm.pdf, POINTS),
    (distributions.norm_ppf, stats.norm.ppf, LEVELS),
])
def test_normal_functions_are_scipy_stats_bits(ours, theirs, grid):
    assert np.array_equal(ours(grid), theirs(grid), equal_nan=True)
    scalars = [ours(float(v)) for v in grid[::97]]
    assert all(isinstance(v, np.float64) for v in scalars)
    assert np.array_equal(scalars, [theirs(float(v)) for v in grid[::97]], equal_nan=True)


@pytest.mark.parametrize("df", [1, 2, 3, 7, 8, 13, 50, 400])
def test_chi2_sf_is_scipy_stats_bits(df):
    for x in np.concatenate([np.linspace(0.0, 600.0, 1201), [1e-300, 0.0, np.inf]]):
        assert distributions.chi2_sf(float(x), df) == float(stats.chi2.sf(x, df))
    assert np.isnan(distributions.chi2_sf(float("nan"), df))


@pytest.mark.parametrize("df", [1.0, 2.5, 29.3, 400.0])
def test_t_ppf_is_scipy_stats_bits(df):
    for q in (0.5, 0.9, 0.975, 0.99874, 0.9999):
        assert distributions.t_ppf(q, df) == float(stats.t.ppf(q, df))


@pytest.mark.parametrize("size", [2, 3, 64, 1000, 1001, 1537, 3001])
@pytest.mark.parametrize("rows", [1, 5])
def test_convolve_rows_valid_is_fftconvolve(size, rows):
    rng = np.random.default_rng(size * 10 + rows)
    values = rng.random((rows, 3 * size - 2))
    kernel = rng.normal(size=size)
    expected = signal.fftconvolve(values, kernel[None, :], mode="valid", axes=1)
    got = convolve_rows_valid(values, kernel)
    assert got.shape == expected.shape and np.array_equal(got, expected)


@pytest.mark.slow
def test_default_audit_does_not_import_scipy_stats(tmp_path):
    probe = ("import runpy, sys\n"
             "sys.argv = ['calaudit', 'test', sys.argv[1], '--covariates', 'age,race',"
             " '--json', 'r.json', '--exit-zero']\n"
             "try:\n    runpy.run_module('calaudit', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print(sorted(m for m in ('scipy.stats', 'scipy.signal') if m in sys.modules))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-c", probe, str(SAMPLE / "credit_default.csv")],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert (tmp_path / "r.json").exists(), done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
