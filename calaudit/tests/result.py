"""The result object of the public test functions and what they share: validated data
from arrays (as files), the seed, and for the local tests the local stage run with only
that test enabled (:func:`run_stage_test`), on the stage's random stream as ``run_audit``
and the command line do."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calaudit.audit.config import AuditConfig
from calaudit.audit.stages import Stage
from calaudit.data.dataset import CalibrationData
from calaudit.numerics.random import one_seed, stream
from calaudit.results import TestResult, lookup


@dataclass(frozen=True)
class CalibrationTestResult:
    """One test of "the model is calibrated", shaped like scipy's result objects.

    ``statistic`` and ``pvalue`` (raw, not adjusted for multiplicity; NaN when the test
    could not decide, ``message`` says why), ``null_distribution`` (the resampled statistics
    of resampling tests, else ``None``), ``method`` (how the p-value is computed), the
    calibration-error ``estimate`` behind the statistic, the test's id in the audit
    (``test_id``), ``n_resamples`` and every setting that determines the numbers
    (``params``). Unpacks as ``statistic, pvalue = result``, as scipy's results do.
    """

    __test__ = False  # not a pytest test class

    statistic: float
    pvalue: float
    method: str
    null_distribution: np.ndarray | None = None
    estimate: float = math.nan
    test_id: str = ""
    n_resamples: int | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    message: str = ""

    @property
    def p_value(self) -> float:
        """Alias of ``pvalue`` (the audit result's spelling)."""
        return self.pvalue

    def __iter__(self) -> Iterator[float]:
        return iter((self.statistic, self.pvalue))

    def __repr__(self) -> str:
        null = ("None" if self.null_distribution is None
                else f"<{self.null_distribution.size} resampled statistics>")
        note = f", message={self.message!r}" if self.message else ""
        return (f"CalibrationTestResult(test_id={self.test_id!r}, statistic={self.statistic:.6g}, "
                f"pvalue={self.pvalue:.6g}, null_distribution={null}{note})")

    @classmethod
    def from_test(cls, test: TestResult) -> CalibrationTestResult:
        null = test.null_distribution
        return cls(statistic=float(test.statistic), pvalue=float(test.p_value),
                   method=test.method,
                   null_distribution=None if null is None else np.asarray(null),
                   estimate=float(test.estimate), test_id=test.id,
                   n_resamples=test.n_resamples, params=dict(test.params),
                   message=test.message)


def seed_of(random_state: int | None, rng: int | None) -> int:
    """The integer seed (``random_state``, or its alias ``rng``; default 0)."""
    seed = one_seed(0, random_state=random_state, rng=rng)
    if isinstance(seed, np.random.Generator) or not isinstance(seed, (int, np.integer)):
        raise TypeError("random_state must be a non-negative integer (the audit's seed), "
                        f"not {type(seed).__name__}")
    return int(seed)


def as_data(y_true, y_proba, covariates=None) -> CalibrationData:
    """Validated data from arrays (``y_proba`` (n,) for binary models, or (n, m))."""
    return CalibrationData.from_arrays(y_true, y_proba, covariates=covariates)


def run_stage_test(stage: Stage, test_id: str, data: CalibrationData,
                   config: AuditConfig) -> CalibrationTestResult:
    """Run ``stage`` as the audit does and return its test ``test_id``."""
    output = stage.run(data, config, stream(config.seed, stage.name))
    return CalibrationTestResult.from_test(lookup(output.tests, test_id, "test"))
