"""Conformance of calaudit with CalibrationErrors.jl / CalibrationTests.jl on CIFAR-10.

Command (from the repository root; about 10 minutes, mostly the dense reference):

    nice -n 10 python validation/cifar10_conformance.py > validation/cifar10_conformance.txt

Data: ``../shared/datasets/cifar10`` (14 networks, softmax outputs, no header; labels
1-based). Skipped cleanly when the directory is absent.

For every network it computes, with calaudit's fast code (tiled pairwise engine, exact
tiled median):

* the bandwidth: median TV distance over the full 10,000 x 10,000 matrix (diagonal
  included), kernel ``exp(-TV / median)``;
* ``SKCE_b``, ``SKCE_uq``, ``SKCE_ul``; canonical ECE with 10 uniform bins per dimension;
* the distribution-free p-values of the three estimators and the linear asymptotic p-value.

and compares them with

1. an independent slow implementation with dense float64 n x n matrices (numpy broadcasting
   loops, ``numpy.median``, explicit sums, a Python dictionary of grid cells): must agree
   to 1e-12 relative;
2. the values published by the paper's reference implementation (CalibrationPaper
   repository, ``experiments/data/PyTorch-CIFAR10/errors.csv`` and ``pvalues.csv`` at
   commit 22096b3695a61162570042519617f82fb0a9afd5, computed with CalibrationErrors.jl /
   CalibrationTests.jl): must agree to 1e-9 relative.

Distribution-free p-values of the unbiased estimators are compared in the reference's
convention (the bound formula applied to negative estimates too); calaudit's default
returns 1 for a negative estimate (the bound only holds for positive ones) and both are
printed. The published quadratic asymptotic p-values (bootstrap, Julia RNG) are all 0.0;
calaudit's are printed for information (not comparable draw by draw).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from calaudit.inference.skce_tests import (
    bound_pvalue_biased,
    bound_pvalue_unbiased,
    linear_asymptotic_test,
)
from calaudit.metrics.ece_variants import canonical_ece
from calaudit.metrics.skce import (
    block_terms,
    choose_kernel,
    quadratic_terms,
    residual_gram,
)

DATA = Path(__file__).resolve().parents[1] / ".." / ".." / "shared" / "datasets" / "cifar10"
DATA = Path("/work/shared/datasets/cifar10") if not DATA.exists() else DATA
MODELS = ["densenet121", "densenet161", "densenet169", "googlenet", "inception_v3",
          "mobilenet_v2", "resnet_orig", "resnet18", "resnet34", "resnet50",
          "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn"]

# Published by CalibrationPaper (errors.csv): ECE_uniform, SKCEb_median, SKCEuq_median,
# SKCEul_median.
PUBLISHED_ERRORS = {
    "densenet121": (
        0.06607267260685921, 0.00014200255937238076,
        0.00013014214272447108, -0.00034300214660923725),
    "densenet161": (
        0.0641599504949732, 0.00014272947220681024,
        0.00013149945349834303, 0.00011244829379661574),
    "densenet169": (
        0.06496751907840302, 0.0001820865261049142,
        0.00017015299185834813, -0.0002321532245585983),
    "googlenet": (
        0.0701184185770028, 2.7592939340394272e-5,
        1.6866938444902392e-5, -0.00040512499082590156),
    "inception_v3": (
        0.06622328174328834, 0.00012210851834491162,
        0.00011106783248136444, 2.2563241369920003e-5),
    "mobilenet_v2": (
        0.08683923462654226, 0.00020640480253506248,
        0.00019108966621409577, -4.487736692275322e-5),
    "resnet_orig": (
        0.09817285190958805, 0.0004270270957092768,
        0.00040901304129217786, 0.0004082206858650098),
    "resnet18": (
        0.07488154767161395, 0.00027614450993714907,
        0.0002625240589747678, 0.0003565449804289092),
    "resnet34": (
        0.079810632660301, 0.0003447239696608814,
        0.0003300210997363, 0.0004722063151919636),
    "resnet50": (
        0.0748439824936457, 0.00022796536255913043,
        0.0002146444747296936, 7.618028553945839e-5),
    "vgg11_bn": (
        0.0828966903027505, 0.00031484662492605033,
        0.00029982056999041366, -0.00015049732876388572),
    "vgg13_bn": (
        0.06477891304561932, 0.00017685929144856566,
        0.0001654215646757057, -0.00021413018196180403),
    "vgg16_bn": (
        0.06611851748458264, 0.00027398024048114596,
        0.00026163310440870455, 0.0003218068683073966),
    "vgg19_bn": (
        0.06025929364237089, 0.0002377752361265794,
        0.0002266608348340924, 0.00012673337303486124),
}
# Published (pvalues.csv): SKCEb/uq/ul distribution-free, SKCEul asymptotic.
PUBLISHED_PVALUES = {
    "densenet121": (1.0, 0.9999894144452068, 0.9999264711580163, 0.8392336627764564),
    "densenet161": (1.0, 0.9999891924919826, 0.9999920971444917, 0.38098779853555953),
    "densenet169": (1.0, 0.999981905138315, 0.9999663161175191, 0.7613732353394781),
    "googlenet": (1.0, 0.999999822191508, 0.9998974263496668, 0.9004923987633002),
    "inception_v3": (1.0, 0.9999922899900897, 0.9999996818126374, 0.4618998124171071),
    "mobilenet_v2": (
        0.9998738282170359, 0.9999771782225871,
        0.9999987412645035, 0.5393426329629679),
    "resnet_orig": (0.899103196672312, 0.9998954481734563, 0.9998958528434616, 0.26156146626936416),
    "resnet18": (0.9847969855715755, 0.9999569266267215, 0.9999205504543641, 0.1834527533092085),
    "resnet34": (0.952235509931523, 0.9999319311128724, 0.9998606479578309, 0.22437615305005168),
    "resnet50": (0.9977159258618147, 0.9999712052579941, 0.9999963728591376, 0.43999361916389346),
    "vgg11_bn": (0.9680881902989289, 0.9999438188443519, 0.9999858441964662, 0.6590293015066628),
    "vgg13_bn": (1.0, 0.9999828974624627, 0.9999713430763506, 0.7485174457854725),
    "vgg16_bn": (0.9855821322889947, 0.9999572184893284, 0.9999352773067978, 0.23457555968031632),
    "vgg19_bn": (0.9959262181676004, 0.9999678910567233, 0.9999899617079835, 0.36204173030094344),
}
NAMES = ["median_tv", "ece_canonical", "skce_b", "skce_uq", "skce_ul", "p_b_bound",
         "p_uq_bound", "p_ul_bound", "p_ul_asymptotic"]


def load(model: str) -> tuple[np.ndarray, np.ndarray]:
    probs = np.loadtxt(DATA / f"{model}.csv", delimiter=",", dtype=np.float64)
    labels = np.loadtxt(DATA / "labels.csv", dtype=np.int64) - 1
    return probs, labels


def fast(probs: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """calaudit's production code path."""
    n = labels.size
    residuals = -probs.copy()
    residuals[np.arange(n), labels] += 1.0
    choice = choose_kernel(probs, "exponential")
    terms = quadratic_terms(residual_gram(choice.kernel, probs, residuals))
    pairs = block_terms(choice.kernel, probs, residuals, 2)
    linear = linear_asymptotic_test(pairs)
    ref = "calibrationtests"
    out = {
        "median_tv": choice.bandwidth,
        "ece_canonical": canonical_ece(labels, probs, n_bins=10),
        "skce_b": terms.biased, "skce_uq": terms.unbiased, "skce_ul": linear.estimate,
        "p_b_bound": bound_pvalue_biased(terms.biased, n),
        "p_uq_bound": bound_pvalue_unbiased(terms.unbiased, n, convention=ref),
        "p_ul_bound": bound_pvalue_unbiased(linear.estimate, n, convention=ref),
        "p_ul_asymptotic": linear.p_value,
        "p_uq_bound_one_sided": bound_pvalue_unbiased(terms.unbiased, n),
        "p_ul_bound_one_sided": bound_pvalue_unbiased(linear.estimate, n),
    }
    return {key: float(value) for key, value in out.items()}


def slow(probs: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Independent dense reference: full n x n float64 matrices, formulas as in the paper."""
    import math

    from scipy.stats import norm

    n, m = probs.shape
    dist = np.zeros((n, n))
    for k in range(m):
        dist += np.abs(probs[:, k][:, None] - probs[:, k][None, :])
    dist *= 0.5
    median = float(np.median(dist))
    kernel = np.exp(-dist / median)
    del dist
    onehot = np.eye(m)[labels]
    res = onehot - probs
    h = kernel * (res @ res.T)
    del kernel
    total, trace = h.sum(), np.trace(h)
    pairs = np.array([h[2 * i, 2 * i + 1] for i in range(n // 2)])
    del h
    skce_b, skce_uq, skce_ul = total / n ** 2, (total - trace) / (n * (n - 1)), pairs.mean()
    sd = math.sqrt(sum((x - skce_ul) ** 2 for x in pairs) / pairs.size)
    z = skce_ul / (sd / math.sqrt(pairs.size))
    cells: dict[tuple[int, ...], list[int]] = {}
    for i in range(n):
        key = tuple(1 if p == 0 else math.ceil(10 * p) for p in probs[i])
        cells.setdefault(key, []).append(i)
    ece = 0.0
    for rows in cells.values():
        gap = probs[rows].mean(axis=0) - onehot[rows].mean(axis=0)
        ece += len(rows) / n * 0.5 * np.abs(gap).sum()
    half = n // 2
    s = max(0.0, math.sqrt(n * skce_b / 2) - 1)
    out = {
        "median_tv": median, "ece_canonical": ece, "skce_b": skce_b, "skce_uq": skce_uq,
        "skce_ul": skce_ul, "p_b_bound": math.exp(-s * s / 2),
        "p_uq_bound": math.exp(-half * skce_uq ** 2 / 8),
        "p_ul_bound": math.exp(-half * skce_ul ** 2 / 8), "p_ul_asymptotic": norm.sf(z),
    }
    return {key: float(value) for key, value in out.items()}


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)


def on_grid(probs: np.ndarray) -> int:
    """Entries p with 10 p an integer (where ceil and floor bin conventions can differ)."""
    scaled = probs * 10
    return int(np.count_nonzero(scaled == np.round(scaled)))


def main() -> int:
    if not (DATA / "labels.csv").exists():
        print(f"skipped: {DATA} not found")
        return 0
    worst_slow, worst_pub = 0.0, 0.0
    np.set_printoptions(precision=17)
    for model in MODELS:
        probs, labels = load(model)
        ours, ref = fast(probs, labels), slow(probs, labels)
        pub = dict(zip(["ece_canonical", "skce_b", "skce_uq", "skce_ul"],
                       PUBLISHED_ERRORS[model], strict=True))
        pub.update(zip(["p_b_bound", "p_uq_bound", "p_ul_bound", "p_ul_asymptotic"],
                       PUBLISHED_PVALUES[model], strict=True))
        print(f"== {model}  (entries on a 1/10 grid point: {on_grid(probs)}; "
              f"max |row sum - 1| = {np.abs(probs.sum(axis=1) - 1).max():.2e})")
        print(f"   {'quantity':16s} {'calaudit':>24s} {'dense reference':>24s} {'rel':>9s} "
              f"{'published':>24s} {'rel':>9s}")
        for name in NAMES:
            r_slow = rel(ours[name], ref[name])
            worst_slow = max(worst_slow, r_slow)
            line = f"   {name:16s} {ours[name]!r:>24} {ref[name]!r:>24} {r_slow:9.1e}"
            if name in pub:
                r_pub = rel(ours[name], pub[name])
                worst_pub = max(worst_pub, r_pub)
                line += f" {pub[name]!r:>24} {r_pub:9.1e}"
            print(line)
        print(f"   one-sided bound p (calaudit default): uq {ours['p_uq_bound_one_sided']!r}, "
              f"ul {ours['p_ul_bound_one_sided']!r}")
        sys.stdout.flush()
    print(f"\nlargest relative difference vs dense reference: {worst_slow:.2e} (target 1e-12)")
    print(f"largest relative difference vs published values: {worst_pub:.2e} (target 1e-9)")
    ok = worst_slow <= 1e-12 and worst_pub <= 1e-9
    print("CONFORMANCE", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
