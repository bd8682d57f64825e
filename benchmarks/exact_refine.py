"""CPU cost of the exact tie rule in the exact consistency tests.

Command (saved output: benchmarks/results/exact_refine.txt)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/exact_refine.py

Part 1 measures the per-entry costs of one pass of the pairwise engine that
:data:`calaudit.numerics.resampling.PASS_COST_NS` models (kernel evaluation in double and
single precision, GEMM per kernel entry and column). Part 2 runs ``skce_consistency``
(exponential-TV kernel, B = 1,000, the audit's default) and ``klce_consistency`` (Gaussian
product kernel on the prediction and two covariates, B = 500) on a binary data set of
``--n`` rows (``benchmarks/scale_power.py``, small-group alternative, delta = 0.1) three
ways, on the same label redraws:

* ``before``: the single-precision pass, then a double-precision pass over every replicate
  within the rounding bound (:func:`calaudit.numerics.resampling.refine_near`), whatever
  the share of such replicates;
* ``chosen``: the precision chosen by :func:`calaudit.numerics.resampling.pass_dtype`;
* ``float64``: one double-precision pass.

It prints the CPU seconds of this process (one BLAS thread when run as above), the
predicted share of near replicates, how many were recomputed, and checks that the three
p-values are identical (the tie rule makes them so by construction).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_power import make  # noqa: E402

import calaudit.inference.consistency as global_consistency  # noqa: E402
import calaudit.local.resampling as local_resampling  # noqa: E402
from calaudit.inference.consistency import skce_consistency_test  # noqa: E402
from calaudit.local.bandwidth import choose_bandwidth  # noqa: E402
from calaudit.local.encoding import encode_covariates  # noqa: E402
from calaudit.local.kernel import product_gram  # noqa: E402
from calaudit.local.klce import klce2, prediction_features, residuals  # noqa: E402
from calaudit.metrics.skce import choose_kernel, quadratic_terms, residual_gram  # noqa: E402
from calaudit.numerics import resampling  # noqa: E402
from calaudit.numerics.grams import cached  # noqa: E402


def per_entry_costs() -> None:
    from scipy.spatial.distance import cdist

    rng = np.random.default_rng(0)
    a, b = rng.random((1024, 3)), rng.random((3906, 3))
    entries = a.shape[0] * b.shape[0]

    def cpu(fn, reps=5) -> float:
        fn()
        start = time.process_time()
        for _ in range(reps):
            fn()
        return (time.process_time() - start) / reps / entries * 1e9

    def kernel(dtype):
        d = cdist(a, b, "sqeuclidean").astype(dtype, copy=False)
        return np.exp(-d)

    cols = 580
    out = {"kernel64": cpu(lambda: kernel(np.float64)), "kernel32": cpu(lambda: kernel(
        np.float32))}
    for name, dtype in (("gemm64", np.float64), ("gemm32", np.float32)):
        k = rng.random((1024, 3906)).astype(dtype)
        z = rng.random((3906, cols)).astype(dtype)
        out[name] = cpu(lambda k=k, z=z: k @ z) / cols
    print("per-entry CPU ns (measured now | model PASS_COST_NS): " + ", ".join(
        f"{k} {v:.3f} | {resampling.PASS_COST_NS[k]}" for k, v in out.items()))


class Spy:
    """Counts the replicates :func:`refine_near` recomputes and the predicted shares."""

    def __init__(self) -> None:
        self.refined, self.shares = 0, []
        self._refine, self._predict = resampling.refine_near, resampling.predicted_near_share

    def refine(self, values, z, observed, factor, tie, exact):
        band = 2.0 * (factor * resampling.column_mass(z) ** 2 + tie)
        self.refined += int(np.count_nonzero(np.abs(values - observed) <= band))
        self._refine(values, z, observed, factor, tie, exact)

    def predict(self, *args, **kwargs):
        share = self._predict(*args, **kwargs)
        self.shares.append(share)
        return share


def run(label: str, mode: str, fn) -> float:
    spy = Spy()
    keep = (global_consistency.pass_dtype, local_resampling.pass_dtype)
    forced = {"before": lambda gram, dtype, *a: dtype,
              "float64": lambda gram, dtype, *a: np.float64}.get(mode)
    for module in (global_consistency, local_resampling):
        module.refine_near = spy.refine
        if forced is not None:
            module.pass_dtype = forced
    resampling.predicted_near_share = spy.predict
    try:
        start = time.process_time()
        p = fn()
        cpu = time.process_time() - start
    finally:
        for module, original in zip((global_consistency, local_resampling), keep,
                                    strict=True):
            module.pass_dtype = original
            module.refine_near = spy._refine
        resampling.predicted_near_share = spy._predict
    share = f"{spy.shares[0]:.3f}" if spy.shares else "-"
    print(f"  {label:<17} {mode:<8} cpu {cpu:6.1f} s   p = {p:.6f}   predicted near share "
          f"{share:>5}   recomputed in float64 {spy.refined}")
    return p


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20_000)
    args = parser.parse_args()
    print(f"# load average {os.getloadavg()}, cpus {os.cpu_count()}, OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}")
    per_entry_costs()
    rng = np.random.default_rng([args.n, 1, 3, 0])
    data = make(rng, args.n, "small_group", 0.1)
    choice = choose_kernel(data.y_proba, "exponential", None, exact_max_n=args.n, rng=rng)
    observed = quadratic_terms(residual_gram(choice.kernel, data.y_proba,
                                             data.residuals)).unbiased
    gram = cached(choice.kernel.on(data.y_proba))
    x = prediction_features(data.y_proba)
    enc = encode_covariates(data.covariates, standardize=True)
    pb = choose_bandwidth(x, None, rng, 2000)
    cb = choose_bandwidth(enc.features, None, rng, 2000, enc.blocks)
    local = product_gram(x, pb.gamma, enc.features, cb.gamma)
    r = residuals(data.y_true, data.y_proba)
    statistic = klce2(local, r)
    print(f"binary, n = {args.n:,} (small group, delta 0.1); CPU of the resampling pass(es) "
          f"only (the observed statistics are computed once, untimed)")
    for label, fn in (
        ("skce_consistency", lambda: skce_consistency_test(
            gram, data.y_proba, observed, np.random.default_rng(7), 1000,
            dtype=np.float32).p_value),
        ("klce_consistency", lambda: local_resampling.consistency_test(
            local, r, data.y_proba[:, 1].copy(), np.random.default_rng(7), 500,
            statistic=statistic, dtype=np.float32).p_value),
    ):
        ps = {run(label, mode, fn) for mode in ("before", "chosen", "float64")}
        print(f"  {label}: identical p-values in the three modes: {len(ps) == 1}")
    print(f"# load average at end {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
