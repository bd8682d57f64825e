"""The fused Gaussian kernel fill (:mod:`calaudit.numerics.gaussian_fill`) against
``np.exp(-cdist(a, b, "sqeuclidean"))`` and an extended-precision reference: its tables
exactly, its error bound, the edge cases, strides, and bits that do not depend on the
chunking of a block or on the threads that fill it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from calaudit.local import kernel
from calaudit.local.kernel import GaussianProductGram
from calaudit.numerics.gaussian_fill import N, gaussian_block, gaussian_fill, tables
from tests.conftest import ROOT, SAMPLE

EXTENDED = np.finfo(np.longdouble).nmant >= 63  # x87 80-bit long double


def reference(a, b):
    return np.exp(-cdist(a, b, "sqeuclidean"))


def ulps(got, expected):
    """``|got - expected|`` in units of the double spacing at ``expected``."""
    spacing = np.spacing(np.asarray(expected, dtype=np.float64))
    return np.abs(np.asarray(got, np.longdouble) - expected) / spacing


def test_table_heads_are_correctly_rounded_powers():
    """``H_j`` is the double nearest ``2^(j/N)``: ``(H - u/2)^N < 2^j < (H + u/2)^N``
    (exact rational arithmetic), and ``H_j (1 + T_j)`` is ``2^(j/N)`` to ``2^-100``."""
    tail, sbits = tables()
    for j in range(N):
        bits = int(sbits[j]) + (j << 45)
        head = np.array([bits], dtype=np.int64).view(np.float64)[0]
        h, half = Fraction(float(head)), Fraction(float(np.spacing(head))) / 2
        assert (h - half) ** N < 2 ** j < (h + half) ** N, j
        assert abs(tail[j]) <= float(half / h)
        corrected = h * (1 + Fraction(float(tail[j])))
        assert abs(corrected ** N / 2 ** j - 1) < Fraction(N, 2 ** 100), j


@pytest.mark.parametrize("dims", [1, 2, 3, 5, 8])
def test_within_one_ulp_of_numpy_and_half_an_ulp_of_the_truth(dims):
    rng = np.random.default_rng(dims)
    scale = np.sqrt(np.geomspace(1e-6, 600.0 / dims, 600))[:, None]  # |a - b|^2 to ~700
    a = rng.normal(size=(600, dims)) * scale
    b = rng.normal(size=(700, dims))
    got = gaussian_block(a, b)
    distances = cdist(a, b, "sqeuclidean")
    assert distances.max() > 300.0
    assert ulps(got, reference(a, b)).max() <= 1.0
    if EXTENDED:
        assert ulps(got, np.exp(-distances.astype(np.longdouble))).max() <= 0.52


def test_distances_are_cdists_bits():
    """Exactly 1 (a zero distance) and ``exp`` of the same squared distances: where
    ``np.exp`` of the negated distance is exactly representable, the same value."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=(40, 4))
    b = np.vstack([a[:7], rng.normal(size=(30, 4))])
    got = gaussian_block(a, b)
    assert np.all(got[np.arange(7), np.arange(7)] == 1.0)
    assert np.all(gaussian_block(np.zeros((3, 2)), np.zeros((5, 2))) == 1.0)
    # integer distances: exp(-k) for small k against the long-double truth
    ints = np.arange(0.0, 40.0)[:, None]
    values = gaussian_block(ints, np.zeros((1, 1)))[:, 0]
    if EXTENDED:
        assert ulps(values, np.exp(-(ints[:, 0] ** 2).astype(np.longdouble))).max() <= 0.52


def test_huge_distances_and_the_underflow_region():
    """Distances above 700 go through ``math.exp`` (the C library's, as ``np.exp``):
    the subnormal range 708-745 and exact zeros beyond, huge values and NaN."""
    s = np.concatenate([np.linspace(699.0, 760.0, 4001), [700.0, 745.1, 1e6, 1e300]])
    got = gaussian_block(np.sqrt(s)[:, None], np.zeros((1, 1)))[:, 0]
    distances = cdist(np.sqrt(s)[:, None], np.zeros((1, 1)), "sqeuclidean")[:, 0]
    above = distances > 700.0
    assert np.array_equal(got[above], np.exp(-distances[above]))
    assert ulps(got[~above], np.exp(-distances[~above])).max() <= 1.0
    assert np.all(got[distances > 746.0] == 0.0) and got[-1] == 0.0
    assert np.any((got > 0) & (got < np.finfo(np.float64).tiny))  # subnormals kept
    nan = gaussian_block(np.array([[np.nan], [1.0]]), np.array([[0.0], [np.inf]]))
    assert np.isnan(nan[0]).all() and nan[1, 0] == np.exp(-1.0) and nan[1, 1] == 0.0


@pytest.mark.parametrize(("rows", "cols", "dims"),
                         [(1, 1, 1), (1, 9, 3), (9, 1, 2), (0, 5, 2), (5, 0, 2),
                          (0, 0, 1), (3, 4, 0), (2, 1025, 2)])
def test_small_empty_and_dimensionless_blocks(rows, cols, dims):
    rng = np.random.default_rng(rows * 100 + cols)
    a, b = rng.normal(size=(rows, dims)), rng.normal(size=(cols, dims))
    got = gaussian_block(a, b)
    assert got.shape == (rows, cols)
    assert ulps(got, reference(a, b)).max(initial=0.0) <= 1.0


def test_strided_inputs_and_outputs_and_float32():
    rng = np.random.default_rng(5)
    big = rng.normal(size=(60, 8))
    a, b = big[::3, ::2], np.asfortranarray(rng.normal(size=(50, 4)))
    expected = gaussian_block(np.ascontiguousarray(a), np.ascontiguousarray(b))
    assert ulps(expected, reference(a, b)).max() <= 1.0
    out = np.full((20, 100), -1.0)
    gaussian_fill(out[:, ::2], a, b)
    assert np.array_equal(out[:, ::2], expected) and np.all(out[:, 1::2] == -1.0)
    single = gaussian_block(a, b, dtype=np.float32)
    assert single.dtype == np.float32
    assert np.array_equal(single, expected.astype(np.float32))  # rounded once


def test_bits_do_not_depend_on_chunks_or_threads(monkeypatch):
    """Every entry is computed on its own: a block filled whole, in row or column pieces
    of any size, on the kernel's thread pool or concurrently from other threads, has the
    same bits (also across the 512-column strips of the compiled loop)."""
    rng = np.random.default_rng(7)
    z = rng.normal(size=(700, 3)) * 2.0
    whole = gaussian_block(z, z)
    pieces = np.empty_like(whole)
    for rows in (slice(0, 1), slice(1, 250), slice(250, 700)):
        for cols in (slice(0, 511), slice(511, 513), slice(513, 700)):
            gaussian_fill(pieces[rows, cols], z[rows], z[cols])
    assert np.array_equal(pieces, whole)
    gram = GaussianProductGram(z)
    for chunk in (262_144, 1_000, 701, 1):
        monkeypatch.setattr(kernel, "CHUNK_ENTRIES", chunk)
        for pooled in (True, False):
            assert np.array_equal(gram.block(slice(0, 700), slice(0, 700), pooled=pooled),
                                  whole)
    with ThreadPoolExecutor(4) as pool:
        blocks = list(pool.map(lambda _: gaussian_block(z, z), range(8)))
    assert all(np.array_equal(block, whole) for block in blocks)


def test_compiled_without_fastmath_and_without_the_gil():
    """No ``fastmath`` (FMA contraction or reassociation would make the bits depend on
    the CPU); ``nogil`` so that the kernel's thread pool fills chunks in parallel."""
    from calaudit.numerics import _gaussian_jit

    for function in (_gaussian_jit.fill, _gaussian_jit._strip_jit):
        assert "fastmath" not in function.targetoptions
        assert function.targetoptions["nogil"] is True


@pytest.mark.slow
def test_read_only_package_uses_the_user_cache_or_none(tmp_path):
    """An installed copy whose directory cannot be written still works: numba caches
    under ``NUMBA_CACHE_DIR`` (else its user cache directory), and with no writable cache
    directory at all it compiles in memory. (The directories are read-only and, since
    root ignores permissions, each ``__pycache__`` or cache path is made impossible to
    create: a regular file stands where its parent directory should be.)"""
    package = tmp_path / "site"
    shutil.copytree(ROOT / "calaudit", package / "calaudit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for folder in [package / "calaudit", *(package / "calaudit").rglob("*")]:
        if folder.is_dir():
            (folder / "__pycache__").write_text("not a directory")
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    for path in [package, *package.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    cache = tmp_path / "cache"
    probe = textwrap.dedent("""
        import numpy as np, sys
        from calaudit.numerics.gaussian_fill import gaussian_block
        a = np.arange(6.0).reshape(3, 2) / 4
        print(repr(gaussian_block(a, a).sum()), sys.modules["calaudit"].__file__)
    """)
    results = []
    for cache_dir in (cache, blocker / "numba"):
        env = {**os.environ, "PYTHONPATH": str(package), "NUMBA_CACHE_DIR": str(cache_dir),
               "HOME": str(blocker), "XDG_CACHE_HOME": str(blocker / "cache")}
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=300)
        assert done.returncode == 0, done.stderr
        value, where = done.stdout.split()
        assert where.startswith(str(package))
        results.append(value)
    assert results[0] == results[1] == repr(gaussian_block(*[np.arange(6.0).reshape(3, 2)
                                                              / 4] * 2).sum())
    assert any(cache.rglob("*.nbi"))
    for path in [package, *package.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # so that pytest can remove it


@pytest.mark.slow
def test_run_without_covariates_does_not_import_numba(tmp_path):
    """numba is loaded only when a Gaussian product kernel is evaluated: a run without
    covariates (multi-class, as CIFAR-10) never imports it (and the probe does see it
    once a kernel block is filled)."""
    probe = ("import runpy, sys\n"
             "sys.argv = ['calaudit', 'test', sys.argv[1], '--json', 'r.json', '--exit-zero']\n"
             "try:\n    runpy.run_module('calaudit', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "seen = lambda: sorted({m.split('.')[0] for m in sys.modules} & {'numba', 'llvmlite'})\n"
             "print(seen())\n"
             "import numpy as np\n"
             "from calaudit.local.kernel import product_gram\n"
             "product_gram(np.zeros(3), 1.0, None, 1.0).block(slice(0, 3), slice(0, 3))\n"
             "print(seen())\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-c", probe, str(SAMPLE / "image_classifier.npz")],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert (tmp_path / "r.json").exists(), done.stderr
    assert done.stdout.strip().splitlines()[-2:] == ["[]", "['llvmlite', 'numba']"]
