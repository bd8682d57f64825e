"""What a weighted audit computes, refuses and leaves out (docs/weights.md): a check asked
for by name without a weighted version stops the audit (:func:`refuse`); a default test
without one is ``SKIPPED``; an ungated diagnostic is listed in
``data.weights.not_weighted``."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.audit.config import AuditConfig
from calaudit.audit.sections.global_tests import DEFAULT_GLOBAL_TESTS
from calaudit.data.dataset import CalibrationData
from calaudit.data.weights import kish, summary
from calaudit.exceptions import ConfigError
from calaudit.local.weighted_local import WEIGHTED_LOCAL_TESTS

#: Global tests with a weighted version (:mod:`calaudit.inference.weighted_tests`,
#: :mod:`calaudit.inference.weighted_skce_test`).
WEIGHTED_TESTS = ("ece_consistency", "spiegelhalter", "skce_consistency", "hosmer_lemeshow")


def refuse(data: CalibrationData, config: AuditConfig) -> None:
    """Stop a weighted audit that asks for a check with no weighted version (a local test
    other than :data:`WEIGHTED_LOCAL_TESTS`, which run on the exact kernel or on random
    features by the ``method`` rule)."""
    if data.weights is None:
        return
    hint = "drop the weights (--weight-col, --negative-rate, --sampling-rate-col) to run it"
    if data.covariates and config.run_tests:
        only(config.local.tests, WEIGHTED_LOCAL_TESTS, "local test(s)", hint)
    if config.monitoring.enabled:
        raise ConfigError("calibration over time (--time-col, --window, --batch-col) is not "
                          "available on weighted rows: its e-process bets on unweighted rows",
                          hint=hint)
    if config.binning.strategy != "uniform":
        raise ConfigError("quantile bins are not available on weighted rows: their edges "
                          "would ignore the weights", hint="use --binning uniform")
    asked = tuple(config.global_tests.tests)
    if config.run_tests and asked != DEFAULT_GLOBAL_TESTS:
        only(asked, WEIGHTED_TESTS, "test(s)", hint)


def only(asked: Any, weighted: tuple[str, ...], what: str, hint: str) -> None:
    """Stop when a test ``asked`` for is not one of the ``weighted`` ones."""
    unweighted = [t for t in asked if t not in weighted]
    if unweighted:
        raise ConfigError(f"{what} {', '.join(unweighted)} have no weighted version",
                          hint="run only " + ", ".join(weighted) + " on weighted rows, or "
                          + hint)


def debiased_defined(data: CalibrationData) -> bool:
    """``ece_debiased`` subtracts ``acc (1 - acc) / (n_b - 1)``: defined for frequency
    weights (``n_b`` the bin's weight), not for design or sampling weights."""
    weights = data.weights
    return weights is None or weights.repeated_rows


def left_out(data: CalibrationData, config: AuditConfig) -> list[dict[str, str]]:
    """The diagnostics and estimates left out of a weighted audit, with the reason."""
    out = [{"id": "skce_ul, skce_block", "reason": "they pair rows in file order; no "
                                                   "weighted version"}]
    if not debiased_defined(data):
        out.append({"id": "ece_debiased", "reason": "its bias term needs frequency weights"})
    return out


def sample_size(data: CalibrationData) -> float:
    """The sample size of asymptotic rules: ``sum w`` for frequency weights, Kish's
    effective size otherwise (``n`` unweighted)."""
    return float(data.n) if data.weights is None else size_of(data, data.sample_weight)


def size_of(data: CalibrationData, w: NDArray[np.float64]) -> float:
    """The sample size of rows of weights ``w``: ``sum w`` (frequency), else Kish's."""
    return float(w.sum()) if data.weights.kind == "frequency" else kish(w)


def information_scale(data: CalibrationData) -> float:
    """The factor that puts the weights on the scale of :func:`sample_size`."""
    w = data.sample_weight
    return 1.0 if w is None else size_of(data, w) / float(w.sum())


def effective_events(data: CalibrationData) -> float:
    """Events for the INCONCLUSIVE rule on weighted rows: per outcome class (binary: the
    two classes; multi-class: top-label hits and misses), the weight of its rows
    (frequency) or their Kish effective size; the smaller one."""
    w = data.sample_weight
    if data.is_binary:
        groups = [data.y_true == 1, data.y_true != 1]
    else:
        hit = np.argmax(data.y_proba, axis=1) == data.y_true
        groups = [hit, ~hit]
    return min(size_of(data, w[g]) for g in groups)


def describe(data: CalibrationData, config: AuditConfig) -> dict[str, Any] | None:
    """The ``data.weights`` section (None when unweighted)."""
    if data.weights is None:
        return None
    section = summary(data.weights, data.sample_weight, sample_size(data))
    section["effective_events"] = effective_events(data)
    section["not_weighted"] = left_out(data, config)
    return section
