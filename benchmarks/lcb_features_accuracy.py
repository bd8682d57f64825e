"""Accuracy and CPU of the LCB kernel sums through features (categorical factor exact per
cell, random Fourier features on the prediction and numeric covariates) against the exact
engine pass, on the ``one_region`` case of ``validation/diagnosis_cases.py`` (South
under-predicted by 0.11; covariates age, gender, region) with fixed estimation bandwidths
(age 1.0, gender pooled 10, region separated 0.25; s_p = 0.2 and 0.05).

    python benchmarks/lcb_features_accuracy.py 20000 256,1024,2048 \
        > benchmarks/results/lcb_features_accuracy.txt

Prints, per (s_p, D): the largest difference of a region's mean LCB (features - exact),
the per-row LCB root-mean-square and largest difference, and the CPU seconds of each.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "validation"))

from diagnosis_cases import one_region  # noqa: E402

from calaudit.data.dataset import CalibrationData  # noqa: E402
from calaudit.local.encoding import encode_covariates  # noqa: E402
from calaudit.local.lcb_bandwidth import _columns, estimation_gram, kernel_sums  # noqa: E402
from calaudit.local.lcb_cells import cell_kernel  # noqa: E402
from calaudit.local.lcb_features import feature_kernel_sums  # noqa: E402


def main() -> int:
    n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 20_000
    sizes = [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "256,1024,2048").split(",")]
    y, p, covs, _ = one_region(n, 1)
    data = CalibrationData.from_arrays(y, p, covariates=covs, categorical=["region", "gender"])
    enc = encode_covariates(data.covariates, standardize=True)
    pf, r = p[:, None], y - p
    bandwidths = {"region": 0.25, "gender": 10.0, "age": 1.0}
    cols = _columns(enc.blocks, [bandwidths[c.name] for c in data.covariates])
    cat = [1 + k for c, b in zip(data.covariates, enc.blocks, strict=True)
           if c.kind == "categorical" for k in range(b.start, b.stop)]
    region = np.asarray(covs["region"])
    print(f"n = {n:,}, one_region case (South +0.11), bandwidths {bandwidths}")
    for sp in (0.2, 0.05):
        t = time.process_time()
        kr, k1 = kernel_sums(pf, sp, enc.features, cols, r)
        t_exact = time.process_time() - t
        exact = kr / k1
        kernel = cell_kernel(estimation_gram(pf, sp, enc.features, cols).features, cat)
        for d in sizes:
            t = time.process_time()
            fr, f1 = feature_kernel_sums(kernel, r, d, 7)
            t_feat = time.process_time() - t
            feat = fr / f1
            group = max(abs(feat[region == g].mean() - exact[region == g].mean())
                        for g in np.unique(region))
            print(f"s_p = {sp:<5} D = {d:<5} cells = {kernel.n_cells}: max |region mean LCB "
                  f"diff| {group:.5f}; per-row LCB diff rms {np.sqrt(np.mean((feat - exact) ** 2)):.5f}"
                  f" max {np.abs(feat - exact).max():.4f}; South mean LCB (exact) "
                  f"{exact[region == 'South'].mean():.4f}; cpu exact {t_exact:.1f} s, "
                  f"features {t_feat:.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
