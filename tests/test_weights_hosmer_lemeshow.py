"""Hosmer-Lemeshow on weighted rows: frequency weights against the repeated rows, the
weighted statistic against a loop over groups and rows, its Monte-Carlo null, and a
weighted audit whose status agrees in the terminal, JSON, JUnit and reports."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from calaudit.data.weights import SampleWeights
from calaudit.inference.classical import hosmer_lemeshow, hosmer_lemeshow_test
from calaudit.results import Status
from tests.cli_inprocess import run_cli


def binary(n: int, seed: int, rate: float = 1.0, shift: float = 0.0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.9, n)
    truth = np.clip(p + shift, 0.0, 1.0)
    y = (rng.random(n) < truth / (truth + rate * (1.0 - truth))).astype(np.int64)
    return y, p, rng


def test_frequency_weights_give_the_repeated_rows_test() -> None:
    y, p, rng = binary(800, 1)
    w = rng.integers(0, 4, y.size)
    repeat = np.repeat(np.arange(y.size), w)
    mine = hosmer_lemeshow(y, p, 10, SampleWeights(w.astype(float), "frequency"))
    theirs = hosmer_lemeshow(y[repeat], p[repeat], 10)
    assert mine.params.pop("weights") == "frequency"
    assert mine.params == theirs.params and mine.status == theirs.status
    assert mine.statistic == pytest.approx(theirs.statistic, rel=1e-12)
    assert mine.p_value == pytest.approx(theirs.p_value, rel=1e-12)
    groups, repeated = (hosmer_lemeshow_test(y, p, 10, w.astype(float)),
                        hosmer_lemeshow_test(y[repeat], p[repeat], 10))
    assert groups.df == repeated.df
    assert np.array_equal(groups.observed, repeated.observed)  # whole numbers: exact
    assert groups.expected == pytest.approx(repeated.expected, rel=1e-12)


def weighted_loop(y, p, d, r, groups, frequency):
    """The weighted statistic row by row: breaks at the smallest p whose cumulative
    weight d reaches k / g, then per group O - E and the null variance."""
    order = sorted((p[i], d[i]) for i in range(p.size) if d[i] > 0)
    total = sum(w for _, w in order)
    breaks = []
    for k in range(groups + 1):
        running = 0.0
        for value, w in order:
            running += w
            if running >= k / groups * total:
                breaks.append(value)
                break
    breaks = sorted(set([order[0][0]] + breaks[1:]))
    inner = breaks[1:-1]
    residual, variance = [0.0] * (len(breaks) - 1), [0.0] * (len(breaks) - 1)
    for i in range(p.size):
        g = sum(1 for b in inner if p[i] > b)
        weight = d[i] if y[i] == 1 else d[i] / r[i]
        q = p[i] / (p[i] + r[i] * (1.0 - p[i]))
        a = d[i] if frequency else d[i] * d[i]
        residual[g] += weight * (y[i] - p[i])
        variance[g] += a * (q * (1 - p[i]) ** 2 + (1 - q) * p[i] ** 2 / r[i] ** 2)
    return sum(e * e / v for e, v in zip(residual, variance, strict=True) if v > 0)


@pytest.mark.parametrize(("kind", "rate"), [("design", None), ("design", 0.2),
                                            ("frequency", 0.3)])
def test_weighted_statistic_matches_a_loop_over_rows(kind, rate) -> None:
    y, p, rng = binary(300, 2, rate or 1.0)
    d = rng.uniform(0.2, 3.0, y.size) if kind == "design" else rng.integers(0, 4, y.size) * 1.0
    d[:5] = 0.0
    r = np.full(y.size, rate or 1.0)
    weights = SampleWeights(d, kind, None if rate is None else r)
    result = hosmer_lemeshow(y, p, 8, weights, 199, np.random.default_rng(0))
    assert result.statistic == pytest.approx(
        weighted_loop(y, p, d, r, 8, kind == "frequency"), rel=1e-10)
    assert result.params["groups"] == 8 and result.n_resamples == 199
    assert 0.0 < result.p_value <= 1.0 and len(result.null_distribution) == 199
    again = hosmer_lemeshow(y, p, 8, weights, 199, np.random.default_rng(0))
    assert again.p_value == result.p_value  # one seed, one answer


def test_weighted_test_rejects_a_miscalibrated_model_and_keeps_a_calibrated_one() -> None:
    rates = np.full(3000, 0.1)
    y, p, _ = binary(3000, 3, 0.1)  # negatives kept at 10 %, calibrated population
    weights = SampleWeights(np.ones(y.size), "frequency", rates)
    calibrated = hosmer_lemeshow(y, p, 10, weights, 199, np.random.default_rng(1))
    unweighted = hosmer_lemeshow(y, p, 10)
    assert calibrated.p_value > 0.01 and unweighted.p_value < 1e-6
    y, p, _ = binary(3000, 4, 0.1, shift=0.08)
    shifted = hosmer_lemeshow(y, p, 10, weights, 199, np.random.default_rng(1))
    assert shifted.p_value == pytest.approx(1 / 200)


def test_too_few_resamples_are_inconclusive() -> None:
    y, p, rng = binary(300, 5)
    result = hosmer_lemeshow(y, p, 10, SampleWeights(rng.uniform(0.5, 2.0, y.size), "design"),
                             9, np.random.default_rng(0))
    assert result.status == Status.INCONCLUSIVE and "resamples" in result.message


@pytest.mark.slow
def test_weighted_audit_reports_one_status_everywhere(tmp_path) -> None:
    y, p, rng = binary(400, 6)
    frame = pd.DataFrame({"prob": p, "label": y, "w": rng.uniform(0.5, 3.0, y.size)})
    frame.to_csv(tmp_path / "preds.csv", index=False)
    out = run_cli("test", tmp_path / "preds.csv", "--label-col", "label", "--prob-cols",
                  "prob", "--weight-col", "w", "--weight-kind", "design",
                  "--hosmer-lemeshow", "--n-resamples", "99", "--json", tmp_path / "r.json",
                  "--junit", tmp_path / "r.xml", "--md", tmp_path / "r.md",
                  "--html", tmp_path / "r.html")
    assert out.code in (0, 1), out.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    (test,) = [t for t in result["tests"] if t["id"] == "hosmer_lemeshow"]
    assert test["status"] in ("PASS", "FAIL") and test["params"]["weights"] == "design"
    assert "hosmer_lemeshow" not in json.dumps(result["data"]["weights"])
    status = test["status"]
    junit = (tmp_path / "r.xml").read_text()
    case = re.search(r'<testcase[^>]*name="[^"]*hosmer_lemeshow[^"]*"[^>]*?(/>|>.*?</testcase>)',
                     junit, re.S)
    assert case is not None and (("<failure" in case.group(0)) == (status == "FAIL"))
    terminal = out.stdout.replace("│", "|")
    line = next(x for x in terminal.splitlines() if x.startswith("hosmer_lemeshow"))
    assert line.split("|")[-1].strip() == status
    markdown = (tmp_path / "r.md").read_text().replace("\\_", "_")
    assert f"| hosmer_lemeshow | global | {test['statistic']:.4g} |" in markdown
    assert any(x.startswith("| hosmer_lemeshow | global") and x.endswith(f"| {status} |")
               for x in markdown.splitlines())
    html = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", (tmp_path / "r.html").read_text()))
    assert re.search(rf"hosmer_lemeshow global {test['statistic']:.4g} [^A-Z]* {status}", html)
