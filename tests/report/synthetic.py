"""Synthetic JSON results that fill every section of ``docs/result-schema.md``.

The producers of ``local``, ``groups`` and resampling tests live on other branches, so
the report is tested against these hand-built results: global and local tests with null
distributions, ``local.klce`` (with ``per_class`` for multi-class), ``local.lcb`` with
curves, points and top groups, groups with INCONCLUSIVE rows, and multi-class
``reliability_per_class``. Names of columns, classes and groups are hostile on purpose
(HTML, ``|``, newlines, ``$``, brackets). Deterministic: fixed seeds, rounded values.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

SCRIPT = "<script>alert(1)</script>"
PIPE_NAME = "B|pipe\nnewline"
MATH_NAME = "$x$ [link](http://e.x) *star*"


def _r(values: Any, digits: int = 6) -> Any:
    return np.round(np.asarray(values, dtype=float), digits).tolist()


def _bins(rng: np.random.Generator, n_bins: int, n: int, bias: float = 0.0,
          low: float = 0.0, high: float = 1.0) -> dict[str, Any]:
    edges = np.linspace(low, high, n_bins + 1)
    count = rng.multinomial(n, np.full(n_bins, 1 / n_bins)) + 1
    mean = (edges[:-1] + edges[1:]) / 2
    rate = np.clip(mean + bias + rng.normal(0, 0.03, n_bins), 0, 1)
    half = 1.96 * np.sqrt(rate * (1 - rate) / count + 0.25 / count**2)
    return {"lower": _r(edges[:-1]), "upper": _r(edges[1:]), "count": count.tolist(),
            "mean_score": _r(mean), "observed_rate": _r(rate),
            "rate_low": _r(np.clip(rate - half, 0, 1)),
            "rate_high": _r(np.clip(rate + half, 0, 1))}


def _band(bins: dict[str, Any], n_resamples: int = 200) -> dict[str, Any]:
    mean, count = np.array(bins["mean_score"]), np.array(bins["count"])
    half = 1.96 * np.sqrt(mean * (1 - mean) / count)
    return {"level": 0.95, "n_resamples": n_resamples, "low": _r(np.clip(mean - half, 0, 1)),
            "high": _r(np.clip(mean + half, 0, 1))}


def _test(test_id: str, title: str, statistic: float | None, p: float | None,
          p_adj: float | None, status: str, method: str, null: list[float] | None = None,
          n_resamples: int | None = None, message: str = "", **params: Any) -> dict[str, Any]:
    return {"id": test_id, "title": title, "statistic": statistic, "estimate": statistic,
            "p_value": p, "alpha": 0.05, "p_value_adjusted": p_adj, "status": status,
            "method": method, "n_resamples": n_resamples, "params": params,
            "message": message, "null_distribution": null}


def _group(name: str, covariates: dict[str, str], n: int, events: int, mean_pred: float,
           status: str, p: float | None, p_adj: float | None, kind: str = "single",
           message: str = "") -> dict[str, Any]:
    rate = events / n
    bias = rate - mean_pred
    half = 1.96 * np.sqrt(max(rate * (1 - rate), 0.01) / n)
    return {"group": name, "kind": kind, "covariates": covariates, "n": n, "events": events,
            "mean_prediction": round(mean_pred, 6), "observed_rate": round(rate, 6),
            "bias": round(bias, 6), "bias_ci": [round(bias - half, 6), round(bias + half, 6)],
            "mean_lcb": round(0.8 * bias, 6), "test": "binomial (two-sided)",
            "p_value": p, "p_value_adjusted": p_adj, "status": status, "message": message}


def _lcb(rng: np.random.Generator, groups: list[str], shift: dict[str, float],
         n_points: int = 2000) -> dict[str, Any]:
    age = rng.uniform(21, 75, n_points).round(1)
    labels = [groups[i] for i in rng.integers(0, len(groups), n_points)]
    lcb = np.array([shift[g] for g in labels]) * (1 + 0.01 * (age - 45)) \
        + rng.normal(0, 0.02, n_points)
    curves = []
    for g in groups:
        x = np.linspace(21, 75, 25)
        fit = shift[g] * (1 + 0.01 * (x - 45))
        curves.append({"group": g, "x": _r(x), "lcb": _r(fit), "low": _r(fit - 0.015),
                       "high": _r(fit + 0.015)})
    return {
        "summary": {"mean": round(float(lcb.mean()), 6),
                    "mean_abs": round(float(np.abs(lcb).mean()), 6),
                    "sd": round(float(lcb.std()), 6), "min": round(float(lcb.min()), 6),
                    "max": round(float(lcb.max()), 6),
                    "quantiles": {q: round(float(np.quantile(lcb, float(q))), 6)
                                  for q in ("0.05", "0.25", "0.5", "0.75", "0.95")}},
        "curves": [{"covariate": "age", "group_by": "race", "groups": curves},
                   {"covariate": "age", "group_by": None,
                    "groups": [{"group": "all rows", "x": curves[0]["x"],
                                "lcb": _r(np.zeros(25)), "low": None, "high": None}]}],
        "points": {"covariate_values": {"age": age.tolist()}, "group": {"race": labels},
                   "lcb": _r(lcb)},
    }


def _environment() -> dict[str, Any]:
    return {"python": "3.11.7", "numpy": "2.4.6", "scipy": "1.17.1",
            "platform": "Linux-x86_64", "blas": [
                {"user_api": "blas", "internal_api": "openblas", "version": "0.3.29",
                 "num_threads": 2, "threading_layer": "pthreads", "architecture": "Haswell"}]}


def _config() -> dict[str, Any]:
    return {"alpha": 0.05, "seed": 7, "n_resamples": 200, "multiple_testing": "holm",
            "fail_on": ["FAIL", "ERROR"], "run_tests": True,
            "binning": {"n_bins": 10, "strategy": "uniform"},
            "skce": {"kernel": "exponential_tv", "bandwidth": None},
            "local": {"n_resamples": 100, "prob_bandwidth": None, "cov_bandwidth": None}}


def binary_result() -> dict[str, Any]:
    """A binary audit that fails locally: every section filled."""
    rng = np.random.default_rng(20261121)
    races = ["A", PIPE_NAME, SCRIPT]
    null_skce = _r(rng.normal(0, 4e-5, 200), 9)
    null_klce = _r(rng.normal(0, 2e-4, 200), 9)
    bins = _bins(rng, 10, 1180)
    tests = [
        _test("skce_consistency", "SKCE consistency test", 2.1e-05, 0.3035, 0.6070, "PASS",
              "labels resampled from the predictions", null_skce, 200,
              kernel="exponential_tv", bandwidth=0.2113),
        _test("skce_ul_asymptotic", "SKCE linear asymptotic test", 1.3e-05, 0.412, 0.6070,
              "PASS", "normal approximation", kernel="exponential_tv"),
        _test("klce_consistency", "KLCE consistency test (age, race)", 0.00092, 0.004975,
              0.019900, "FAIL", "labels resampled from the predictions", null_klce, 200),
        _test("klce_bootstrap", f"KLCE bootstrap {SCRIPT}", 0.00092, 0.004975, 0.019900,
              "FAIL", "residual bootstrap (Algorithm 1)", null_klce[::-1], 200),
        _test("klce_permutation", "KLCE permutation test", None, None, None,
              "INCONCLUSIVE", "permutation null, centred",
              message="only 12 events in the smallest group; at least 20 needed"),
    ]
    groups = [
        _group("race=A", {"race": "A"}, 472, 111, 0.18, "FAIL", 1e-4, 8e-4),
        _group(f"race={PIPE_NAME}", {"race": PIPE_NAME}, 470, 58, 0.175, "FAIL", 0.002, 0.012),
        _group(f"race={SCRIPT}", {"race": SCRIPT}, 238, 40, 0.177, "PASS", 0.71, 1.0),
        _group("age=(20, 38]", {"age": "(20, 38]"}, 390, 88, 0.22, "PASS", 0.45, 1.0),
        _group("age=(38, 56]", {"age": "(38, 56]"}, 395, 64, 0.17, "PASS", 0.61, 1.0),
        _group("age=(56, 75]", {"age": "(56, 75]"}, 395, 57, 0.15, "PASS", 0.52, 1.0),
        _group(f"race={SCRIPT} & age=(56, 75]", {"race": SCRIPT, "age": "(56, 75]"}, 31, 3,
               0.14, "INCONCLUSIVE", None, None, "intersection",
               "only 3 events; at least 10 needed"),
        _group(f"race=A & age={MATH_NAME}", {"race": "A", "age": MATH_NAME}, 12, 4, 0.2,
               "INCONCLUSIVE", None, None, "intersection", "only 12 rows"),
    ]
    lcb = _lcb(rng, races, {"A": 0.05, PIPE_NAME: -0.05, SCRIPT: 0.0})
    lcb["top_groups"] = [groups[0], groups[1], groups[6]]
    return {
        "schema_version": 1, "calaudit_version": "0.1.0",
        "created_at": "2026-01-02T03:04:05Z",
        "inputs": {"path": f"data/{SCRIPT}|credit.csv", "sha256": "ab" * 32,
                   "format": "csv", "rows_read": 1200, "rows_used": 1180,
                   "rows_excluded": {"probability outside [0, 1]": 15,
                                     f"label not among classes {SCRIPT}": 5},
                   "rows_renormalized": 0,
                   "files": [{"role": "predictions", "path": f"data/{SCRIPT}|credit.csv",
                              "format": "csv", "sha256": "ab" * 32, "rows": 1200},
                             {"role": "labels", "path": "data/labels.csv", "format": "csv",
                              "sha256": "cd" * 32, "rows": 1200}],
                   "columns": {"label": f"y|{SCRIPT}", "scores": [f"p_{SCRIPT}"],
                               "score_kind": "probability", "id": "id"}},
        "data": {"n": 1180, "n_classes": 2, "classes": ["no default", SCRIPT],
                 "class_counts": {"no default": 974, SCRIPT: 206},
                 "covariates": [{"name": "age", "type": "numeric"},
                                {"name": f"race {SCRIPT}", "type": "categorical",
                                 "categories": races}]},
        "config": _config(),
        "metrics": [
            {"id": "ece", "title": "Expected calibration error (binary)", "value": 0.0123,
             "ci": [0.008, 0.021], "params": {"notion": "binary", "n_bins": 10}},
            {"id": "brier", "title": "Brier score (summed over classes)", "value": 0.2689,
             "ci": None, "params": {"definition": "mean squared error"}},
            {"id": "skce_uq", "title": "SKCE (unbiased quadratic)", "value": 2.1e-05,
             "ci": None, "params": {"kernel": "exponential_tv", "bandwidth": 0.2113}},
            {"id": "klce2", "title": "KLCE squared (age, race)", "value": 0.00092,
             "ci": None, "params": {"covariates": ["age", "race"]}},
            {"id": "tce2", "title": "TCE squared (KKR)", "value": 0.0031, "ci": [0.001, 0.006],
             "params": {"estimator": "kkr"}, "status": "WARN", "threshold": 0.003},
        ],
        "tests": tests,
        "local": {
            "klce": {
                "covariates": ["age", f"race {SCRIPT}"],
                "encoding": {"age": {"type": "numeric", "mean": 47.9, "sd": 15.6},
                             f"race {SCRIPT}": {"type": "categorical", "categories": races,
                                                "scale": 0.7071}},
                "prob_kernel": {"type": "gaussian", "bandwidth": 0.083, "gamma": 72.6,
                                "source": "median"},
                "cov_kernel": {"type": "gaussian", "bandwidth": 1.21, "gamma": 0.34,
                               "source": "option"},
                "statistic": 0.00092,
                "tests": ["klce_consistency", "klce_bootstrap", "klce_permutation"],
                "hoeffding": {"alpha": 0.05, "threshold": 0.0113, "reject": False,
                              "bound": 0.0113},
            },
            "lcb": lcb,
        },
        "groups": groups,
        "diagrams": {"reliability": {"notion": "binary", "n_bins": 10, "binning": "uniform",
                                     "bins": bins, "consistency_band": _band(bins),
                                     "histogram": {"edges": _r(np.linspace(0, 1, 21)),
                                                   "counts": rng.integers(0, 120, 20).tolist()}}},
        "verdict": "FAIL",
        "environment": _environment(),
        "runtime_seconds": 1.234,
    }


def multiclass_result() -> dict[str, Any]:
    """A 4-class audit with top-label and per-class diagrams and per-class KLCE."""
    rng = np.random.default_rng(7)
    classes = ["cat", SCRIPT, PIPE_NAME, MATH_NAME]
    result = binary_result()
    bins = _bins(rng, 10, 800, bias=-0.05, low=0.0)
    per_class = []
    for name in classes:
        b = _bins(rng, 10, 800)
        per_class.append({"class": name, "bins": b, "consistency_band": _band(b)})
    result["data"] = {"n": 800, "n_classes": 4, "classes": classes,
                      "class_counts": dict(zip(classes, [300, 200, 200, 100], strict=True)),
                      "covariates": [{"name": "age", "type": "numeric"},
                                     {"name": "race", "type": "categorical",
                                      "categories": ["A", "B"]}]}
    result["inputs"]["columns"] = {"label": "label", "scores": [f"p_{c}" for c in classes],
                                   "score_kind": "probability", "id": None}
    result["diagrams"] = {
        "reliability": {"notion": "top-label", "n_bins": 10, "binning": "uniform",
                        "bins": bins, "consistency_band": _band(bins),
                        "histogram": {"edges": _r(np.linspace(0, 1, 21)),
                                      "counts": rng.integers(0, 80, 20).tolist()}},
        "reliability_per_class": per_class,
    }
    result["local"] = copy.deepcopy(result["local"])
    result["local"]["klce"]["per_class"] = [
        {"class": c, "statistic": round(0.0002 * (i + 1), 6), "p_value": [0.5, 0.01, 0.2,
                                                                         0.0004][i]}
        for i, c in enumerate(classes)]
    result["metrics"][0] = {"id": "ece", "title": "Expected calibration error (top-label)",
                            "value": 0.0612, "ci": None, "params": {"notion": "top-label"}}
    return result


def minimal_result() -> dict[str, Any]:
    """The smallest valid result: no tests, no covariates, no diagrams."""
    return {"schema_version": 1, "calaudit_version": "0.1.0",
            "created_at": "2026-01-02T03:04:05Z",
            "inputs": {"path": None, "sha256": None, "format": "arrays", "rows_read": 10,
                       "rows_used": 10, "rows_excluded": {}, "rows_renormalized": 0,
                       "files": [], "columns": {}},
            "data": {"n": 10, "n_classes": 2, "classes": ["0", "1"],
                     "class_counts": {"0": 6, "1": 4}, "covariates": []},
            "config": {"alpha": 0.05, "seed": 0, "fail_on": ["FAIL", "ERROR"]},
            "metrics": [{"id": "ece", "title": "ECE", "value": 0.1, "ci": None,
                         "params": {}}],
            "tests": [], "local": {}, "groups": [], "diagrams": {},
            "verdict": "PASS", "environment": {}, "runtime_seconds": 0.01}
