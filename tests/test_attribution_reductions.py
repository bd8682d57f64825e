"""The attribution's fits in lockstep (one pass over the rows per Newton round for every
model) and its standardised biases from one pass give the bytes of the former code: one
reduction per fit step and per level (a copy of it below)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from calaudit import scale
from calaudit.attribution import irls
from calaudit.attribution.design import build_terms
from calaudit.attribution.irls import fit_many, glm_partial, mean_partial, model_rows
from calaudit.attribution.model import (
    ModelRows,
    covariate_tests,
    drop,
    fit_glms,
    logit_offset,
    standardised_biases,
)
from calaudit.local.groups import Levels
from calaudit.scale import SerialExecutor, ThreadExecutor, task_ranges

TASK = 4096


def _former_fit(y, offset, cell, design):
    """The former ``fit_logistic``: one reduction of ``glm_partial`` per Newton step."""
    rows = model_rows(y, offset, cell)

    def sums(b):
        out = SerialExecutor().map_sum(glm_partial, task_ranges(y.size, TASK),
                                       {"rows": rows, "cell_eta": design @ b})
        return {"hessian": design.T @ (design * out["weight"][:, None]),
                "score": design.T @ out["residual"], "deviance": out["deviance"][0]}

    beta = np.zeros(design.shape[1])
    current = sums(beta)
    for _ in range(irls.MAX_ITER):
        step = np.linalg.solve(current["hessian"], current["score"])
        for _ in range(irls.MAX_HALVINGS):
            trial = sums(beta + step)
            if trial["deviance"] <= current["deviance"] * (1.0 + 1e-12):
                break
            step = step / 2.0
        beta, current = beta + step, trial
        if np.max(np.abs(step)) <= irls.STEP_TOL * (1.0 + np.max(np.abs(beta))):
            return float(current["deviance"]), beta, np.linalg.inv(current["hessian"])
    raise FloatingPointError


def _former_bias(full, terms, data, name, level, z):
    """The former ``standardised_bias``: one reduction per level."""
    design = data.cells.design(terms, (name, level))
    rows = model_rows(None, data.offset, data.cells.cell)
    sums = SerialExecutor().map_sum(mean_partial, task_ranges(data.y.size, TASK),
                                    {"rows": rows, "cell_eta": design @ full.params})
    bias = float(sums["total"].sum() / data.y.size - data.mean_prediction)
    grad = sums["slope"] @ design / data.y.size
    se = float(np.sqrt(max(grad @ full.cov @ grad, 0.0)))
    return bias, bias - z * se, bias + z * se


@pytest.fixture(scope="module")
def model() -> tuple[ModelRows, list]:
    rng = np.random.default_rng(14)
    n = 5 * TASK + 123
    age = rng.integers(0, 4, n)
    region = rng.integers(0, 3, n)
    p = special.expit(rng.normal(-0.5, 1.0, n))
    y = (rng.uniform(size=n) < np.clip(p + 0.05 * (region == 1), 0, 1)).astype(float)
    levels = [Levels("age", age.astype(np.int32), ("a", "b", "c", "d")),
              Levels("region", region.astype(np.int32), ("n", "s", "e"))]
    terms, rows = build_terms(levels, ["numeric", "categorical"], y, 30, 5)
    return ModelRows.build(y, logit_offset(p), p, terms, rows), terms


@pytest.fixture(autouse=True)
def small_tasks(monkeypatch):
    monkeypatch.setattr(irls, "PART_ROWS", TASK)  # several ranges at this size


def _models(terms):
    out = [list(terms), []]
    for term in terms:
        out += [drop(terms, term.name), [term]]
    return out


@pytest.mark.parametrize("executor", [SerialExecutor(), ThreadExecutor(1), ThreadExecutor(3)])
def test_fits_in_lockstep_give_the_former_bytes(model, executor):
    data, terms = model
    designs = [data.cells.design(t) for t in _models(terms)]
    with scale.using(executor):
        fits = fit_many(data.y.size, designs,
                        model_rows(data.y, data.offset, data.cells.cell))
    for fit, design in zip(fits, designs, strict=True):
        deviance, params, cov = _former_fit(data.y, data.offset, data.cells.cell, design)
        assert fit.deviance == deviance
        assert fit.params.tobytes() == params.tobytes()
        assert fit.cov.tobytes() == cov.tobytes()


def test_fits_in_lockstep_read_the_rows_once_per_round(model, monkeypatch):
    """6 models cost as many passes as the slowest one, not the sum of their steps."""
    data, terms = model
    calls = []
    monkeypatch.setattr(irls, "glm_partial", lambda *a, **k: calls.append(a[0]) or
                        glm_partial(*a, **k))
    fit_glms(data, _models(terms))
    rounds = len(calls) // len(task_ranges(data.y.size, TASK))
    assert 3 <= rounds <= 12


def test_a_failing_model_raises_its_error_and_the_others_still_fit(model):
    data, terms = model
    designs = [data.cells.design(terms), np.zeros((data.cells.codes.shape[0], 1))]
    fits = fit_many(data.y.size, designs, model_rows(data.y, data.offset, data.cells.cell))
    assert isinstance(fits[1], np.linalg.LinAlgError)
    assert fits[0].params.tobytes() == _former_fit(data.y, data.offset, data.cells.cell,
                                                   designs[0])[1].tobytes()


def test_standardised_biases_in_one_pass_give_the_former_bytes(model):
    data, terms = model
    full, _ = covariate_tests(data, terms)
    wanted = [(t.name, code) for t in terms for code in t.used]
    got = standardised_biases(full, terms, data, wanted, 1.96)
    want = [_former_bias(full, terms, data, name, code, 1.96) for name, code in wanted]
    assert np.array(got).tobytes() == np.array(want).tobytes()



@pytest.mark.parametrize("n", [0, 1, 5000])
def test_cells_ranked_by_counts_are_np_uniques(n, monkeypatch):
    """Cells numbered by a count of each key (no sort of the rows) are the integers
    ``np.unique(..., return_inverse=True)`` gives (the former code)."""
    from calaudit.attribution import design
    from calaudit.attribution.design import Cells, Term

    rng = np.random.default_rng(n)
    terms = [Term(name, tuple("abcdefg"[:k]), rng.integers(0, k, n), 0, tuple(range(k)),
                  "categorical") for name, k in (("a", 3), ("b", 7), ("c", 2))]
    rows = np.sort(rng.choice(n, n // 2, replace=False)) if n else np.arange(0)
    got = Cells.build(terms, rows)
    monkeypatch.setattr(design, "COUNT_KEYS", 0)  # the sort of the former code
    want = Cells.build(terms, rows)
    assert got.cell.tobytes() == want.cell.tobytes()
    assert got.codes.tobytes() == want.codes.tobytes()
