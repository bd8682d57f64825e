"""Coverage of the weighted LCB's pointwise intervals (:mod:`calaudit.local.weighted_lcb`).

A finite population of 6,000 units with a prediction ``p ~ U(0.1, 0.8)`` (rounded to 0.05)
and a covariate ``x`` (rounded to 0.25 from ``N(0, 1)``), miscalibrated where ``x > 0.5``:
``logit P(y = 1) = logit p + 0.8 1{x > 0.5}``. The weighted LCB estimates the population's
smoothed bias ``M(e) = sum_u K(e, u) (P(y_u = 1) - p_u) / sum_u K(e, u)`` at 25 fixed
evaluation points ``e`` (a 5 x 5 grid of ``(p, x)``; rows of weight 0 appended to the
sample, so the library computes the estimate and its standard error there), with fixed
bandwidths 0.15 (prediction) and 0.5 (covariate). Per replicate the labels are redrawn
and the sample taken:

* ``design``: Poisson sampling with inclusion probability ``pi`` proportional to
  ``exp(z / 2) (2 if x > 0)``, ``z ~ N(0, 1)`` fixed (about 1,500 rows), weight ``1 / pi``;
* ``negatives 0.2``: every positive unit and each negative with probability 0.2, weight
  ``1 / 0.2`` for a negative (about 3,000 rows);
* ``frequency``: the census aggregated into rows of identical units (same ``p``, ``x``
  and label) weighted by their count.

Printed per case: the share of the 95 % intervals ``LCB -/+ 1.96 se`` that contain
``M(e)`` over replicates, averaged over the points, and its range over the points.

Then the per-group curve against ``x`` (:class:`calaudit.local.lcb_estimation.
LcbEstimation` on each sample, the same bandwidths on the weighted z-scores of ``x``):
the share of its 95 % bands that contain the population curve ``sum_u g_u(t) M(u) /
sum_u g_u(t)`` at its grid points (``g`` the sample's Silverman kernel, ``M(u)`` the
population's smoothed bias at unit ``u`` under the sample's scaling of ``x``), over
``CURVE_REPLICATES`` samples.

Command: ``nice -n 10 python validation/weights_lcb.py > validation/results/weights_lcb.txt``
"""

from __future__ import annotations

import time

import numpy as np
from scipy import special

from calaudit.data.weights import SampleWeights
from calaudit.local.lcb import row_products
from calaudit.local.lcb_bandwidth import estimation_gram, kernel_sums
from calaudit.local.weighted_lcb import LcbWeights

REPLICATES = 400
CURVE_REPLICATES = 200
UNITS = 6_000
PROB_BW, COV_BW = 0.15, 0.5


def population(rng: np.random.Generator) -> dict[str, np.ndarray]:
    p = np.round(rng.uniform(0.1, 0.8, UNITS) * 20) / 20
    x = np.round(rng.normal(size=UNITS) * 4) / 4
    truth = special.expit(special.logit(p) + 0.8 * (x > 0.5))
    grid_p, grid_x = np.meshgrid(np.linspace(0.2, 0.7, 5), np.linspace(-1.0, 1.5, 5))
    return {"p": p, "x": x, "truth": truth, "z": rng.normal(size=UNITS),
            "eval_p": grid_p.ravel(), "eval_x": grid_x.ravel()}


def estimate(p, x, r, w, eval_p, eval_x, weights: LcbWeights | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
    """LCB and its standard error at the evaluation points, appended as rows of weight 0
    (the library's kernel sums and row products)."""
    k = eval_p.size
    prob = np.concatenate([p, eval_p])[:, None]
    cov = np.concatenate([x, eval_x])[:, None]
    r = np.concatenate([r, np.zeros(k)])
    w = np.concatenate([w, np.zeros(k)])
    numerator, mass = kernel_sums(prob, PROB_BW, cov, np.array([COV_BW]), r, w)
    if weights is None:
        return numerator[-k:] / mass[-k:], np.zeros(k)
    meat = np.concatenate([weights.m, np.zeros(k)])
    gram = estimation_gram(prob, PROB_BW, cov, np.array([COV_BW]))
    rows = np.arange(r.size - k, r.size)
    centre = None if weights.frequency else numerator[-k:] / mass[-k:]
    at = row_products(gram.features, rows, r, mass, np.zeros((r.size, 0)), meat=meat,
                      centre=centre)
    return numerator[-k:] / mass[-k:], at.se


def sample(pop: dict, case: str, rng: np.random.Generator):
    """``(p, x, y, SampleWeights)`` of one replicate's sample."""
    y = (rng.random(UNITS) < pop["truth"]).astype(np.float64)
    p, x = pop["p"], pop["x"]
    if case == "design":
        size = np.exp(pop["z"] / 2) * np.where(x > 0, 2.0, 1.0)
        pi = np.minimum(1.0, 1500 * size / size.sum())
        keep = rng.random(UNITS) < pi
        return p[keep], x[keep], y[keep], SampleWeights(1.0 / pi[keep], "design")
    if case == "negatives 0.2":
        keep = (y > 0) | (rng.random(UNITS) < 0.2)
        return p[keep], x[keep], y[keep], SampleWeights(np.ones(keep.sum()), "frequency",
                                                        np.full(keep.sum(), 0.2))
    keys, counts = np.unique(np.column_stack([p, x, y]), axis=0, return_counts=True)
    return keys[:, 0], keys[:, 1], keys[:, 2], SampleWeights(counts.astype(np.float64))


def run(pop: dict, case: str, rng: np.random.Generator, truth: np.ndarray) -> str:
    covered = np.zeros(truth.size)
    rows = 0
    for _ in range(REPLICATES):
        p, x, y, weights = sample(pop, case, rng)
        lcb_weights = LcbWeights.of(weights, y)
        value, se = estimate(p, x, y - p, lcb_weights.w, pop["eval_p"], pop["eval_x"],
                             lcb_weights)
        covered += np.abs(value - truth) <= 1.959964 * se
        rows += y.size
    share = covered / REPLICATES
    return (f"{case:<14} rows {rows / REPLICATES:>6.0f}  coverage mean {share.mean():.3f}  "
            f"range [{share.min():.3f}, {share.max():.3f}] over {truth.size} points")


def curve_coverage(pop: dict, case: str, rng: np.random.Generator) -> str:
    """Coverage of the weighted curve's band (module docstring)."""
    import pandas as pd

    from calaudit import AuditConfig, CalibrationData
    from calaudit.audit.config import LocalConfig
    from calaudit.local.encoding import encode_covariates
    from calaudit.local.lcb_estimation import LcbEstimation

    local = LocalConfig(lcb_prob_bandwidth=PROB_BW, lcb_cov_bandwidth=COV_BW, max_points=400)
    covered, points = 0, 0
    for _ in range(CURVE_REPLICATES):
        p, x, y, weights = sample(pop, case, rng)
        data = CalibrationData.from_arrays(
            y.astype(np.int64), p, covariates=pd.DataFrame({"x": x}),
            sample_weight=weights.design,
            weight_kind=weights.kind, negative_rate=None if weights.negative_rate is None
            else float(weights.negative_rate[0]))
        encoded = encode_covariates(data.covariates, standardize=True, lazy=True,
                                    weights=weights.design)
        setup = type("Setup", (), {"data": data, "local": local, "config": AuditConfig(),
                                   "streams": {"points": rng, "lcb": rng},
                                   "encoded": encoded, "proba": p})()
        lcb_weights = LcbWeights.of(weights, y)
        _, section = LcbEstimation(setup, lcb_weights).run(y - p, p, {})
        curve, = section["curves"][0]["groups"]
        z = np.asarray(encoded.features[np.arange(2)], dtype=np.float64).ravel()
        slope = (z[1] - z[0]) / (x[1] - x[0]) if x[1] != x[0] else None
        if slope is None:
            continue
        scaled = z[0] + slope * (pop["x"] - x[0])
        smooth, _ = estimate(pop["p"], scaled, pop["truth"] - pop["p"], np.ones(UNITS),
                             pop["p"], scaled)
        grid, h = np.asarray(curve["x"]), curve["bandwidth"]
        g = np.exp(-0.5 * ((grid[:, None] - pop["x"][None, :]) / h) ** 2)
        target = g @ smooth / g.sum(axis=1)
        covered += int(np.sum(np.abs(np.asarray(curve["lcb"]) - target)
                              <= 1.959964 * np.asarray(curve["se"])))
        points += grid.size
    return (f"{case:<14} curve band coverage {covered / points:.3f} over "
            f"{CURVE_REPLICATES} samples x {points // CURVE_REPLICATES} grid points")


def main() -> None:
    rng = np.random.default_rng(20261128)
    pop = population(rng)
    truth, _ = estimate(pop["p"], pop["x"], pop["truth"] - pop["p"], np.ones(UNITS),
                        pop["eval_p"], pop["eval_x"])
    print(f"weighted LCB, 95 % pointwise intervals: coverage of the population's smoothed "
          f"bias over {REPLICATES} replicates (target from {truth.min():+.3f} to "
          f"{truth.max():+.3f})")
    for case in ("design", "negatives 0.2", "frequency"):
        started = time.perf_counter()
        print(run(pop, case, rng, truth) + f"  ({time.perf_counter() - started:.0f} s)",
              flush=True)
    for case in ("design", "negatives 0.2", "frequency"):
        started = time.perf_counter()
        print(curve_coverage(pop, case, rng) + f"  ({time.perf_counter() - started:.0f} s)",
              flush=True)


if __name__ == "__main__":
    main()
